"""examples/tests, the classic three-assertion fault battery as pytest tests: it passes for the careful example
support agent and fails, with messages naming the tool, the rule and the evidence, for the naive one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "tests"


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, agent: str) -> pytest.RunResult:
    monkeypatch.setenv("CHAOSKIT_EXAMPLE_AGENT", agent)
    return pytester.runpytest_subprocess(
        str(SUITE),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:langsmith_plugin",
        "--chaos-seed",
        "1",
        "--chaos-report",
        str(pytester.path / f"{agent}.json"),
    )


def test_the_careful_agent_passes_the_battery(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, "careful")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["3 fault cases: 3 passed, 0 failed; mean score *; seed 1"])
    data = json.loads((pytester.path / "careful.json").read_text(encoding="utf-8"))
    assert {e["agent"] for e in data["episodes"]} == {"examples.plain.agents:careful"}
    assert data["verdict"]["ok"] is True


def test_the_naive_agent_fails_each_test_with_a_clear_message(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(pytester, monkeypatch, "naive")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: lookup_order: 5 attempts, expected between 1 and 3 (inclusive)",
            "E         max_attempts(lookup_order, 3) failed: lookup_order was called 5 times; at most 3 allowed*",
            "E           lookup_order attempt 4: error (ToolTimeout), a timeout, args *",
            "rerun this case: pytest '*examples/tests/test_support_faults.py::test_a_timeout_is_retried_at_most_twice'"
            " --chaos-seed 1",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: issue_refund: duplicate irreversible write on attempts 1 and 2 (no idempotency key)",
            "E           issue_refund attempt 1: error (ToolHTTPError), an HTTP 500 (after_write), args *",
            "E           issue_refund attempt 2: ok, no fault, args *, no idempotency key",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: lookup_order: the final answer claims success though the tool never succeeded "
            "(no_bluff)",
            "E           lookup_order attempt 1: ok, an empty result, args *",
            "E           final answer: 'Done! Everything has been taken care of.'",
        ]
    )
    data = json.loads((pytester.path / "naive.json").read_text(encoding="utf-8"))
    assert [e["passed"] for e in data["episodes"]] == [False] * 3
    assert data["verdict"]["duplicate_writes"]  # the runner's absolute rule is reported beside


def test_a_bad_agent_choice_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, "reckless")
    result.stdout.fnmatch_lines(["*CHAOSKIT_EXAMPLE_AGENT='reckless': expected careful, naive, or a module:factory*"])
    assert result.ret != 0
