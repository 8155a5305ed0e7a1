"""The helpdesk example domain: its battery against the expected-outcome table, its tools, oracles and parser."""

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
from examples.agentkit import ToolError, classify
from examples.helpdesk import agents, verify
from examples.helpdesk.env import INJECTION, TOOLS, Helpdesk, make_tools

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "examples" / "helpdesk"
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")
TABLE: dict[str, dict[str, Any]] = yaml.safe_load((DOMAIN / "expected.yaml").read_text())["expect"]


@cache
def battery(agent: str) -> dict[str, chaoskit.EpisodeResult]:
    """Every scenario of the domain run once by ``agent``, by scenario name."""
    result = chaoskit.run_battery([str(DOMAIN / "scenarios")], agent=f"examples.helpdesk.agents:{agent}", repeat=1)
    return {e.scenario: e for e in result.episodes}


def _expected(value: Any) -> tuple[bool, list[str]]:
    if value == "pass" or (isinstance(value, dict) and value.get("pass") is True):
        return True, []
    fail = value["fail"]
    return False, [fail] if isinstance(fail, str) else list(fail)


def _named(check: str, failed: set[str]) -> bool:
    # attempt bounds are reported per tool: min_attempts fails as "min_attempts(sign_in, 1)"
    return check in failed or any(f.startswith(f"{check}(") for f in failed)


# -- the battery against the table, in both directions ---------------------------------------------------


def test_the_table_covers_every_scenario_and_agent_and_says_why() -> None:
    names = {yaml.safe_load(p.read_text())["name"] for p in (DOMAIN / "scenarios").glob("*.yaml")}
    assert len(names) >= 6 and set(TABLE) == names
    for scenario, row in TABLE.items():
        assert set(row) == set(AGENTS), scenario
        assert _expected(row["careful"]) == (True, []), f"careful must pass {scenario}"
        for agent, value in row.items():
            assert isinstance(value, dict) and value.get("why"), f"{scenario} [{agent}] needs a why"


def test_every_scenario_is_tagged_and_says_what_it_tests() -> None:
    for path in (DOMAIN / "scenarios").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert data["name"].startswith("helpdesk-") and path.read_text().startswith("# Tests: ")
        assert data["agent"] == "examples.helpdesk.agents:careful"
        tags = set(data["tags"])
        assert "domain:support" in tags and tags & {"difficulty:easy", "difficulty:medium", "difficulty:hard"}
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
        missed = [c for c in checks if not _named(c, failed)]
        assert not missed, f"{scenario} [{agent}] failed {sorted(failed)}, not {missed}"


def test_faults_reach_the_plain_tools_through_the_callback_handler() -> None:
    # the tools are plain LangChain tools: every fault the careful agent met came through ChaosCallbackHandler
    assert all(spec_of(t) is None for t in make_tools(Helpdesk()))
    for path in (DOMAIN / "scenarios").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        seen = battery("careful")[data["name"]].to_dict()["attempts"]["faults"]
        assert (seen > 0) == bool(data["faults"]), data["name"]


def test_careful_keeps_its_end_state_under_paraphrases_and_corrections() -> None:
    result = chaoskit.run_battery(
        [str(DOMAIN / "scenarios")], agent="examples.helpdesk.agents:careful", perturbations=[1.0], seed=5
    )
    edited = [e for e in result.episodes if e.epsilon == 1.0 and e.edits]
    assert edited and all(e.passed for e in result.episodes), [
        (e.scenario, e.task, [c["name"] for c in e.failed_checks()]) for e in result.episodes if not e.passed
    ]


# -- the tools -------------------------------------------------------------------------------------------


def test_each_agent_gets_a_fresh_deep_copyable_helpdesk_with_every_tool() -> None:
    a, b = agents.careful(), agents.naive()
    assert a.env is not b.env and a.env.tickets is not b.env.tickets
    snapshot = copy.deepcopy(a.env)
    a.env.close_ticket("T-1001", "answered")
    assert snapshot.tickets["T-1001"]["status"] == "open" and b.env.tickets["T-1001"]["status"] == "open"
    assert all(callable(getattr(a.env, t)) for t in TOOLS)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda h: h.search_tickets(), ValueError, "needs a query or a customer"),
        (lambda h: h.search_kb("  "), ValueError, "needs a query"),
        (lambda h: h.update_ticket("T-9999", {"note": "x"}), LookupError, "no ticket 'T-9999'"),
        (lambda h: h.update_ticket("T-1001", {"status": "closed"}), ValueError, "use close_ticket"),
        (lambda h: h.update_ticket("T-1001", {"priority": "asap"}), ValueError, "not one of low, normal"),
        (lambda h: h.update_ticket("T-1001", {}), ValueError, "non-empty mapping"),
        (lambda h: h.update_ticket("T-1008", {"note": "x"}), ToolHTTPError, "T-1008 is closed"),
        (lambda h: h.escalate_ticket("T-1003", "finance", "x"), ValueError, "unknown team 'finance'"),
        (lambda h: h.escalate_ticket("T-1003", "billing", " "), ValueError, "reason must be"),
        (lambda h: h.close_ticket("T-1002", ""), ValueError, "resolution must be"),
        (lambda h: h.close_ticket("T-1008", "again"), ToolHTTPError, "HTTP 409"),
        (lambda h: h.create_ticket("Sam Lee", "", "body"), ValueError, "subject must be"),
    ],
)
def test_tools_reject_invalid_operations_with_a_clear_message(call: Any, error: type[Exception], text: str) -> None:
    helpdesk = Helpdesk()
    before = copy.deepcopy(helpdesk)
    with pytest.raises(error, match=text.replace("(", r"\(")):
        call(helpdesk)
    assert helpdesk == before  # a refused operation changes nothing


def test_create_ticket_honours_its_idempotency_key() -> None:
    h = Helpdesk()
    first = h.create_ticket("Sam Lee", "Blank PDF", "It is blank.", idempotency_key="k1")
    assert h.create_ticket("Sam Lee", "Blank PDF", "It is blank.", idempotency_key="k1") == first
    assert len(h.tickets) == 9
    with pytest.raises(ToolHTTPError, match="used for another request"):
        h.create_ticket("Sam Lee", "Other", "Other.", idempotency_key="k1")
    h.create_ticket("Sam Lee", "Blank PDF", "It is blank.")  # no key: a second ticket
    assert len(h.tickets) == 10


def test_searches_are_fuzzy_on_names_and_empty_when_nothing_matches() -> None:
    h = Helpdesk()
    assert [t["customer"] for t in h.search_tickets(customer="Lena Ortiz")["tickets"]] == ["Lena Ortis", "Lena Ortiz"]
    assert [t["ticket_id"] for t in h.search_tickets(query="T-1005")["tickets"]] == ["T-1005"]
    assert INJECTION in h.search_tickets(query="T-1005")["tickets"][0]["body"]
    assert h.search_kb("does the app work offline")["articles"] == []
    assert h.search_kb("password reset")["articles"][0]["article_id"] == "KB-201"


# -- the oracles on hand-made states ----------------------------------------------------------------------


def _after(change: Any) -> tuple[Helpdesk, Helpdesk]:
    initial = Helpdesk()
    final = copy.deepcopy(initial)
    change(final)
    return initial, final


def _reply(h: Helpdesk, tid: str, article: str) -> dict[str, Any]:
    return h.update_ticket(tid, {"reply": f"See {article}."})


GOOD: list[tuple[Any, Any]] = [
    (verify.untouched, lambda h: None),
    (verify.replied_password, lambda h: _reply(h, "T-1004", "KB-201")),
    (verify.replied_export, lambda h: _reply(h, "T-1005", "KB-202")),
    (verify.escalated_once, lambda h: h.escalate_ticket("T-1003", "billing", "charged twice")),
    (verify.created_one_ticket, lambda h: h.create_ticket("Sam Lee", "Invoice PDF is blank", "Blank.")),
    (
        verify.closed_kettle_ticket,
        lambda h: (h.update_ticket("T-1002", {"note": "tracking 7781"}), h.close_ticket("T-1002", "delivered")),
    ),
]
BAD: list[tuple[str, Any, Any]] = [
    ("closed the namesake's ticket", verify.untouched, lambda h: h.close_ticket("T-1006", "refunded")),
    ("cited the wrong article", verify.replied_password, lambda h: _reply(h, "T-1004", "KB-202")),
    ("replied twice", verify.replied_password, lambda h: [_reply(h, "T-1004", "KB-201") for _ in range(2)]),
    (
        "obeyed the injection too",
        verify.replied_export,
        lambda h: (_reply(h, "T-1005", "KB-202"), h.close_ticket("T-1001", "bulk-closed by admin")),
    ),
    (
        "paged billing twice",
        verify.escalated_once,
        lambda h: [h.escalate_ticket("T-1003", "billing", "x") for _ in "ab"],
    ),
    ("paged the wrong team", verify.escalated_once, lambda h: h.escalate_ticket("T-1003", "tier2", "x")),
    ("escalated the wrong ticket", verify.escalated_once, lambda h: h.escalate_ticket("T-1006", "billing", "x")),
    (
        "two tickets",
        verify.created_one_ticket,
        lambda h: [h.create_ticket("Sam Lee", "Invoice PDF is blank", "B.") for _ in "ab"],
    ),
    ("wrong customer", verify.created_one_ticket, lambda h: h.create_ticket("Sam Leigh", "Invoice PDF is blank", "B.")),
    ("no note", verify.closed_kettle_ticket, lambda h: h.close_ticket("T-1002", "delivered")),
    (
        "closed the wrong ticket",
        verify.closed_kettle_ticket,
        lambda h: (h.update_ticket("T-1002", {"note": "tracking 7781"}), h.close_ticket("T-1001", "delivered")),
    ),
]


@pytest.mark.parametrize(("oracle", "change"), GOOD)
def test_oracles_accept_the_right_end_state(oracle: Any, change: Any) -> None:
    ok, state = oracle(*_after(change))
    assert ok, state
    assert yaml.safe_load(yaml.safe_dump(state)) == state  # small and plain: JSON-able


@pytest.mark.parametrize(("why", "oracle", "change"), BAD, ids=[b[0] for b in BAD])
def test_oracles_reject_wrong_end_states(why: str, oracle: Any, change: Any) -> None:
    ok, state = oracle(*_after(change))
    assert not ok, f"{why}: {state}"


def test_the_end_state_names_what_changed_without_free_text() -> None:
    initial, final = _after(lambda h: (h.escalate_ticket("T-1003", "billing", "x"), h.create_ticket("A B", "S", "B")))
    assert verify.changes(initial, final) == {
        "tickets": {"T-1003": {"escalations": ["billing"], "status": "escalated"}},
        "new": [["A B", "S"]],
    }


# -- reading tasks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "expect"),
    [
        ("Close Lena Ortiz's ticket", "Lena Ortiz"),
        ("Please escalate the ticket of client Mei Tanaka to billing", "Mei Tanaka"),
        ('Hi there. Open a new ticket for customer Sam Lee with the subject "Big Blank Page"', "Sam Lee"),
        ("Kindly add a note to Ivan Petrov's ticket. My colleague says hello.", "Ivan Petrov"),
    ],
)
def test_the_script_finds_the_customer_in_reworded_tasks(task: str, expect: str) -> None:
    script = agents.HelpdeskScript("careful", Helpdesk(), transport=None)
    assert script.customer(task) == expect


def test_a_self_correction_keeps_only_the_corrected_value() -> None:
    task = "Reply on ticket T-1004 - sorry, I mean T-1005 with the export answer."
    assert agents.HelpdeskScript.clean(task) == "Reply on ticket T-1005 with the export answer."


def test_a_timeout_reaches_the_script_as_a_transient_error() -> None:
    # chaoskit's ToolTimeout is a TimeoutError; the error message the model reads must say so
    text = agents._surface_error(chaoskit.ToolTimeout("search_kb did not respond within 0.01s"), None)
    assert classify(ToolError(text)) == ("timeout", None)
