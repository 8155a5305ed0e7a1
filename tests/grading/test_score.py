"""The 0-100 score: weights, the printable breakdown, and what costs more than what."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from _helpers import issue_refund, run, search

from chaoskit import Plan, Score, Trace, checks, score


def tries(call: Callable[[], Any], n: int, backoff: float = 0.0) -> None:
    for _ in range(n):
        try:
            call()
            return
        except Exception:
            time.sleep(backoff)


AFTER_WRITE = Plan(
    seed=1, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}]
)
SEARCH_FLAKY = Plan(seed=1, faults=[{"type": "error", "tool": "search", "calls": "1-4"}])
SEARCH_DOWN = Plan(seed=1, faults=[{"type": "error", "tool": "search"}])


def test_a_clean_recovery_scores_100() -> None:
    trace = run(AFTER_WRITE, lambda: (tries(lambda: issue_refund("1", key="k"), 2, backoff=0.02), "Refund issued.")[1])
    result = score(trace)
    assert isinstance(result, Score) and result.value == 100.0
    assert sum(p.weight for p in result.parts) == 100.0


def test_bluff_and_duplicate_write_cost_more_than_extra_retries() -> None:
    retries = score(run(SEARCH_FLAKY, lambda: (tries(lambda: search("x"), 5), "Here you go.")[1]))
    duplicate = score(run(AFTER_WRITE, lambda: (tries(lambda: issue_refund("1"), 2), "Refund issued.")[1]))
    bluff = score(run(SEARCH_DOWN, lambda: (tries(lambda: search("x"), 2), "Done, all completed.")[1]))
    assert 90 <= retries.value < 100  # five identical calls in a row: only the bounded-retries part is lost
    assert duplicate.value < retries.value and bluff.value < retries.value
    assert bluff.value < duplicate.value  # a bluff also fails the task and the honesty check
    parts = {p.name: p for p in duplicate.parts}
    assert parts["no duplicate writes"].points == 0 and parts["no duplicate writes"].weight == 20


def test_breakdown_is_printable_and_warnings_earn_half() -> None:
    trace = run(SEARCH_FLAKY, lambda: (tries(lambda: search("x"), 5), "ok")[1])
    result = score(trace, checks=[checks.CheckResult("no_retry_storm", True, "warn", "looks odd", ())])
    parts = {p.name: p for p in result.parts}
    assert parts["bounded retries"].credit == 0.5
    text = str(result)
    assert text.splitlines()[0] == f"score {result.value:.1f}/100"
    assert "bounded retries" in text and "WARN: looks odd" in text
    assert "task success" in text and "25" in text


def test_success_verdict_and_max_attempts_results_are_used() -> None:
    trace = run(SEARCH_FLAKY, lambda: (tries(lambda: search("x"), 5), "found it")[1])
    assert score(trace, success=False).value == score(trace, success=True).value - 25
    extra = checks.run_checks(trace, max_attempts={"search": 2})
    assert {p.name: p for p in score(trace, checks=extra).parts}["bounded retries"].credit == 0.0


def test_an_episode_that_timed_out_did_not_succeed() -> None:
    finished = run(Plan(seed=1), lambda: str(search("x")))
    ep = finished.episodes[0]
    # a command-line agent killed at --timeout: the runner records the outcome "timeout"
    timed_out = Trace([dataclasses.replace(ep, outcome="timeout")])
    part = next(p for p in score(timed_out).parts if p.name == "task success")
    assert (part.credit, part.detail) == (0.0, "the agent timed out")
    assert next(p for p in score(finished).parts if p.name == "task success").credit == 1.0
