"""The battery ``chaoskit suggest`` writes runs as written, and tells the careful agent from the naive one.

For each example domain (plain ``@chaos`` tools, a LangGraph ``create_agent`` graph, a LangChain agent marked by a
callback handler): every generated case passes with the careful agent, and the naive agent fails the cases aimed
at its flaws, on the check that names the flaw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.runner._battery import run_battery
from chaoskit.suggest import suggest


@pytest.mark.parametrize("domain", ["shop", "scheduling", "travel", "helpdesk"])
def test_the_generated_battery_runs_and_careful_passes_where_naive_fails(domain: str, tmp_path: Path) -> None:
    s = suggest(f"examples.{domain}.agents:careful")
    s.write(tmp_path)
    assert len(s.cases) >= 10
    result = run_battery([tmp_path], agents=[f"examples.{domain}.agents:careful", f"examples.{domain}.agents:naive"])
    by = {(e.scenario, e.agent_label): e for e in result.episodes}
    assert len(by) == 2 * len(s.cases)  # every case ran for both agents
    careful_failed = [
        (sc, [c["name"] for c in e.failed_checks()]) for (sc, a), e in by.items() if a == "careful" and not e.passed
    ]
    assert careful_failed == []
    naive_failed = {
        sc: {c["name"] for c in e.failed_checks()} for (sc, a), e in by.items() if a == "naive" and not e.passed
    }
    assert len(naive_failed) >= 5
    for case in s.cases:
        failed = naive_failed.get(case.name, set())
        if case.fault == "after_write" and case.tool in {
            "place_order",
            "issue_refund",
            "book_meeting",
            "confirm_booking",
            "create_ticket",
        }:
            # a keyed write the naive agent repeats without its key after the 500 that had already written
            assert "no_duplicate_writes" in failed, case.name
        if case.fault in ("rate_limit", "model_rate_limit"):
            assert "honors_retry_after" in failed, case.name
        if case.fault in ("timeout", "partial", "schema_drift"):
            # a transient fault a blind retry gets past, or data the naive agent takes as it comes: no flaw to see
            assert not failed & {"no_duplicate_writes", "honors_retry_after"}, case.name
