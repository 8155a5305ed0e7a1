"""A LangGraph customer-support agent (``create_agent`` + a scripted chat model) with two recovery policies.

``agents.naive()`` / ``agents.careful()`` build fresh agents; ``verify.refund_once(env)`` checks the end state.
"""

from __future__ import annotations
