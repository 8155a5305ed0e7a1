"""End-state oracles of the scheduling scenarios: each compares the calendar before the task with the one after.

Every oracle returns ``(ok, end_state)``; ``end_state`` lists what the agent changed (meetings booked, as
(title, date, start, end, attendees, room), and meetings cancelled, by id), small and JSON-able, so the
runner can compare it across perturbations of the task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from examples.scheduling.env import Calendar

__all__ = [
    "booked_contract_review",
    "booked_hiring_plan",
    "booked_quarterly_review",
    "booked_roadmap_next_slot",
    "cancelled_budget_sync",
    "changes",
    "untouched",
]

Oracle = Callable[[Calendar, Calendar], tuple[bool, dict[str, Any]]]


def changes(initial: Calendar, final: Calendar) -> dict[str, Any]:
    """What differs between two calendars: bookings added, meetings cancelled, and any other edit (by id)."""
    booked = [
        [m["title"].casefold(), m["date"], m["start"], m["end"], sorted(m["attendees"]), m["room"]]
        for mid, m in sorted(final.meetings.items())
        if mid not in initial.meetings and m["status"] == "confirmed"
    ]
    cancelled, edited = [], []
    for mid, before in sorted(initial.meetings.items()):
        after = final.meetings.get(mid)
        if after == before:
            continue
        if after is not None and {**before, "status": "cancelled"} == after:
            cancelled.append(mid)
        else:
            edited.append(mid)  # changed otherwise, or gone: no tool should ever do that
    edited += [mid for mid, m in final.meetings.items() if mid not in initial.meetings and m["status"] != "confirmed"]
    return {"booked": sorted(booked), "cancelled": cancelled, "edited": sorted(edited)}


def _expect(booked: list[list[Any]] | None = None, cancelled: list[str] | None = None) -> dict[str, Any]:
    return {"booked": booked or [], "cancelled": cancelled or [], "edited": []}


def _oracle(name: str, doc: str, want: dict[str, Any]) -> Oracle:
    def oracle(initial: Calendar, final: Calendar) -> tuple[bool, dict[str, Any]]:
        got = changes(initial, final)
        return got == want, got

    oracle.__name__ = oracle.__qualname__ = name
    oracle.__doc__ = doc
    return oracle


def _meeting(title: str, date: str, start: str, end: str, attendees: list[str], room: str | None) -> list[Any]:
    return [title.casefold(), date, start, end, sorted(attendees), room]


untouched = _oracle("untouched", "A read-only task changed nothing on the calendar.", _expect())
booked_hiring_plan = _oracle(
    "booked_hiring_plan",
    "Exactly one 'Hiring plan' call, 2026-12-09 14:00-14:30, Bo and Dana, no room; nothing else changed.",
    _expect([_meeting("Hiring plan", "2026-12-09", "14:00", "14:30", ["bo", "dana"], None)]),
)
booked_quarterly_review = _oracle(
    "booked_quarterly_review",
    "Exactly one 'Quarterly review' in Cosmos, 2026-12-08 13:00-14:00, Ana, Chidi, Dana; nothing else changed.",
    _expect([_meeting("Quarterly review", "2026-12-08", "13:00", "14:00", ["ana", "chidi", "dana"], "Cosmos")]),
)
booked_roadmap_next_slot = _oracle(
    "booked_roadmap_next_slot",
    "Atlas was taken at 09:00: exactly one 'Roadmap check-in' in Atlas at the next free half hour (10:00-10:30), "
    "Ana and Bo; nothing else changed.",
    _expect([_meeting("Roadmap check-in", "2026-12-08", "10:00", "10:30", ["ana", "bo"], "Atlas")]),
)
booked_contract_review = _oracle(
    "booked_contract_review",
    "Exactly one 'Contract review' in Borealis, 2026-12-09 15:00-15:30, Chidi and Eli; nothing else changed.",
    _expect([_meeting("Contract review", "2026-12-09", "15:00", "15:30", ["chidi", "eli"], "Borealis")]),
)
cancelled_budget_sync = _oracle(
    "cancelled_budget_sync",
    "Only 'Budget sync' (M-102) was cancelled; nothing booked, nothing else changed.",
    _expect(cancelled=["M-102"]),
)
