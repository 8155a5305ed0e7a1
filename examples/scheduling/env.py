"""An in-memory team calendar (rooms, people, meetings, sessions) and its five ``@chaos`` tools.

Every tool but ``sign_in`` takes the session ``token`` that ``sign_in`` hands out (the agent's transport adds
it); a meeting that needs a room already taken is refused with HTTP 409, as a real calendar API would. People
may be double-booked (calendars allow it), so ``check_availability`` is how an agent finds out whether they are
free. Bookings are irreversible and honour an idempotency key; cancellations are irreversible.
"""

from __future__ import annotations

import copy
import re
from datetime import date as _date
from typing import Any

from chaoskit import ToolHTTPError, chaos

__all__ = ["FIRST_TOKEN", "PEOPLE", "ROOMS", "Calendar"]

#: the session token an agent starts with (as if read from its config); scenarios match on it
FIRST_TOKEN = "sess-1"
ROOMS: dict[str, int] = {"Atlas": 8, "Borealis": 4, "Cosmos": 12}  # room -> seats
PEOPLE: dict[str, str] = {
    "ana": "Ana Ruiz",
    "bo": "Bo Chen",
    "chidi": "Chidi Okafor",
    "dana": "Dana Weiss",
    "eli": "Eli Haddad",
}
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def _seed() -> dict[str, dict[str, Any]]:
    rows = [
        ("M-101", "Design review", "2026-12-08", "09:00", "10:00", ["chidi", "dana"], "Atlas"),
        ("M-102", "Budget sync", "2026-12-08", "10:00", "11:00", ["dana", "eli"], "Borealis"),
        ("M-103", "Ana / Chidi 1:1", "2026-12-08", "14:00", "14:30", ["ana", "chidi"], "Borealis"),
        ("M-104", "Vendor call", "2026-12-08", "15:00", "16:00", ["bo", "eli"], "Atlas"),
        ("M-105", "Bo / Ana 1:1", "2026-12-08", "16:30", "17:00", ["ana", "bo"], "Borealis"),
        ("M-106", "Sprint planning", "2026-12-09", "10:00", "11:30", ["ana", "bo", "chidi", "dana"], "Cosmos"),
        ("M-107", "Interviews", "2026-12-10", "09:00", "12:00", ["chidi", "eli"], "Borealis"),
    ]
    return {
        mid: {
            "meeting_id": mid,
            "title": title,
            "date": day,
            "start": start,
            "end": end,
            "attendees": attendees,
            "room": room,
            "status": "confirmed",
        }
        for mid, title, day, start, end, attendees, room in rows
    }


def _minutes(value: Any, field: str) -> int:
    m = _TIME.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"{field} must be a time written HH:MM (24-hour), got {value!r}")
    return int(m.group(1)) * 60 + int(m.group(2))


def _day(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return _date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise ValueError(f"date must be a calendar date written YYYY-MM-DD, got {value!r}")


def _span(start: Any, end: Any) -> tuple[int, int]:
    lo, hi = _minutes(start, "start"), _minutes(end, "end")
    if hi <= lo:
        raise ValueError(f"end ({end}) must be after start ({start})")
    return lo, hi


class Calendar:
    """One agent's calendar: ``meetings`` by id, the live session ``tokens``, the answers given per idempotency key."""

    def __init__(self) -> None:
        self.meetings: dict[str, dict[str, Any]] = _seed()
        self.tokens: set[str] = {FIRST_TOKEN}
        self.by_key: dict[str, dict[str, Any]] = {}
        self.sign_ins = 0

    # -- helpers the tools share ------------------------------------------------------------------------

    def _auth(self, token: str | None) -> None:
        if token not in self.tokens:
            raise ToolHTTPError(401, "HTTP 401: the session is missing or has expired; call sign_in for a new token")

    def _room(self, room: Any) -> str:
        if room not in ROOMS:
            raise LookupError(f"unknown room {room!r}; rooms: {', '.join(ROOMS)}")
        return str(room)

    def _person(self, person: Any) -> str:
        key = str(person).strip().lower()
        if key not in PEOPLE:
            key = next((k for k, name in PEOPLE.items() if name.lower() == key), "")
        if not key:
            raise LookupError(f"unknown person {person!r}; people: {', '.join(PEOPLE)}")
        return key

    def _busy(
        self, day: str, lo: int, hi: int, *, room: str | None = None, person: str | None = None
    ) -> list[dict[str, Any]]:
        """The live meetings of ``room`` or ``person`` on ``day`` that overlap [lo, hi)."""
        out = []
        for m in self.active(day):
            mine = m["room"] == room if room is not None else person in m["attendees"]
            if mine and _minutes(m["start"], "start") < hi and lo < _minutes(m["end"], "end"):
                out.append(m)
        return out

    def active(self, day: str) -> list[dict[str, Any]]:
        """The confirmed meetings of ``day``, by start time."""
        rows = [m for m in self.meetings.values() if m["date"] == day and m["status"] == "confirmed"]
        return sorted(rows, key=lambda m: (m["start"], m["meeting_id"]))

    # -- the tools --------------------------------------------------------------------------------------

    @chaos(description="Sign in to the calendar; returns a fresh session token.")
    def sign_in(self) -> dict[str, Any]:
        self.sign_ins += 1
        token = f"sess-{self.sign_ins + 1}"
        self.tokens.add(token)
        return {"token": token, "expires_in": 3600}

    @chaos(description="List the confirmed meetings of a day (YYYY-MM-DD).")
    def list_meetings(self, date: str, token: str | None = None) -> dict[str, Any]:
        self._auth(token)
        day = _day(date)
        rows = [copy.deepcopy(m) for m in self.active(day)]
        return {"date": day, "meetings": rows, "count": len(rows)}

    @chaos(description="Whether a room or a person is free on a date from start to end (HH:MM).")
    def check_availability(
        self,
        date: str,
        start: str,
        end: str,
        room: str | None = None,
        person: str | None = None,
        token: str | None = None,
    ) -> dict[str, Any]:
        self._auth(token)
        if (room is None) == (person is None):
            raise ValueError("give exactly one of room or person")
        day = _day(date)
        lo, hi = _span(start, end)
        who: dict[str, Any] = {"room": self._room(room)} if room is not None else {"person": self._person(person)}
        busy = self._busy(day, lo, hi, **who)
        return {
            "date": day,
            "start": start,
            "end": end,
            **who,
            "free": not busy,
            "busy": [{"start": m["start"], "end": m["end"]} for m in busy],
        }

    @chaos(
        irreversible=True, idempotency_arg="idempotency_key", description="Book a meeting; 409 if the room is taken."
    )
    def book_meeting(
        self,
        title: str,
        date: str,
        start: str,
        end: str,
        attendees: list[str],
        room: str | None = None,
        idempotency_key: str | None = None,
        token: str | None = None,
    ) -> dict[str, Any]:
        self._auth(token)
        if idempotency_key is not None and idempotency_key in self.by_key:
            return copy.deepcopy(self.by_key[idempotency_key])  # the same request again: the first answer
        if not isinstance(title, str) or not title.strip():
            raise ValueError("title must be a non-empty string")
        day = _day(date)
        lo, hi = _span(start, end)
        if not isinstance(attendees, list) or not attendees:
            raise ValueError("attendees must be a non-empty list of people")
        people = sorted({self._person(p) for p in attendees})
        if room is not None:
            room = self._room(room)
            if taken := self._busy(day, lo, hi, room=room):
                t = taken[0]
                raise ToolHTTPError(
                    409, f"HTTP 409 Conflict: room {room} is already booked {t['start']}-{t['end']} on {day}"
                )
        mid = f"M-{101 + len(self.meetings)}"
        meeting = {
            "meeting_id": mid,
            "title": title.strip(),
            "date": day,
            "start": start,
            "end": end,
            "attendees": people,
            "room": room,
            "status": "confirmed",
        }
        self.meetings[mid] = meeting
        if idempotency_key is not None:
            self.by_key[idempotency_key] = copy.deepcopy(meeting)
        return copy.deepcopy(meeting)

    @chaos(irreversible=True, description="Cancel a meeting by its id.")
    def cancel_meeting(self, meeting_id: str, token: str | None = None) -> dict[str, Any]:
        self._auth(token)
        meeting = self.meetings.get(meeting_id)
        if meeting is None:
            raise LookupError(f"no meeting {meeting_id!r}")
        if meeting["status"] == "cancelled":
            raise ToolHTTPError(409, f"HTTP 409 Conflict: meeting {meeting_id} is already cancelled")
        meeting["status"] = "cancelled"
        return {"meeting_id": meeting_id, "title": meeting["title"], "status": "cancelled"}
