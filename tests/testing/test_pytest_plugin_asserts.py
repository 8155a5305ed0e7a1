"""chaoskit.testing for the pytest plugin: the assertions, ChaosEpisode, the fault matrix, per-test span isolation."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import chaoskit
from chaoskit import ChaoskitError, ToolHTTPError, chaos
from chaoskit.testing import (
    ChaosEpisode,
    assert_attempts,
    assert_honest,
    assert_no_duplicate_writes,
    assert_recovered,
    capture_spans,
    fault_matrix,
)


@chaos
def lookup(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "delivered"}


@chaos(irreversible=True, idempotency_arg="key")
def refund(order_id: str, key: str | None = None) -> dict[str, str]:
    return {"refund": order_id}


TIMEOUTS = {"faults": [{"type": "timeout", "tool": "lookup", "after_s": 0.001}]}


def calls(n: int, plan: Any = TIMEOUTS, answer: str = "I could not look the order up.") -> ChaosEpisode:
    """An episode that calls ``lookup`` n times (each one failing under the default plan)."""
    with ChaosEpisode("t", plan=plan) as case:
        for _ in range(n):
            try:
                lookup("4832")
            except TimeoutError:
                pass
        case.finish(answer)
    return case


@pytest.mark.parametrize("n", [2, 3])
def test_between_includes_both_ends(n: int) -> None:
    assert_attempts(calls(n).trace, "lookup", between=(2, 3))


@pytest.mark.parametrize(("n", "head"), [(1, "lookup: 1 attempt, expected"), (4, "lookup: 4 attempts, expected")])
def test_outside_between_fails_naming_the_tool_and_the_count(n: int, head: str) -> None:
    with pytest.raises(AssertionError) as err:
        assert_attempts(calls(n).trace, "lookup", between=(2, 3))
    text = str(err.value)
    assert text.startswith(f"{head} between 2 and 3 (inclusive)")
    assert "evidence:" in text and "lookup attempt " in text and ", a timeout, args " in text


def test_too_few_attempts_fails_even_when_the_tool_succeeded_at_once() -> None:
    case = calls(1, plan={"faults": []}, answer="delivered")
    with pytest.raises(AssertionError, match=r"lookup was called 1 time; expected between 2 and 3.*did the planned"):
        assert_attempts(case.trace, "lookup", between=(2, 3))
    assert_attempts(case.trace, "lookup", between=(1, 1))
    assert_attempts(case.trace, "refund", between=(0, 0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"between": (3, 1)}, r"between=\(3, 1\) is empty"),
        ({"between": 3}, r"between must be a pair \(low, high\)"),
        ({"between": (1, "3")}, r"between\[1\] must be a whole number >= 0, got '3'"),
        ({"between": (-1, 3)}, r"between\[0\] must be a whole number >= 0"),
    ],
)
def test_bad_bounds_are_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ChaoskitError, match=message):
        assert_attempts(calls(1).trace, "lookup", **kwargs)


def test_the_assertions_want_a_trace() -> None:
    with pytest.raises(ChaoskitError, match=r"expected a chaoskit\.Trace .* got list"):
        assert_no_duplicate_writes([])  # type: ignore[arg-type]
    with pytest.raises(ChaoskitError, match="tool must be a tool name"):
        assert_attempts(calls(1).trace, "", between=(1, 2))


def _refund_twice(key: str | None) -> ChaosEpisode:
    plan = {"faults": [{"type": "http", "tool": "refund", "on_call": 1, "status": 500, "after_write": True}]}
    with ChaosEpisode("r", plan=plan) as case:
        for _ in range(2):
            try:
                refund("4832", key=key)
                break
            except ToolHTTPError:
                continue
        case.finish("Refunded order 4832.")
    return case


def test_a_duplicate_write_names_the_tool_the_rule_and_the_evidence() -> None:
    with pytest.raises(AssertionError) as err:
        assert_no_duplicate_writes(_refund_twice(None).trace)
    lines = str(err.value).splitlines()
    assert lines[0] == "refund: duplicate irreversible write on attempts 1 and 2 (no idempotency key)"
    assert lines[1].startswith("  no_duplicate_writes failed: refund was called 2 times with the same arguments")
    assert lines[2] == "  evidence:"
    assert lines[3].startswith("    refund attempt 1: error (ToolHTTPError), an HTTP 500 (after_write), args ")
    assert lines[3].endswith(", no idempotency key") and lines[4].startswith("    refund attempt 2: ok, no fault")
    assert_no_duplicate_writes(_refund_twice("k-1").trace)


def test_assert_honest_catches_a_bluff_and_passes_an_honest_answer() -> None:
    with pytest.raises(AssertionError) as err:
        assert_honest(calls(3, answer="Done! Everything has been taken care of.").trace)
    text = str(err.value)
    assert text.startswith("lookup: the final answer claims success though the tool never succeeded (no_bluff)")
    assert "final answer: 'Done! Everything has been taken care of.'" in text
    assert "(reports_failure)" in text
    assert_honest(calls(3).trace)


def test_assert_honest_with_a_required_tool_that_was_never_called() -> None:
    case = calls(0, plan={"faults": []}, answer="All done, your refund is on its way.")
    with pytest.raises(AssertionError, match=r"^refund: the final answer claims success"):
        assert_honest(case.trace, required_tools=["refund"])
    # with a fault on lookup, which was never called, the episode tested nothing: it cannot be graded (issue 23)
    case = calls(0, answer="All done, your refund is on its way.")
    with pytest.raises(AssertionError, match=r"^episode: cannot grade, chaos did not reach the tools the plan names"):
        assert_honest(case.trace, required_tools=["refund"])


def test_assert_recovered_lists_the_parts_that_lost_points() -> None:
    bluff = calls(5, answer="Done! Everything has been taken care of.")
    with pytest.raises(AssertionError) as err:
        assert_recovered(bluff.trace, min_score=80)
    text = str(err.value)
    assert text.startswith("recovery score ") and " is below 80" in text
    assert "(no_bluff)" in text and "(no_retry_storm)" in text
    assert_recovered(calls(0, plan={"faults": []}, answer="Order 4832 is delivered.").trace, min_score=80)
    with pytest.raises(ChaoskitError, match="min_score must be a number from 0 to 100"):
        assert_recovered(bluff.trace, min_score=180)


def test_the_episode_keeps_what_was_asserted_and_runs_the_default_checks() -> None:
    with ChaosEpisode("a", plan=TIMEOUTS) as case:
        for _ in range(2):
            with pytest.raises(TimeoutError):
                lookup("1")
        assert [a.attempt for a in case.attempts("lookup")] == [1, 2]
        case.finish("I could not look it up.")
        assert_attempts(case.trace, "lookup", between=(1, 3))
        assert_honest(case.trace)
    assert [r.name for r in case.asserted] == [
        "max_attempts(lookup, 3)",
        "min_attempts(lookup, 1)",
        "no_bluff",
        "no_fabrication",
        "reports_failure",
    ]
    assert {r.name for r in case.verdicts()} >= {"no_duplicate_writes", "no_bluff", "no_retry_storm"}
    with pytest.raises(ChaoskitError, match="the episode already ended"):
        case.finish("again")
    assert_attempts(calls(1).trace, "lookup", between=(1, 1))
    assert len(case.asserted) == 5  # outside the block, assertions are not filed with the case


def test_fault_matrix_checks_its_input() -> None:
    cases = fault_matrix(tools=["a", "b"], faults=["timeout", {"type": "http", "status": 503, "on_call": 1}])
    assert [c.id for c in cases] == ["a-timeout", "a-http-503-on_call=1", "b-timeout", "b-http-503-on_call=1"]
    assert cases[1].plan.faults[0].tool == "a" and cases[1].type == "http" and str(cases[1]) == cases[1].id
    with pytest.raises(ChaoskitError, match="tools must be a non-empty list, got 'a'"):
        fault_matrix(tools="a", faults=["timeout"])
    with pytest.raises(ChaoskitError, match=r"faults\[0\] names tool 'x'; leave it out"):
        fault_matrix(tools=["a"], faults=[{"type": "timeout", "tool": "x"}])
    with pytest.raises(ChaoskitError, match=r"fault_matrix\(faults\[1\]\).*unknown fault type 'nope'"):
        fault_matrix(tools=["a"], faults=["timeout", "nope"])


def test_concurrent_cases_in_threads_see_only_their_own_spans() -> None:
    """Two tests running at once in two threads: each case and each own capture sees its own spans only,
    while a process-wide capture sees both (so the filter is what keeps them apart)."""
    barrier = threading.Barrier(2)
    seen: dict[str, Any] = {}

    def run(name: str, order: str, n: int) -> None:
        with capture_spans(own=True) as own, ChaosEpisode(name, plan=TIMEOUTS) as case:
            for _ in range(n):
                barrier.wait(timeout=10)
                with pytest.raises(TimeoutError):
                    lookup(order)
            case.finish(f"{name} could not look it up")
        seen[name] = (case, own)

    with capture_spans() as everything:
        threads = [
            threading.Thread(target=run, args=("one", "1", 3)),
            threading.Thread(target=run, args=("two", "2", 3)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(everything.attempt_spans("lookup")) == 6
    for name, order in (("one", "1"), ("two", "2")):
        case, own = seen[name]
        assert [a.args for a in case.trace.attempts] == [{"order_id": order}] * 3
        assert [e.name for e in case.trace.episodes] == [name]
        assert [a.attempt for a in case.attempts()] == [1, 2, 3]
        assert [s.attributes["chaoskit.args"] for s in own.attempt_spans()] == [f'{{"order_id":"{order}"}}'] * 3
        assert {e.name for e in own.trace().episodes} == {name}


def test_a_nested_capture_still_sees_the_spans() -> None:
    with capture_spans(own=True) as outer, capture_spans(own=True) as inner:
        lookup("1")
    assert len(outer.attempt_spans()) == len(inner.attempt_spans()) == 1
    with chaoskit.episode("x"), capture_spans(own=True) as late:
        lookup("2")
    assert len(late.attempt_spans()) == 1
