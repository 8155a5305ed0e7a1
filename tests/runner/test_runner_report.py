"""Aggregates, outputs (JSON, JUnit, traces) and the CI gate's three rules."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from test_runner import SCENARIO, careful, naive

from chaoskit.report._json import write_json
from chaoskit.report._junit import write_junit
from chaoskit.report._text import render_text
from chaoskit.runner._battery import run_battery
from chaoskit.runner._gate import load_baseline, make_baseline
from chaoskit.runner._results import EpisodeResult
from chaoskit.runner._summary import summarize
from chaoskit.traces._trace import Trace


def ep(
    scenario: str,
    rep: int,
    passed: bool,
    *,
    score: float = 100.0,
    attempts: int = 2,
    eps: float = 0.0,
    lam: float = 0.0,
    dup: int = 0,
) -> EpisodeResult:
    return EpisodeResult(
        scenario=scenario,
        source=None,
        repetition=rep,
        epsilon=eps,
        intensity=lam,
        seed=rep,
        task="t",
        edits=[],
        agent="a:b",
        outcome="completed",
        error=None,
        output="x",
        duration_s=0.01,
        attempts={"total": attempts, "by_tool": {}, "faults": 0, "duplicate_writes": dup},
        checks=[
            {"name": "outcome", "passed": passed, "severity": "pass" if passed else "fail", "message": "m"},
            # the no_duplicate_writes check is the one judge of a repeated write
            *(
                [
                    {
                        "name": "no_duplicate_writes",
                        "passed": False,
                        "severity": "fail",
                        "message": "issue_refund was called 2 times with the same arguments and no idempotency key",
                    }
                ]
                if dup
                else []
            ),
        ],
        score=score,
        oracle=None,
        base_passed=passed,
        passed=passed,
        replay="chaoskit run x",
    )


def test_pass_hat_k_in_summary_hand_computed() -> None:
    # scenario a: 3 of 5 pass -> pass@1 0.6, pass^2 = C(3,2)/C(5,2) = 0.3
    # scenario b: 5 of 5 pass -> pass^2 = 1
    eps_ = [ep("a", r, r < 3) for r in range(5)] + [ep("b", r, True) for r in range(5)]
    summary, verdict = summarize(eps_, {"k": 2, "repeat": 5, "theta": 0.9})
    cells = {c.scenario: c for c in summary.cells}
    assert cells["a"].pass1.value == pytest.approx(0.6)
    assert cells["a"].pass_k.value == pytest.approx(0.3)
    assert cells["b"].pass_k.value == 1.0
    assert summary.overall["pass_at_1"]["value"] == pytest.approx(0.8)
    assert summary.overall["pass_hat_k"]["value"] == pytest.approx(0.65)
    # the surface: R(1) and R(2) at the single grid point, with the episodes it rests on
    surf = {p["k"]: p for p in summary.surface}
    assert surf[1]["value"] == pytest.approx(0.8) and surf[2]["value"] == pytest.approx(0.65)
    assert surf[1]["episodes"] == 10
    assert summary.breaks["intensity_at_epsilon"] == {"0": 0.0}  # 0.65 < 0.9 already at lambda 0
    assert verdict.ok


def test_surface_first_intensity_below_theta() -> None:
    eps_ = []
    for lam, passes in ((0.0, 4), (0.1, 4), (0.3, 3), (0.5, 1)):
        eps_ += [ep("a", r, r < passes, lam=lam) for r in range(4)]
    summary, _ = summarize(eps_, {"k": 1, "repeat": 4, "theta": 0.9})
    assert summary.breaks["intensity_at_epsilon"]["0"] == 0.3
    text_lines = [p for p in summary.surface if p["k"] == 1]
    assert [p["value"] for p in text_lines] == [1.0, 1.0, 0.75, 0.25]


def test_gate_fail_under() -> None:
    eps_ = [ep("a", 0, True, score=80.0), ep("a", 1, True, score=70.0)]
    _, v = summarize(eps_, {"k": 1, "fail_under": 80})
    assert not v.ok and "mean score 75.0 is below --fail-under 80" in v.reasons[0]
    _, v = summarize(eps_, {"k": 1, "fail_under": 75})
    assert v.ok


def test_gate_duplicate_write_is_absolute() -> None:
    eps_ = [ep("a", 0, True, score=100.0), ep("a", 1, True, score=100.0, dup=1)]
    _, v = summarize(eps_, {"k": 1, "fail_under": 0})
    assert not v.ok and "absolute rule" in v.reasons[0] and "chaoskit run x" in v.duplicate_writes[0]


def test_gate_attempts_rise_against_baseline() -> None:
    green = [ep("a", r, True, attempts=2) for r in range(3)]
    summary, v = summarize(green, {"k": 1})
    base = make_baseline(summary)
    assert v.ok and base["attempts"] == {"a": {"a:b": {"eps=0,lam=0": 2.0}}}
    worse = [ep("a", r, True, attempts=3) for r in range(3)]
    _, v = summarize(worse, {"k": 1}, baseline=base)
    assert not v.ok and "rose against the baseline" in v.reasons[0]
    assert "mean attempts 3, baseline 2" in v.regressions[0]
    _, v = summarize(worse, {"k": 1, "attempt_tolerance": 0.5}, baseline=base)
    assert v.ok
    fewer = [ep("a", r, True, attempts=1) for r in range(3)]
    assert summarize(fewer, {"k": 1}, baseline=base)[1].ok


def test_json_junit_and_traces_parse_back(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    traces = tmp_path / "spans.jsonl"
    result = run_battery([p], agent=naive, repeat=2, intensities=[0, 0.2], traces=traces)
    write_json(result, tmp_path / "out.json")
    write_junit(result, tmp_path / "out.xml")

    data = json.loads((tmp_path / "out.json").read_text())
    assert data["kind"] == "chaoskit-run-results"
    assert len(data["episodes"]) == 4
    back = [EpisodeResult.from_dict(e) for e in data["episodes"]]
    assert [b.to_dict() for b in back] == [e.to_dict() for e in result.episodes]
    first = data["episodes"][0]
    for key in ("scenario", "repetition", "epsilon", "intensity", "seed", "output", "attempts", "checks", "score"):
        assert key in first
    assert data["verdict"]["ok"] is False

    root = ET.parse(tmp_path / "out.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 4
    assert cases[0].get("classname") == "chaoskit.save-after-500"
    failures = root.findall(".//testcase/failure")
    assert len(failures) == sum(not e.passed for e in result.episodes)
    assert "replay: chaoskit run" in (failures[0].text or "")
    assert root.get("failures") == str(len(failures))

    trace = Trace.from_otlp_json(traces)
    assert len(trace.episodes) == 4
    assert {e.id for e in trace.episodes} == {e.episode_id for e in result.episodes}


def test_text_report_has_table_surface_and_replay(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    result = run_battery([p], agent=naive, repeat=2, intensities=[0, 0.3])
    text = render_text(result, verbose=True)
    assert "pass@1 [95% CI]" in text and "pass^2" in text
    assert "reliability surface" in text
    assert "replay: chaoskit run" in text
    assert "verdict: FAIL" in text
    assert "n=" in text
    good = run_battery([p], agent=careful, repeat=2)
    assert "verdict: PASS" in render_text(good)


def test_baseline_loads_results_file(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    result = run_battery([p], agent=careful, repeat=2)
    write_json(result, tmp_path / "r.json")
    base: dict[str, Any] | None = load_baseline(tmp_path / "r.json")
    (agent,) = {e.agent for e in result.episodes}
    assert base is not None and base["attempts"]["save-after-500"][agent]["eps=0,lam=0"] == 3.0
    assert load_baseline(tmp_path / "missing.json") is None


def test_gate_reads_only_the_duplicate_write_check() -> None:
    """A repeat that the tool refused is a warning of no_duplicate_writes, not a failure: the gate follows the
    check, whatever a stale attempt summary (an older results file) says."""
    refused = ep("a", 0, True)
    refused.attempts["duplicate_writes"] = 1
    refused.checks.append(
        {
            "name": "no_duplicate_writes",
            "passed": True,
            "severity": "warn",
            "message": "issue_refund was called 2 times with the same arguments; the second call "
            "was refused by the tool itself",
        }
    )
    _, v = summarize([refused], {"k": 1})
    assert v.ok and v.duplicate_writes == []
