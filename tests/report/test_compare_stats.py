"""``chaoskit compare`` reports means with SD and 95% t intervals, Welch's t-test and Cohen's d for the episode
scores and the trajectory metrics; a malformed metric is refused naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli

from chaoskit.metrics import cohens_d, welch_t_test
from chaoskit.report._compare import compare_results, render_comparison

RESULTS_KIND = "chaoskit-run-results"


def _episode(agent: str, rep: int, score: float, ric: float | None, passed: bool = True) -> dict[str, Any]:
    return {
        "scenario": "refund",
        "agent": agent,
        "repetition": rep,
        "epsilon": 0.0,
        "intensity": 0.0,
        "seed": rep,
        "task": "refund order ORD-1",
        "outcome": "ok",
        "error": None,
        "output": "done",
        "duration_s": 0.1,
        "attempts": {"total": 4},
        "checks": [{"name": "no_bluff", "passed": passed, "severity": "fail", "message": ""}],
        "score": score,
        "oracle": None,
        "base_passed": passed,
        "passed": passed,
        "replay": "",
        "metrics": None
        if ric is None
        else {"cdi": None, "svr": None, "ric": ric, "daf": 0.0, "hallucination": None, "steps": 12, "modes": []},
    }


def _results(agent: str, scores: list[float], rics: list[float | None]) -> dict[str, Any]:
    eps = [_episode(agent, i, s, r) for i, (s, r) in enumerate(zip(scores, rics, strict=True))]
    return {"kind": RESULTS_KIND, "version": 1, "config": {}, "episodes": eps}


OLD_SCORES = [90.0, 85.0, 95.0, 80.0, 90.0]
NEW_SCORES = [70.0, 75.0, 60.0, 80.0, 65.0]
OLD_RIC = [0.0, 0.1, 0.0, 0.1, 0.05]
NEW_RIC = [0.3, 0.2, 0.4, 0.25, 0.35]


def test_rows_carry_score_and_metric_statistics() -> None:
    c = compare_results(_results("react", OLD_SCORES, OLD_RIC), _results("reflexion", NEW_SCORES, NEW_RIC))
    (row,) = c.agents
    assert row.agent == "react -> reflexion"
    assert row.score is not None and row.score.welch is not None
    assert row.score.welch.t == pytest.approx(welch_t_test(OLD_SCORES, NEW_SCORES).t)
    assert row.score.welch.t < 0 and row.score.welch.p_value < 0.01
    assert row.score.d == pytest.approx(cohens_d(OLD_SCORES, NEW_SCORES))
    assert row.score.a.mean == pytest.approx(88.0) and row.score.b.mean == pytest.approx(70.0)
    ric = row.metrics["ric"]
    assert ric.a.n == 5 and ric.d is not None and ric.d > 0
    d = c.to_dict()["agents"][0]
    assert set(d["score_stats"]) == {"old", "new", "welch", "cohens_d"}
    assert d["score_stats"]["old"]["sd"] == pytest.approx(5.700877, abs=1e-6)  # sample SD of OLD_SCORES
    assert d["metrics"]["ric"]["welch"]["p_value"] < 0.01
    json.dumps(c.to_dict(), allow_nan=False)  # strict JSON: no NaN or infinity


def test_the_text_shows_every_statistic() -> None:
    c = compare_results(_results("react", OLD_SCORES, OLD_RIC), _results("reflexion", NEW_SCORES, NEW_RIC))
    text = render_comparison(c)
    assert "Means per agent" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("react -> reflexion") and " score " in ln)
    assert "88.0 ± 5.7 [80.9-95.1] n=5" in line  # 88 ± 2.776 * 5.70 / sqrt(5); t(0.975, 4) = 2.776
    assert "70.0 ± 7.9" in line
    # by hand: variances 32.5 and 62.5, SE = sqrt(32.5/5 + 62.5/5) = 4.359, t = -18 / 4.359 = -4.13,
    # df = 19^2 / (6.5^2/4 + 12.5^2/4) = 7.27; d = -18 / sqrt((4*32.5 + 4*62.5) / 8) = -2.61
    assert "t=-4.13 df=7.3 p=0.004" in line
    assert line.rstrip().endswith("-2.61")
    ric = next(ln for ln in text.splitlines() if " ric " in ln)
    assert "0.050 ± 0.050" in ric and "0.300 ± 0.079" in ric
    assert "Welch's unequal-variance t-test" in text


def test_episodes_without_metrics_give_score_statistics_only() -> None:
    c = compare_results(_results("a", OLD_SCORES, [None] * 5), _results("a", NEW_SCORES, [None] * 5))
    assert c.agents[0].metrics == {}
    assert c.agents[0].score is not None


def test_one_episode_a_side_has_no_test() -> None:
    c = compare_results(_results("a", [90.0], [0.1]), _results("a", [80.0], [0.2]))
    row = c.agents[0]
    assert row.score is not None and row.score.welch is None and row.score.d is None
    assert "needs 2 values a side" in render_comparison(c)


def test_a_malformed_metric_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_results("a", OLD_SCORES, OLD_RIC)), encoding="utf-8")
    bad = _results("a", NEW_SCORES, NEW_RIC)
    bad["episodes"][2]["metrics"]["ric"] = "high"
    new.write_text(json.dumps(bad), encoding="utf-8")
    r = run_cli(["compare", str(old), str(new)])
    assert r.code == 2
    assert_clear(r.err, names=[str(new), "episodes[2].metrics.ric"], allowed=["finite number or null"])


def test_the_cli_writes_the_statistics(tmp_path: Path) -> None:
    old, new, out = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "cmp.json"
    old.write_text(json.dumps(_results("a", OLD_SCORES, OLD_RIC)), encoding="utf-8")
    new.write_text(json.dumps(_results("a", NEW_SCORES, NEW_RIC)), encoding="utf-8")
    r = run_cli(["compare", str(old), str(new), "--json", str(out)])
    assert r.code == 0, r.err  # the statistics inform; every episode passed, so no regression rule fires
    assert "Means per agent" in r.out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["agents"][0]["metrics"]["ric"]["cohens_d"] > 0


def test_help_documents_the_statistics() -> None:
    r = run_cli(["compare", "--help"])
    assert r.code == 0
    for part in ("mean ± SD [95% t interval]", "Welch's t-test", "Cohen's d", "no regression rule"):
        assert part in r.out, part
