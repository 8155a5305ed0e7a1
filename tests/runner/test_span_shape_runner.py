"""The battery runner's in-process episodes carry their scenario, agent, seed and verdict on the root span,
in the ``--traces`` file as exported (needs the runner's use of ``Episode.keep_open`` / ``close``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chaoskit.semconv as sc
from chaoskit.runner import run_battery

ROOT = Path(__file__).resolve().parents[2]


def _roots(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    if span["name"].startswith("invoke_agent "):
                        out.append({a["key"]: next(iter(a["value"].values())) for a in span["attributes"]})
    return out


def test_each_root_span_in_the_traces_file_carries_scenario_agent_seed_and_verdict(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    result = run_battery([ROOT / "examples" / "scenarios"], traces=traces, progress=False)
    roots = {r[sc.EPISODE_ID]: r for r in _roots(traces)}
    assert len(roots) == len(result.episodes) > 0
    for ep in result.episodes:
        root = roots[ep.episode_id]
        assert root[sc.SCENARIO] == ep.scenario
        assert root[sc.EPISODE_AGENT] == ep.agent
        assert int(root[sc.EPISODE_SEED]) == ep.seed
        assert root[sc.EPISODE_VERDICT] == (sc.VERDICT_PASS if ep.passed else sc.VERDICT_FAIL)
        assert float(root[sc.EPISODE_SCORE]) == ep.score
    # each root span is written once, ended, after grading
    assert len(_roots(traces)) == len(result.episodes)
