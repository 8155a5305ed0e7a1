"""The travel domain of the example battery: search, hold and confirm flights, run as LangGraph agents.

``env.TravelEnv`` is the airline (seed flights, holds, bookings, charges), ``agents`` the five agents of known
quality, ``verify`` the end-state oracles, ``scenarios/`` the battery and ``expected.yaml`` its outcome table.
"""
