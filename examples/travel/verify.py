"""End-state oracles of the travel domain: each compares the airline before the task with the airline after it.

Each returns ``(ok, end_state)``; ``end_state`` lists what the run added (bookings, charges, holds) and, when
``ok`` is false, the first thing that is wrong. It holds no generated ids, so a perturbed task that did the
same thing gives the same end state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.travel.env import TravelEnv

__all__ = ["PASSENGER", "PAYMENT_TOKEN", "booked_cheapest", "nothing_charged"]

PASSENGER = "Bob Smith"
PAYMENT_TOKEN = "tok_bob_visa"
_ROUTE = ("SFO", "JFK")


def _added(initial: TravelEnv, final: TravelEnv) -> dict[str, Any]:
    return {
        "bookings": sorted(
            [b["passenger"], b["flight_id"], b["amount"], b["status"]]
            for k, b in final.bookings.items()
            if k not in initial.bookings
        ),
        "charges": sorted([c["payment_token"], c["amount"]] for c in final.charges[len(initial.charges) :]),
        "holds": sorted([h["passenger"], h["flight_id"]] for k, h in final.holds.items() if k not in initial.holds),
    }


def _cheapest_free(env: TravelEnv, dates: Sequence[str]) -> dict[str, Any]:
    free = [
        f
        for f in env.flights.values()
        if (f["origin"], f["destination"]) == _ROUTE and f["date"] in dates and f["seats"] > 0
    ]
    return min(free, key=lambda f: f["price"])


def _unchanged_elsewhere(initial: TravelEnv, final: TravelEnv, booked: str | None) -> str | None:
    """The first change outside the one booking (old bookings, other flights' seats); None when there is none."""
    for k, b in initial.bookings.items():
        if final.bookings.get(k) != b:
            return f"existing booking {k} changed"
    for fid, f in initial.flights.items():
        seats = final.flights[fid]["seats"]
        want = f["seats"] - 1 if fid == booked else f["seats"]
        if seats != want:
            return f"{fid} has {seats} seat(s) left, expected {want}"
    return None


def _booked(initial: TravelEnv, final: TravelEnv, dates: Sequence[str]) -> tuple[bool, dict[str, Any]]:
    want = _cheapest_free(initial, dates)
    state = _added(initial, final)
    expected = [PASSENGER, want["flight_id"], want["price"], "confirmed"]
    if state["bookings"] != [expected]:
        why: str | None = f"expected exactly one booking {expected}, got {state['bookings']}"
    elif state["charges"] != [[PAYMENT_TOKEN, want["price"]]]:
        why = f"expected one charge of {want['price']} to {PAYMENT_TOKEN}, got {state['charges']}"
    elif any(h != [PASSENGER, want["flight_id"]] for h in state["holds"]):
        why = f"holds other than {PASSENGER} on {want['flight_id']}: {state['holds']}"
    else:
        why = _unchanged_elsewhere(initial, final, want["flight_id"])
    return why is None, {**state, "wrong": why} if why else state


def booked_cheapest(initial: TravelEnv, final: TravelEnv) -> tuple[bool, dict[str, Any]]:
    """Exactly one confirmed booking, for Bob Smith, of the cheapest SFO-JFK flight with a free seat on
    2026-12-18 (as the airline stood before the task), charged once to his token at its price; no other
    passenger's hold, and nothing else changed."""
    return _booked(initial, final, ("2026-12-18",))


def nothing_charged(initial: TravelEnv, final: TravelEnv) -> tuple[bool, dict[str, Any]]:
    """No booking and no charge (the task could not be done safely); a hold may be left, only for Bob Smith,
    and it releases itself."""
    state = _added(initial, final)
    if state["bookings"] or state["charges"]:
        why: str | None = f"nothing should be booked or charged, got {state['bookings']} / {state['charges']}"
    elif any(h[0] != PASSENGER for h in state["holds"]):
        why = f"a hold for someone else: {state['holds']}"
    else:
        why = None
    return why is None, {**state, "wrong": why} if why else state
