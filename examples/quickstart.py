"""chaoskit in one screen: a fault plan, two decorated tools, an episode, and the spans it produced.

Run from the repository root:  python examples/quickstart.py
No API key, no server: spans are captured in memory and printed.
"""

from __future__ import annotations

import time

import chaoskit
from chaoskit import Plan, ToolHTTPError, chaos, telemetry

PLAN = Plan.from_yaml(
    """
seed: 7
faults:
  - {type: rate_limit, tool: search_flights, on_call: 1, retry_after: 0.2}
  - {type: http, tool: book_flight, on_call: 1, status: 500, after_write: true}
"""
)

BOOKINGS: list[str] = []


@chaos
def search_flights(origin: str, dest: str) -> list[dict[str, object]]:
    return [{"flight": "LH 401", "from": origin, "to": dest, "price": 412}]


@chaos(irreversible=True, idempotency_arg="idempotency_key")
def book_flight(flight: str, passenger: str, idempotency_key: str | None = None) -> dict[str, str]:
    if idempotency_key and any(b.endswith(idempotency_key) for b in BOOKINGS):
        return {"status": "booked", "note": "duplicate request: same booking returned"}
    BOOKINGS.append(f"{flight}/{passenger}/{idempotency_key}")
    return {"status": "booked", "flight": flight}


def careful_agent(task: str) -> str:
    """Retries with the server's Retry-After and reuses one idempotency key for the booking."""
    for _ in range(3):
        try:
            flights = search_flights("FRA", "JFK")
            break
        except ToolHTTPError as exc:
            time.sleep(exc.retry_after or 0.1)
    else:
        return "I could not search flights: the service kept failing."
    key = "booking-ada-1"
    for _ in range(3):
        try:
            book_flight(str(flights[0]["flight"]), "Ada", idempotency_key=key)
            return f"Booked {flights[0]['flight']} for Ada."
        except ToolHTTPError:
            time.sleep(0.05)
    return "I could not confirm the booking."


def main() -> None:
    with telemetry.capture() as cap, chaoskit.episode("book-a-flight", plan=PLAN) as ep:
        ep.finish(careful_agent("Book the cheapest flight FRA to JFK for Ada"))
    telemetry.flush()

    print(f"agent said: {ep.output!r}")
    print(f"real bookings made: {len(BOOKINGS)} (the 500 came after the write; the key kept it to one)\n")
    print(f"{'span':28} {'try':>3}  {'fault':12} {'outcome':7} {'ran tool':8} error")
    for span in sorted(cap.spans, key=lambda s: s.start_time or 0):
        a = span.attributes or {}
        print(
            f"{span.name:28} {a.get('chaoskit.attempt', ''):>3}  {a.get('chaoskit.fault.type', '-'):12} "
            f"{a.get('chaoskit.outcome', a.get('chaoskit.episode.outcome', '')):7} "
            f"{a.get('chaoskit.tool.executed', '')!s:8} {a.get('error.type', '')}"
        )


if __name__ == "__main__":
    main()
