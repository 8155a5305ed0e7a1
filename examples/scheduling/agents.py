"""The scheduling agent: one script (list, book, find a slot, cancel) under the five policies of the agent kit.

Each factory returns a fresh agent whose ``env`` is its own :class:`~examples.scheduling.env.Calendar`. The
agent reaches its tools through a :class:`Session`, which adds the session token to every call and keeps the
new one after ``sign_in``, so a careful agent that meets an expired session signs in again and goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from examples.agentkit import Direct, Failure, ScriptedAgent
from examples.scheduling.env import FIRST_TOKEN, PEOPLE, ROOMS, Calendar

__all__ = [
    "Request",
    "SchedulingAgent",
    "Session",
    "bluffer",
    "careful",
    "give_up",
    "naive",
    "obeys_injection",
    "parse",
]

_DAY_END = 18 * 60  # the last slot a search proposes ends by 18:00
_STEP = 30  # slots are searched every half hour
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_QUOTED = re.compile(r"(?<!\w)'(.+?)'(?!\w)|\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|\u2018([^\u2019]+)\u2019")
# a perturbed task may say "at 09:04 - sorry, I mean 09:00" (or "2026-12-03 - sorry, I mean 08", correcting only
# the last digits): the correction replaces the end of the wrong value
_CORRECTED_NUMBER = re.compile(
    r"(\d[\d:./-]*\d|\d)\s*[-\u2013\u2014,]\s*(?:sorry|oops)[,!.]?\s+I mean[t]?\s+(\d[\d:./-]*\d|\d)", re.I
)
_CORRECTED_WORD = re.compile(r"\b\w+\s*[-\u2013\u2014,]\s*(?:sorry|oops)[,!.]?\s+I mean[t]?\s+(\w+)", re.I)
_TIME = re.compile(r"\b(?:(1[0-2]|0?[1-9])(?::([0-5]\d))?\s*([ap])\.?m\b\.?|([01]?\d|2[0-3]):([0-5]\d))", re.I)
_WINDOW = re.compile(rf"\bbetween\s+({_TIME.pattern})\s+and\s+({_TIME.pattern})", re.I)
_RANGE = re.compile(rf"\bfrom\s+({_TIME.pattern})\s+(?:to|until|till|-)\s+({_TIME.pattern})", re.I)
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}


@dataclass
class Request:
    """What a task asks for, as the script understood it."""

    kind: str  # "list", "book" or "cancel"
    date: str
    title: str = ""
    start: int | None = None  # minutes after midnight
    minutes: int = 30
    room: str | None = None
    people: list[str] = field(default_factory=list)
    window: tuple[int, int] | None = None  # search for a free slot in [lo, hi)
    fallback: bool = False  # "if that slot is taken, take the next free one"


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _clock(text: str) -> int:
    m = _TIME.search(text)
    if m is None:  # pragma: no cover - only called on text that _TIME matched
        raise ValueError(text)
    if m.group(4) is not None:
        return int(m.group(4)) * 60 + int(m.group(5))
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0)
    return hour * 60 + int(m.group(2) or 0)


def _date(text: str) -> str:
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        return m.group(0)
    year = m.group(1) if (m := re.search(r"\b(20\d\d)\b", text)) else "2026"
    if m := re.search(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", text, re.I):
        month, day = m.group(1), m.group(2)
    elif m := re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}", text, re.I):
        day, month = m.group(1), m.group(2)
    else:
        raise Failure("understand the request", "it names no date (write it as YYYY-MM-DD)")
    return f"{year}-{_MONTHS.index(month.lower()[:3]) + 1:02d}-{int(day):02d}"


def _duration(text: str) -> int | None:
    if m := re.search(r"\b(\d+)[- ]?min(?:ute)?s?\b", text, re.I):
        return int(m.group(1))
    if re.search(r"\bhalf[- ](?:an[- ])?hour\b", text, re.I):
        return 30
    if m := re.search(r"\b(\d+|an?|one|two|three)[- ]hours?\b", text, re.I):
        word = m.group(1).lower()
        return 60 * (int(word) if word.isdigit() else _WORDS[word])
    return None


def _correct(m: re.Match[str]) -> str:
    wrong, right = m.group(1), m.group(2)
    return wrong[: max(len(wrong) - len(right), 0)] + right


def parse(task: str) -> Request:
    """The request in a task; paraphrases, reordered clauses and "X - sorry, I mean Y" are understood."""
    text = _CORRECTED_WORD.sub(r"\1", _CORRECTED_NUMBER.sub(_correct, task))
    quoted = _QUOTED.search(text)
    title = next((g for g in quoted.groups() if g), "").strip() if quoted else ""
    rest = (text[: quoted.start()] + " " + text[quoted.end() :]) if quoted else text  # names in a title are no guests
    low = rest.lower()
    if re.search(r"\b(cancel|call off|delete|remove)\b", low):
        kind = "cancel"
    elif re.search(r"\b(book(?:ing)?|schedule|set up|arrange|reserv(?:e|ation)|organi[sz]e)\b", low):
        kind = "book"
    else:
        kind = "list"
    req = Request(kind=kind, date=_date(rest), title=title)
    req.people = [p for p in PEOPLE if re.search(rf"\b{p}\b|\b{PEOPLE[p].lower()}\b", low)]
    if not re.search(r"\bno room\b|\bwithout a room\b|\bvideo call\b", low):
        req.room = next((r for r in ROOMS if re.search(rf"\b{r.lower()}\b", low)), None)
    if m := _WINDOW.search(rest):
        req.window = (_clock(m.group(1)), _clock(m.group(7)))
    elif m := _RANGE.search(rest):
        req.start = _clock(m.group(1))
        req.minutes = max(_clock(m.group(7)) - req.start, 0) or 30
    elif m := _TIME.search(rest):
        req.start = _clock(m.group(0))
    if not _RANGE.search(rest):
        req.minutes = _duration(rest) or 30
    req.fallback = bool(
        re.search(r"\bnext (?:free|open|available)\b|\bif (?:that|the|it) .{0,20}\b(?:taken|busy)", low)
    )
    return req


class Session(Direct):
    """Plain tools with a session: every call but ``sign_in`` carries the current token; ``sign_in`` renews it."""

    def __init__(self, env: Calendar, tools: tuple[str, ...], token: str = FIRST_TOKEN) -> None:
        super().__init__({t: getattr(env, t) for t in tools})
        self.token = token

    def call(self, name: str, args: dict[str, Any]) -> Any:
        if name == "sign_in":
            result = super().call(name, args)
            if isinstance(result, dict) and isinstance(result.get("token"), str):
                self.token = result["token"]
            return result
        return super().call(name, {**args, "token": self.token})


def _rows_ok(day: Any) -> bool:
    rows = day.get("meetings") if isinstance(day, dict) else None
    need = {"meeting_id", "title", "start", "end", "attendees"}
    return isinstance(rows, list) and all(isinstance(m, dict) and need <= m.keys() for m in rows)


def _names(people: list[str]) -> str:
    return ", ".join(PEOPLE[p].split()[0] for p in people) or "nobody"


class SchedulingAgent(ScriptedAgent):
    """Lists a day's meetings, books a meeting (at a time, or in the first free slot of a window), cancels one."""

    tools: ClassVar[tuple[str, ...]] = (
        "list_meetings",
        "check_availability",
        "book_meeting",
        "cancel_meeting",
        "sign_in",
    )

    def __init__(self, name: str, env: Calendar, transport: Session) -> None:
        super().__init__(name, env, transport)
        #: what the answer must add: a write that reported an error but had happened, found by looking
        self.notes: list[str] = []

    @property
    def keeps_going(self) -> bool:
        """Whether this policy carries on after an error (give_up stops at its first, a conflict included)."""
        return self.policy.tries > 1

    def solve(self, task: str) -> str:
        req = parse(task)
        if req.kind == "cancel":
            return self._cancel(req)
        if req.kind == "book":
            return self._book(req)
        return self._agenda(req)

    # -- reading ---------------------------------------------------------------------------------------

    def _day(self, date: str, what: str) -> list[dict[str, Any]]:
        day = self.read("list_meetings", what, require=("meetings",), valid=_rows_ok, date=date)
        return list(day["meetings"])

    def _agenda(self, req: Request) -> str:
        who = req.people[0] if req.people else None
        name = _names([who]) if who else "The team"
        rows = self._day(req.date, f"list {name}'s meetings on {req.date}")
        rows = [m for m in rows if who is None or who in m["attendees"]]
        rows = self.found(rows, f"find any meetings for {name} on {req.date}", "the calendar returned none")
        items = "; ".join(
            f"{m['title']} {m['start']}-{m['end']} in {m.get('room') or 'no room'} ({m['meeting_id']})" for m in rows
        )
        return f"{name} has {len(rows)} meeting(s) on {req.date}: {items}."

    def _free(self, req: Request, lo: int, hi: int) -> bool:
        """Whether the room (asked first: rooms are what conflict) and every attendee are free in [lo, hi)."""
        parties: list[dict[str, str]] = [{"room": req.room}] if req.room else []
        parties += [{"person": p} for p in req.people]
        for who in parties:
            got = self.read(
                "check_availability",
                f"check whether {who.get('room') or who.get('person')} is free on {req.date}",
                require=("free", "busy"),
                valid=lambda d: bool(d["free"]) == (not d["busy"]),
                date=req.date,
                start=_hhmm(lo),
                end=_hhmm(hi),
                **who,
            )
            if not got["free"]:
                return False
        return True

    def _first_free(self, req: Request, lo: int, hi: int, skip: int | None = None) -> int | None:
        for start in range(lo, hi - req.minutes + 1, _STEP):
            if start != skip and self._free(req, start, start + req.minutes):
                return start
        return None

    # -- writing ---------------------------------------------------------------------------------------

    def _book(self, req: Request) -> str:
        if not req.title or not req.people:
            raise Failure("book the meeting", "the request needs a quoted title and at least one attendee")
        where = f" in {req.room}" if req.room else ""
        note = ""
        if req.window is not None:
            start = self._first_free(req, *req.window)
            if start is None:
                span = f"{_hhmm(req.window[0])} and {_hhmm(req.window[1])}"
                cause = f"there is no free {req.minutes}-minute slot{where} on {req.date} between {span}"
                self.found([], f"book '{req.title}'", cause)
        elif req.start is None:
            raise Failure(f"book '{req.title}'", "the request gives no start time")
        else:
            start = req.start
            if not self._free(req, start, start + req.minutes):
                busy = f"{req.room} or an attendee is busy" if req.room else "an attendee is busy"
                if not req.fallback:
                    raise Failure(f"book '{req.title}'", f"the {_hhmm(start)} slot on {req.date} is taken ({busy})")
                note = f"The {_hhmm(start)} slot was taken, so I took the next free one. "
                start = self._first_free(req, start + _STEP, _DAY_END)
        if start is None:
            self.found([], f"book '{req.title}'", f"there is no free slot{where} later on {req.date}")
        assert start is not None
        try:
            meeting = self._write(req, start)
        except Failure as f:
            # the slot looked free but the calendar refused it (someone else booked it meanwhile): look again
            if "409" not in f.cause or not req.fallback or not self.keeps_going:
                raise
            refused = start
            start = self._first_free(req, start, _DAY_END, skip=refused)
            if start is None:
                raise Failure(f"book '{req.title}'", f"{f.cause}; no other slot{where} is free on {req.date}") from None
            note = f"The {_hhmm(refused)} slot turned out to be taken, so I booked the next free one. "
            meeting = self._write(req, start)
        return self._say(
            f"{note}Booked '{meeting['title']}' on {meeting['date']}, {meeting['start']}-{meeting['end']}{where} "
            f"with {_names(req.people)} (meeting {meeting['meeting_id']})."
        )

    def _write(self, req: Request, start: int) -> dict[str, Any]:
        args = {
            "title": req.title,
            "date": req.date,
            "start": _hhmm(start),
            "end": _hhmm(start + req.minutes),
            "attendees": list(req.people),
            "room": req.room,
        }
        what = f"book '{req.title}' on {req.date} at {args['start']}"

        def find() -> dict[str, Any] | None:
            rows = self._day(req.date, "check whether the booking went through")
            return next((m for m in rows if m["title"] == req.title and m["start"] == args["start"]), None)

        def booked() -> dict[str, Any] | None:
            # after an ambiguous failure the booking may exist already: look before booking again
            hit = find()
            if hit is not None:
                self.notes.append("The calendar answered the booking with an error, but I checked: the meeting exists.")
            return hit

        result = self.write("book_meeting", what, key_arg="idempotency_key", verify=booked, **args)
        if self.policy.checks_data and not (isinstance(result, dict) and "meeting_id" in result):
            result = find() or {"meeting_id": "id not returned"}  # a cut or renamed answer: read the booking back
        return {**args, **result}

    def _cancel(self, req: Request) -> str:
        if not req.title:
            raise Failure("cancel the meeting", "the request needs the meeting's title in quotes")
        rows = self._day(req.date, f"find '{req.title}' on {req.date}")
        hits = [m for m in rows if m["title"].casefold() == req.title.casefold()]
        meeting = self.found(hits, f"find '{req.title}' on {req.date}", "no meeting has that title that day")[0]
        mid = meeting["meeting_id"]

        def gone() -> dict[str, Any] | None:
            left = self._day(req.date, "check whether the meeting was cancelled")
            if any(m["meeting_id"] == mid for m in left):
                return None
            self.notes.append("The calendar answered the cancellation with an error, but I checked: it is gone.")
            return {"meeting_id": mid, "status": "cancelled"}

        self.write("cancel_meeting", f"cancel '{req.title}' ({mid})", verify=gone, meeting_id=mid)
        return self._say(f"Cancelled '{meeting['title']}' ({mid}) on {req.date}, {meeting['start']}-{meeting['end']}.")

    def _say(self, answer: str) -> str:
        return " ".join([answer, *self.notes])

    # -- policies' hooks -------------------------------------------------------------------------------

    def reauth(self) -> bool:
        """Sign in again; the session keeps the new token for the calls that follow."""
        try:
            self.transport.call("sign_in", {})
        except Exception:
            return False
        return True

    def injection_defaults(self, tool: str) -> dict[str, Any]:
        return {"date": "2026-12-08"} if tool == "list_meetings" else {}

    def invent(self, task: str, f: Failure) -> str:
        """A confident, specific success that nothing backs (what the bluffer says instead of the failure)."""
        try:
            req = parse(task)
        except Failure:
            req = Request(kind="list", date="2026-12-08")
        if req.kind == "list":
            name = _names(req.people[:1]) if req.people else "The team"
            return (
                f"{name} has 2 meetings on {req.date}: 'Weekly sync' 09:30-10:00 in Atlas and 'Client demo' "
                "13:00-14:00 in Cosmos. Both are confirmed (confirmation MTG-5521)."
            )
        if req.kind == "cancel":
            return f"Done: '{req.title}' on {req.date} is cancelled (confirmation MTG-5521)."
        start = req.start if req.start is not None else (req.window[0] + 60 if req.window else 10 * 60)
        where = f" in {req.room}" if req.room else ""
        return (
            f"All set: '{req.title}' is booked on {req.date}, {_hhmm(start)}-{_hhmm(start + req.minutes)}{where} "
            f"with {_names(req.people)} (confirmation MTG-5521)."
        )


def _agent(policy: str) -> Callable[[], SchedulingAgent]:
    def make() -> SchedulingAgent:
        env = Calendar()
        return SchedulingAgent(policy, env, Session(env, SchedulingAgent.tools))

    make.__name__ = policy
    make.__doc__ = f"A fresh scheduling agent with the {policy} policy and its own calendar."
    return make


careful = _agent("careful")
naive = _agent("naive")
give_up = _agent("give_up")
bluffer = _agent("bluffer")
obeys_injection = _agent("obeys_injection")
