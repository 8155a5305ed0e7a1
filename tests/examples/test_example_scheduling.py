"""The scheduling example domain: its battery against the expected-outcome table, its tools, oracles and parser."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

import chaoskit
from chaoskit import ToolHTTPError
from chaoskit.adapters import spec_of
from examples.scheduling import agents, verify
from examples.scheduling.env import FIRST_TOKEN, Calendar

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "examples" / "scheduling"
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")
TABLE: dict[str, dict[str, Any]] = yaml.safe_load((DOMAIN / "expected.yaml").read_text())["expect"]
T = FIRST_TOKEN


@cache
def battery(agent: str) -> dict[str, chaoskit.EpisodeResult]:
    """Every scenario of the domain run once by ``agent``, by scenario name."""
    result = chaoskit.run_battery([str(DOMAIN / "scenarios")], agent=f"examples.scheduling.agents:{agent}")
    return {e.scenario: e for e in result.episodes}


def _expected(value: Any) -> tuple[bool, list[str]]:
    if value == "pass" or (isinstance(value, dict) and value.get("pass") is True):
        return True, []
    fail = value["fail"]
    return False, [fail] if isinstance(fail, str) else list(fail)


# -- the battery against the table, in both directions ---------------------------------------------------


def test_the_table_covers_every_scenario_and_agent_and_says_why() -> None:
    names = {yaml.safe_load(p.read_text())["name"] for p in (DOMAIN / "scenarios").glob("*.yaml")}
    assert len(names) >= 6 and set(TABLE) == names
    for scenario, row in TABLE.items():
        assert set(row) == set(AGENTS), scenario
        assert row["careful"] == "pass", f"careful must pass {scenario}"
        for agent, value in row.items():
            assert value == "pass" or value.get("why"), f"{scenario} [{agent}] needs a why"


def test_every_scenario_is_tagged_with_its_domain_faults_and_difficulty() -> None:
    for path in (DOMAIN / "scenarios").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert data["name"].startswith("scheduling-") and path.read_text().startswith("# ")
        tags = set(data["tags"])
        assert "domain:scheduling" in tags and tags & {"difficulty:easy", "difficulty:medium", "difficulty:hard"}
        assert {t for t in tags if t.startswith("fault:")} == {f"fault:{f['type']}" for f in data["faults"]}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("scenario", sorted(TABLE))
def test_the_battery_behaves_as_the_table_says(scenario: str, agent: str) -> None:
    episode = battery(agent)[scenario]
    passes, checks = _expected(TABLE[scenario][agent])
    failed = {c["name"] for c in episode.failed_checks()}
    assert episode.outcome == "completed", episode.error
    if passes:
        assert episode.passed, f"{scenario} [{agent}] should pass; failed {sorted(failed)}: {episode.output!r}"
    else:
        assert not episode.passed, f"{scenario} [{agent}] should fail on {checks}, but passed: {episode.output!r}"
        assert set(checks) <= failed, f"{scenario} [{agent}] failed {sorted(failed)}, not all of {checks}"


def test_careful_keeps_its_end_state_under_paraphrases_and_corrections() -> None:
    result = chaoskit.run_battery(
        [str(DOMAIN / "scenarios")], agent="examples.scheduling.agents:careful", perturbations=[1.0], seed=3
    )
    edited = [e for e in result.episodes if e.epsilon == 1.0 and e.edits]
    assert len(edited) == len(TABLE) and any("sorry, I mean" in e.task for e in edited)
    failed = [(e.scenario, e.task, sorted(c["name"] for c in e.failed_checks())) for e in result.episodes]
    assert [f for f in failed if f[2]] == []  # metamorphic_end_state included: the same calendar changes


# -- the tools -------------------------------------------------------------------------------------------


def test_tools_are_declared_as_a_real_api_would_behave() -> None:
    cal = Calendar()
    book, cancel = spec_of(cal.book_meeting), spec_of(cal.cancel_meeting)
    assert book is not None and book.irreversible and book.idempotency_arg == "idempotency_key"
    assert cancel is not None and cancel.irreversible and cancel.idempotency_arg is None
    for read in (cal.list_meetings, cal.check_availability, cal.sign_in):
        spec = spec_of(read)
        assert spec is not None and not spec.irreversible


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda c: c.list_meetings("2026-12-08"), ToolHTTPError, "call sign_in"),
        (lambda c: c.list_meetings("2026-12-08", token="sess-9"), ToolHTTPError, "expired"),
        (lambda c: c.list_meetings("08/12/2026", token=T), ValueError, "YYYY-MM-DD"),
        (lambda c: c.list_meetings("2026-02-30", token=T), ValueError, "calendar date"),
        (lambda c: c.check_availability("2026-12-08", "09:00", "10:00", token=T), ValueError, "exactly one"),
        (
            lambda c: c.check_availability("2026-12-08", "09:00", "10:00", room="Atlas", person="ana", token=T),
            ValueError,
            "exactly one",
        ),
        (lambda c: c.check_availability("2026-12-08", "9", "10:00", room="Atlas", token=T), ValueError, "HH:MM"),
        (lambda c: c.check_availability("2026-12-08", "10:00", "09:00", room="Atlas", token=T), ValueError, "after"),
        (lambda c: c.check_availability("2026-12-08", "09:00", "10:00", room="Zen", token=T), LookupError, "Atlas"),
        (lambda c: c.check_availability("2026-12-08", "09:00", "10:00", person="zoe", token=T), LookupError, "zoe"),
        (lambda c: c.book_meeting(" ", "2026-12-08", "12:00", "13:00", ["ana"], token=T), ValueError, "title"),
        (lambda c: c.book_meeting("X", "2026-12-08", "12:00", "13:00", [], token=T), ValueError, "attendees"),
        (lambda c: c.book_meeting("X", "2026-12-08", "12:00", "13:00", ["zoe"], token=T), LookupError, "zoe"),
        (lambda c: c.cancel_meeting("M-999", token=T), LookupError, "M-999"),
    ],
)
def test_tools_reject_invalid_calls_with_a_clear_error_and_change_nothing(call: Any, error: type, message: str) -> None:
    cal = Calendar()
    before = copy.deepcopy(cal.meetings)
    with pytest.raises(error, match=message) as info:
        call(cal)
    if isinstance(info.value, ToolHTTPError):
        assert info.value.status == 401
    assert cal.meetings == before


def test_a_room_conflict_is_a_409_and_people_may_be_double_booked() -> None:
    cal = Calendar()
    with pytest.raises(ToolHTTPError, match="Atlas is already booked 09:00-10:00") as info:
        cal.book_meeting("Clash", "2026-12-08", "09:30", "10:00", ["ana"], room="Atlas", token=T)
    assert info.value.status == 409 and len(cal.meetings) == 7
    # Dana is in the 09:00 design review; a call without a room is still booked (calendars allow overlaps)
    got = cal.book_meeting("Overlap", "2026-12-08", "09:00", "09:30", ["Dana Weiss"], token=T)
    assert got["attendees"] == ["dana"] and got["room"] is None and got["meeting_id"] == "M-108"
    free = cal.check_availability("2026-12-08", "09:00", "09:30", person="dana", token=T)
    assert free["free"] is False and free["busy"] == [
        {"start": "09:00", "end": "10:00"},
        {"start": "09:00", "end": "09:30"},
    ]


def test_an_idempotency_key_gives_the_first_answer_and_books_once() -> None:
    cal = Calendar()
    args = ("Retro", "2026-12-11", "10:00", "10:30", ["ana", "bo"])
    first = cal.book_meeting(*args, room="Cosmos", idempotency_key="k1", token=T)
    assert cal.book_meeting(*args, room="Cosmos", idempotency_key="k1", token=T) == first
    assert len(cal.meetings) == 8
    with pytest.raises(ToolHTTPError, match="Cosmos is already booked"):
        cal.book_meeting(*args, room="Cosmos", token=T)  # without the key it is a new booking, and the room is taken


def test_cancel_is_refused_twice_and_sign_in_hands_out_a_working_token() -> None:
    cal = Calendar()
    assert cal.cancel_meeting("M-102", token=T)["status"] == "cancelled"
    with pytest.raises(ToolHTTPError, match="already cancelled") as info:
        cal.cancel_meeting("M-102", token=T)
    assert info.value.status == 409
    token = cal.sign_in()["token"]
    assert token != T and [m["meeting_id"] for m in cal.list_meetings("2026-12-08", token=token)["meetings"]] == [
        "M-101",
        "M-103",
        "M-104",
        "M-105",
    ]


def test_factories_give_fresh_agents_with_their_own_calendar_and_session() -> None:
    made = [getattr(agents, name)() for name in AGENTS]
    assert [a.policy.name for a in made] == list(AGENTS)
    assert len({id(a.env) for a in made}) == len(AGENTS) and agents.careful().env is not made[0].env
    a = made[0]
    assert isinstance(a.transport, agents.Session) and a.transport.token == FIRST_TOKEN
    assert a.reauth() and a.transport.token == "sess-2" and a.env.sign_ins == 1
    clone = copy.deepcopy(a.env)  # the runner snapshots the env before the task
    clone.meetings["M-101"]["status"] = "cancelled"
    assert a.env.meetings["M-101"]["status"] == "confirmed"


# -- the oracles on hand-made states ----------------------------------------------------------------------


def _after(change: Any) -> tuple[Calendar, Calendar]:
    initial = Calendar()
    final = copy.deepcopy(initial)
    change(final)
    return initial, final


def _book(title: str, date: str, start: str, end: str, people: list[str], room: str | None = None) -> Any:
    return lambda c: c.book_meeting(title, date, start, end, people, room=room, token=T)


HIRING = _book("Hiring plan", "2026-12-09", "14:00", "14:30", ["bo", "dana"])


@pytest.mark.parametrize(
    ("oracle", "change", "ok"),
    [
        (verify.untouched, lambda c: None, True),
        (verify.untouched, lambda c: c.cancel_meeting("M-104", token=T), False),
        (verify.booked_hiring_plan, HIRING, True),
        (verify.booked_hiring_plan, lambda c: (HIRING(c), HIRING(c)), False),  # a duplicate booking
        (verify.booked_hiring_plan, _book("Hiring plan", "2026-12-09", "14:00", "14:30", ["bo", "ana"]), False),
        (verify.booked_hiring_plan, _book("Hiring plan", "2026-12-09", "15:00", "15:30", ["bo", "dana"]), False),
        (verify.booked_hiring_plan, lambda c: (HIRING(c), c.cancel_meeting("M-102", token=T)), False),
        (verify.booked_hiring_plan, lambda c: None, False),
        (
            verify.booked_roadmap_next_slot,
            _book("Roadmap check-in", "2026-12-08", "10:00", "10:30", ["ana", "bo"], "Atlas"),
            True,
        ),
        (
            verify.booked_roadmap_next_slot,
            _book("Roadmap check-in", "2026-12-08", "10:30", "11:00", ["ana", "bo"], "Atlas"),
            False,
        ),
        (
            verify.booked_quarterly_review,
            _book("Quarterly Review", "2026-12-08", "13:00", "14:00", ["dana", "chidi", "ana"], "Cosmos"),
            True,
        ),
        (
            verify.booked_quarterly_review,
            _book("Quarterly review", "2026-12-08", "13:00", "14:00", ["ana", "chidi", "dana"], "Atlas"),
            False,
        ),
        (
            verify.booked_contract_review,
            _book("Contract review", "2026-12-09", "15:00", "15:30", ["chidi", "eli"], "Borealis"),
            True,
        ),
        (verify.cancelled_budget_sync, lambda c: c.cancel_meeting("M-102", token=T), True),
        (verify.cancelled_budget_sync, lambda c: c.cancel_meeting("M-104", token=T), False),
        (verify.cancelled_budget_sync, lambda c: c.meetings["M-102"].update(title="Budget", status="cancelled"), False),
        (verify.cancelled_budget_sync, lambda c: c.meetings.pop("M-102"), False),
    ],
)
def test_oracles_accept_exactly_the_intended_change(oracle: Any, change: Any, ok: bool) -> None:
    initial, final = _after(change)
    got, state = oracle(initial, final)
    assert got is ok, state
    assert set(state) == {"booked", "cancelled", "edited"}
    assert yaml.safe_load(yaml.safe_dump(state)) == state  # small plain data, comparable across perturbations


def test_the_end_state_names_what_changed() -> None:
    initial, final = _after(
        lambda c: (HIRING(c), c.cancel_meeting("M-101", token=T), c.meetings["M-103"].update(room="Cosmos"))
    )
    assert verify.changes(initial, final) == {
        "booked": [["hiring plan", "2026-12-09", "14:00", "14:30", ["bo", "dana"], None]],
        "cancelled": ["M-101"],
        "edited": ["M-103"],
    }


# -- reading a task ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "want"),
    [
        (
            "Please make a booking: room Borealis on 2026-12-09 from 15:04 - sorry, I mean 15:00 to 15:30 for "
            "'Contract review' with Chidi and Eli.",
            {"kind": "book", "date": "2026-12-09", "start": 900, "minutes": 30, "room": "Borealis"},
        ),
        (
            "Set up a call 'Ana / Bo sync' with Dana on 2026-12-03 - sorry, I mean 08 at 2:30 pm for an hour.",
            {"kind": "book", "date": "2026-12-08", "start": 870, "minutes": 60, "people": ["dana"]},
        ),
        (
            "Could you find a free 90-minute slot in Atlas with Ana on Dec 9 between 9am and 12:30 and book it "
            'for "Deep work"?',
            {"kind": "book", "date": "2026-12-09", "window": (540, 750), "minutes": 90, "room": "Atlas"},
        ),
        ("Quick question: What meetings does Bo have on 8 December 2026?", {"kind": "list", "people": ["bo"]}),
        ("I need to cancel the 'Budget sync' meeting on 2026-12-08.", {"kind": "cancel", "title": "Budget sync"}),
        (
            "Book Atlas for 'X' with Ana on 2026-12-08 at 09:00. If that slot is taken, take the next free one.",
            {"fallback": True, "people": ["ana"]},
        ),
    ],
)
def test_the_script_reads_paraphrased_and_corrected_tasks(task: str, want: dict[str, Any]) -> None:
    req = agents.parse(task)
    assert {k: getattr(req, k) for k in want} == want
