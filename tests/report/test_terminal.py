"""The terminal: the progress bar (rich on a TTY, plain lines in a log) and the text report (rich tables, colour
only on a terminal, never cut at 80 columns in a log)."""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest

from chaoskit.report._text import render_text
from chaoskit.runner._battery import run_battery
from chaoskit.runner._progress import Progress
from chaoskit.runner._results import BatteryResult, EpisodeResult

CAREFUL = "examples.plain.agents:careful"
NAIVE = "examples.plain.agents:naive"
REFUND = "examples/scenarios/refund-after-500.yaml"
STATUS = "examples/scenarios/status-timeouts.yaml"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


@pytest.fixture(scope="module")
def two_agents() -> BatteryResult:
    return run_battery([REFUND, STATUS], agents=[CAREFUL, NAIVE], repeat=2, intensities=[0, 0.3], seed=1)


@pytest.fixture(scope="module")
def one_point() -> BatteryResult:
    return run_battery([REFUND], agents=[CAREFUL, NAIVE], repeat=2, seed=1)


# --- the report ------------------------------------------------------------------------------------------


def table_rows(text: str, title: str) -> list[list[str]]:
    """The rows of the plain table under ``title``: cells split on runs of two spaces or more."""
    lines = text.splitlines()
    start = lines.index(title)
    assert set(lines[start + 2].replace(" ", "")) == {"-"}, lines[start + 2]
    rows = [re.split(r"\s{2,}", lines[start + 1].strip())]
    for ln in lines[start + 3 :]:
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return rows


def test_plain_report_has_a_row_per_scenario_and_agent(one_point: BatteryResult) -> None:
    text = render_text(one_point, verbose=True)  # standard output is not a terminal under pytest
    assert not ANSI.search(text)
    rows = table_rows(text, "results per scenario and agent")
    assert rows[0] == ["scenario", "agent", "n", "pass@1 [95% CI]", "pass^2", "score", "attempts", "failed checks"]
    by_agent = {r[1]: r for r in rows[1:]}
    assert set(by_agent) == {"careful", "naive"}
    assert by_agent["careful"][3].startswith("100% [") and by_agent["careful"][-1] == "-"
    assert by_agent["naive"][3].startswith("0% [") and "no_duplicate_writes x2" in by_agent["naive"][-1]
    assert "verdict: FAIL" in text and "replay: chaoskit run" in text
    assert "agent naive rep 0" in text


def test_breakdown_tables_and_missing_keys_are_skipped(one_point: BatteryResult) -> None:
    text = render_text(one_point, verbose=True)
    agents = {r[0]: r for r in table_rows(text, "by agent")[1:]}
    assert agents["careful"][:2] == ["careful", "2"] and agents["naive"][2].startswith("0%")
    faults = table_rows(text, "by fault type")
    assert faults[0] == ["fault type", "n", "pass@1 [95% CI]", "score", "attempts"] and faults[1][0] == "http"
    assert "by tag" in text.splitlines()
    one_point.summary.breakdowns = {"agent": one_point.summary.breakdowns["agent"]}
    try:
        text = render_text(one_point, verbose=True)
    finally:
        one_point.summary.breakdowns = {}
    assert "by agent" in text.splitlines() and "by tag" not in text and "by domain" not in text
    assert "by agent" not in render_text(one_point, verbose=True).splitlines()


def test_grid_report_has_surface_stats_and_the_mix(two_agents: BatteryResult) -> None:
    text = render_text(two_agents, verbose=True)
    rows = table_rows(text, "results per scenario and agent")
    assert rows[0][:4] == ["scenario", "agent", "eps", "lam"] and len(rows) == 1 + 2 * 2 * 2
    matrix = table_rows(text, "per scenario and agent, over the grid")
    assert len(matrix) == 1 + 2 * 2 and all(r[2] == "4" for r in matrix[1:])
    stats = two_agents.summary.surface_stats
    assert stats is not None and stats["slope_epsilon"] is None
    vol, lam = stats["volume"], stats["slope_lambda"]
    line = next(ln for ln in text.splitlines() if "volume (mean R_2 over the grid)" in ln)
    assert f"{vol['value']:.2f} [{vol['low']:.2f} to {vol['high']:.2f}]" in line
    assert f"drop per unit of lambda {lam['value']:.2f} [" in line and "drop per unit of eps -" in line
    mix = next(ln for ln in text.splitlines() if ln.startswith("background fault mix (medium): "))
    assert "lam=0.3: " in mix and "outage" in mix and "lam=0:" not in mix


def test_a_log_gets_wide_tables(two_agents: BatteryResult) -> None:
    long_name = "a-scenario-name-long-enough-to-push-the-table-past-eighty-columns-" + "x" * 40
    cell = two_agents.summary.cells[0]
    old = cell.scenario
    cell.scenario = long_name
    try:
        text = render_text(two_agents, verbose=True)
    finally:
        cell.scenario = old
    row = next(ln for ln in text.splitlines() if ln.startswith(long_name))
    assert len(row) > 150 and "careful" in row and row.rstrip().endswith(("-", "x1", "x2"))


def test_expectation_rows_are_shown(one_point: BatteryResult) -> None:
    v = one_point.verdict
    saved = (v.expectations, v.reasons, v.ok)
    v.expectations = {
        "file": "expected.yaml",
        "met": 1,
        "unexpected": [
            {
                "scenario": "refund-not-repeated-after-500",
                "agent": NAIVE,
                "expected": "pass",
                "actual": "fail",
                "checks": [],
                "why": "[bold]not markup[/] retries with a key",
            }
        ],
        "not_run": 0,
    }
    v.reasons, v.ok = ["unexpected: refund-not-repeated-after-500 [naive]: expected pass, got fail"], False
    try:
        text = render_text(one_point, verbose=True)
    finally:
        v.expectations, v.reasons, v.ok = saved
    assert "expectations (expected.yaml): 1 met, 1 unexpected, 0 not run" in text
    rows = table_rows(text, "unexpected outcomes")
    assert rows[1] == [
        "refund-not-repeated-after-500",
        "naive",
        "pass",
        "fail",
        "-",
        "[bold]not markup[/] retries with a key",
    ]
    assert "1 unexpected outcome(s): see the table above" in text and "unexpected: refund" not in text


def test_colour_only_on_a_terminal(one_point: BatteryResult, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not ANSI.search(render_text(one_point, verbose=True))
    coloured = render_text(one_point, color=True, width=200, verbose=True)
    assert re.search(r"\x1b\[[0-9;]*3[12]m", coloured)  # green / red rates
    assert ANSI.sub("", coloured).count("naive") == render_text(one_point, verbose=True).count("naive")
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert ANSI.search(render_text(one_point, verbose=True))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(render_text(one_point, verbose=True))
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not ANSI.search(render_text(one_point, verbose=True))


# --- the progress bar ------------------------------------------------------------------------------------


def result(agent: str, eps: float, passed: bool, state: Any) -> EpisodeResult:
    return EpisodeResult(
        scenario="s",
        source=None,
        repetition=0,
        epsilon=eps,
        intensity=0.0,
        seed=1,
        task="t",
        edits=[],
        agent=agent,
        outcome="completed",
        error=None,
        output="",
        duration_s=0.0,
        attempts={"total": 1},
        checks=[],
        score=100.0 if passed else 0.0,
        oracle={"ok": True, "state": state},
        base_passed=passed,
        passed=passed,
        replay="r",
    )


def test_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    term = Terminal()
    bar = Progress(4, stream=term)
    for passed in (True, False, True, True):
        bar.update(result("a:b", 0.0, passed, 1))
    out = ANSI.sub("", term.getvalue())
    assert "4/4 episodes" in out and "1 failed" in out and "ETA" in out and "/s" in out
    assert "chaoskit" in out and out.endswith("\n")
    assert "chaoskit: " not in out  # not the log lines
    bar.close()  # closing again is harmless
    assert ANSI.sub("", term.getvalue()) == out


def test_progress_lines_in_a_log() -> None:
    log = io.StringIO()
    bar = Progress(20, stream=log)
    for i in range(20):
        bar.update(result("a:b", 0.0, i % 4 != 0, 1))
    lines = log.getvalue().splitlines()
    assert not ANSI.search(log.getvalue())
    assert lines[0].startswith("chaoskit: 10/20 episodes, 3 failed, ") and lines[0].endswith("left")
    assert lines[-1].startswith("chaoskit: 20/20 episodes, 5 failed, ") and "left" not in lines[-1]


def test_progress_off_writes_nothing_but_counts() -> None:
    log = Terminal()
    bar = Progress(2, stream=log, enabled=False)
    bar.update(result("a:b", 0.0, False, 1))
    bar.update(result("a:b", 0.0, True, 1))
    assert log.getvalue() == "" and (bar.done, bar.failed) == (2, 1)


def test_metamorphic_bookkeeping_is_per_agent() -> None:
    # two agents reach different end states on the same scenario and repetition: each perturbed episode is
    # compared with its own agent's unperturbed one, never with the other agent's
    bar = Progress(4, stream=io.StringIO(), enabled=False)
    bar.update(result("m:b", 0.0, True, {"refunds": 2}))
    bar.update(result("m:a", 0.0, True, {"refunds": 1}))
    bar.update(result("m:b", 0.5, True, {"refunds": 2}))
    assert bar.failed == 0
    bar.update(result("m:a", 0.5, True, {"refunds": 3}))
    assert bar.failed == 1
    # a perturbed episode that finishes first waits for its own agent's reference
    late = Progress(3, stream=io.StringIO(), enabled=False)
    late.update(result("m:a", 0.5, True, {"refunds": 1}))
    late.update(result("m:b", 0.0, True, {"refunds": 9}))
    assert late.failed == 0
    late.update(result("m:a", 0.0, True, {"refunds": 1}))
    assert late.failed == 0
