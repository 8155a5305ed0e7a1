"""``stale_state`` and ``cascading_failure`` on a small travel agent: search, hold, then confirm."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from _helpers import run_spans

from chaoskit import Plan, ToolHTTPError, chaos, checks
from chaoskit import semconv as sc
from chaoskit._errors import PlanError

SEED = {"FL-1": 189, "FL-2": 214, "FL-3": 260}


class Airline:
    """In-memory inventory: FL-1 (the cheapest) sold out; a hold needs an available flight."""

    def __init__(self) -> None:
        self.available = {"FL-1": False, "FL-2": True, "FL-3": True}
        self.holds: dict[str, str] = {}
        self.confirmed: list[tuple[str, str]] = []


airline = Airline()


@chaos
def search_flights(dest: str) -> dict[str, Any]:
    rows = [{"id": k, "price": p, "available": airline.available[k]} for k, p in SEED.items()]
    return {"dest": dest, "flights": rows, "count": len(rows)}


@chaos(irreversible=True)
def hold_flight(flight_id: str, passenger: str) -> dict[str, Any]:
    if not airline.available[flight_id]:
        raise ValueError(f"409 Conflict: {flight_id} is sold out")
    hold = f"H-{flight_id}"
    airline.holds[hold] = passenger
    return {"hold": hold, "flight": flight_id}


@chaos(irreversible=True)
def confirm_booking(hold: str) -> dict[str, Any]:
    if hold not in airline.holds:
        raise ValueError(f"404: no hold {hold}")
    airline.confirmed.append((hold, airline.holds[hold]))
    return {"status": "confirmed", "hold": hold}


def careful_agent(tries: int = 3) -> str:
    """Books the cheapest flight shown available for Bob; retries each step up to ``tries`` times."""
    for _ in range(tries):
        try:
            found = search_flights("LIS")
            break
        except ToolHTTPError:
            continue
    else:
        return "could not search flights"
    for row in sorted((r for r in found["flights"] if r["available"]), key=lambda r: r["price"]):
        for _ in range(tries):
            try:
                hold = hold_flight(row["id"], "Bob")["hold"]
                confirm_booking(hold)
                return f"booked {row['id']} for Bob"
            except ToolHTTPError:
                continue
            except ValueError:
                break  # sold out: try the next flight
    return "nothing booked"


@pytest.fixture(autouse=True)
def _fresh_airline() -> None:
    airline.__init__()  # type: ignore[misc]


def plan(*faults: dict[str, Any], seed: int = 3) -> Plan:
    return Plan.from_dict({"seed": seed, "faults": list(faults)}, source="<test>")


STALE = {"type": "stale_state", "tool": "search_flights", "path": "flights[*]", "where": {"id": "FL-1"},
         "set": {"available": True}}  # fmt: skip
OUTAGE = {"type": "cascading_failure", "tool": "search_flights", "on_call": 1,
          "dependents": ["hold_flight", "confirm_booking"], "for_calls": 2}  # fmt: skip


def test_stale_seat_shown_available_is_refused_at_hold() -> None:
    trace, spans = run_spans(plan(STALE), careful_agent)
    assert airline.confirmed == [("H-FL-2", "Bob")]  # FL-1 was shown available, refused, then FL-2 booked
    attempts = trace.episodes[0].attempts
    assert [(a.tool, a.outcome) for a in attempts] == [
        ("search_flights", "ok"),
        ("hold_flight", "error"),
        ("hold_flight", "ok"),
        ("confirm_booking", "ok"),
    ]
    assert attempts[0].fault_type == "stale_state"
    assert attempts[1].fault_type is None and "sold out" in (attempts[1].error_message or "")
    # only the chosen record's field is stale: the rest of the result is today's
    faulted = [dict(s.attributes or {}) for s in spans if (s.attributes or {}).get(sc.FAULT_TYPE)]
    assert len(faulted) == 1 and faulted[0][sc.FAULT_TYPE] == "stale_state"
    assert faulted[0][sc.FAULT_PREFIX + "set"] == '{"available":true}'
    assert attempts[0].injected_value["flights"][1:] == [  # type: ignore[index]
        {"id": "FL-2", "price": 214, "available": True},
        {"id": "FL-3", "price": 260, "available": True},
    ]


def test_stale_state_without_path_changes_only_existing_fields_and_skips_a_no_op() -> None:
    from chaoskit.engine._effects import stale_state

    data = {"flights": [{"id": "FL-1", "available": False}, {"id": "FL-2", "available": True}], "count": 2}
    out = stale_state(data, {"available": True}, None, None)
    assert out == {"flights": [{"id": "FL-1", "available": True}, {"id": "FL-2", "available": True}], "count": 2}
    assert data["flights"][0]["available"] is False  # the tool's own object is untouched
    with pytest.raises(ValueError, match="no record has available"):
        stale_state({"flights": [{"id": "FL-2", "available": True}]}, {"available": True}, None, None)
    with pytest.warns(Warning, match="stale_state"):
        run_spans(plan({**STALE, "where": {"id": "FL-2"}}), careful_agent)  # FL-2 is available: nothing stale


def test_garbage_stale_differs_it_needs_an_earlier_result() -> None:
    # garbage: stale replays the first result from the second call on; stale_state acts on the first call
    trace, _ = run_spans(plan({"type": "garbage", "stale": True, "tool": "search_flights"}), careful_agent)
    assert trace.episodes[0].attempts[0].fault_type is None
    assert airline.confirmed == [("H-FL-2", "Bob")]


def test_cascading_outage_fails_hold_and_confirm_after_search_fails() -> None:
    trace, spans = run_spans(plan(OUTAGE), careful_agent)
    attempts = trace.episodes[0].attempts
    assert [(a.tool, a.outcome, a.fault_type, a.http_status) for a in attempts] == [
        ("search_flights", "error", "cascading_failure", 503),
        ("search_flights", "ok", None, None),
        ("hold_flight", "error", "cascading_failure", 503),
        ("hold_flight", "error", "cascading_failure", 503),
        ("hold_flight", "ok", None, None),  # the window (for_calls: 2) is per dependent: confirm still fails
        ("confirm_booking", "error", "cascading_failure", 503),
        ("hold_flight", "ok", None, None),  # FL-3 after three tries at FL-2
        ("confirm_booking", "error", "cascading_failure", 503),
        ("hold_flight", "ok", None, None),
        ("confirm_booking", "ok", None, None),
    ]
    by_tool = {}
    for s in spans:
        a = dict(s.attributes or {})
        if a.get(sc.FAULT_TYPE) == "cascading_failure":
            by_tool.setdefault(a.get("gen_ai.tool.name"), []).append(a)
    assert all(a[sc.FAULT_CASCADED_FROM] == "search_flights" for a in by_tool["hold_flight"])
    assert all(a.get(sc.FAULT_INJECTED) is True for a in by_tool["hold_flight"])
    assert sc.FAULT_CASCADED_FROM not in by_tool["search_flights"][0]
    assert airline.confirmed == [("H-FL-3", "Bob")]
    # graded as an injected transient error: the agent retried it
    assert checks.min_attempts(trace, "hold_flight", 2).passed


def test_cascade_without_for_calls_ends_when_the_upstream_next_answers() -> None:
    p = plan({**OUTAGE, "for_calls": None})

    def agent() -> str:
        with pytest.raises(ToolHTTPError, match="search_flights"):
            search_flights("LIS")
        with pytest.raises(ToolHTTPError, match="dependency search_flights is down"):
            hold_flight("FL-2", "Bob")
        with pytest.raises(ToolHTTPError):
            confirm_booking("H-FL-2")
        search_flights("LIS")  # the upstream answers: the outage is over
        return confirm_booking(hold_flight("FL-2", "Bob")["hold"])["status"]

    trace, _ = run_spans(p, agent)
    assert trace.episodes[0].output == "confirmed"


def test_cascading_failure_same_plan_same_faults_across_threads() -> None:
    p = plan({**OUTAGE, "on_call": None, "probability": 0.5}, seed=4)
    seen: list[list[tuple[str, str | None]]] = []
    lock = threading.Lock()

    def one() -> None:
        trace, _ = run_spans(p, lambda: careful_agent(tries=4))
        with lock:
            seen.append([(a.tool, a.fault_type) for a in trace.episodes[0].attempts])

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 6 and all(s == seen[0] for s in seen)
    assert any(t == "cascading_failure" for _, t in seen[0])


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("faults:\n  - type: stale_state\n    tool: search_flights\n", "faults[0]", "set"),
        ("faults:\n  - type: stale_state\n    tool: search_flights\n    set: {}\n", "faults[0]", "field names"),
        ("faults:\n  - type: stale_state\n    tool: s\n    set: {a: 1}\n    path: 'a[x'\n", "path", "path"),
        ("faults:\n  - type: cascading_failure\n    tool: search_flights\n", "dependents", "dependents"),
        ("faults:\n  - type: cascading_failure\n    dependents: [hold_flight]\n", "faults[0]", "upstream"),
        ("faults:\n  - type: cascading_failure\n    tool: s\n    dependents: [s]\n", "faults[0]", "upstream tool itself"),
        ("faults:\n  - type: cascading_failure\n    tool: s\n    dependents: [h]\n    for_calls: 0\n", "for_calls", ">= 1"),
        ("faults:\n  - type: cascading_failure\n    tool: s\n    dependents: [h]\n    status: 200\n", "status", "400"),
    ],
)  # fmt: skip
def test_bad_plans_are_rejected_with_file_line_and_field(text: str, field: str, words: str) -> None:
    with pytest.raises(PlanError) as info:
        Plan.from_yaml(text, source="plan.yaml")
    msg = str(info.value)
    assert "plan.yaml" in msg and field in msg and words in msg
    assert info.value.line is not None


def test_unknown_dependent_is_checked_like_other_tool_names() -> None:
    p = plan({**OUTAGE, "dependents": ["hold_flight", "confirm_bookng"]})
    with pytest.raises(PlanError, match=r"confirm_bookng.*did you mean 'confirm_booking'"):
        p.check_tools(["search_flights", "hold_flight", "confirm_booking"])
