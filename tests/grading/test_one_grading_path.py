"""One grading path: the runner, ``chaoskit check`` and the Python API give the same verdicts and scores.

The same episodes are graded three ways: by ``chaoskit run`` (its per-episode results), by
``checks.run_checks`` + ``score`` on the exported trace, and by ``chaoskit check --json`` on that file. Every
check result (name, verdict, severity, message, evidence) and every score must agree. ``chaoskit.testing``
and the pytest plugin only capture spans and build plans; they do not grade, so they add no path.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit import score
from chaoskit.cli._main import main
from chaoskit.grading.checks import DEFAULT_CHECKS, run_checks
from chaoskit.runner._battery import run_battery
from chaoskit.scenarios._scenario import load_battery
from chaoskit.traces._trace import Trace

ROOT = Path(__file__).resolve().parents[2]
PLAIN = sorted(p for p in (ROOT / "examples" / "scenarios").glob("*.yaml") if not p.name.startswith("support-"))

#: the scenario's own success criteria, which only the runner knows (they judge the task, not the recovery)
CRITERIA = {"outcome", "output_contains", "output_not_contains", "end_state", "metamorphic_end_state"}


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _spec(path: Path) -> tuple[list[str], dict[str, Any]]:
    """The check names and parameters the runner uses for this scenario file."""
    (sc,) = load_battery([path])
    s = sc.success
    specs = s.check_specs()
    names = [n for n, _ in specs] if specs is not None else list(DEFAULT_CHECKS)
    if "no_duplicate_writes" not in names:
        names.append("no_duplicate_writes")
    limits = {k: v for k, v in (("max_attempts", s.max_attempts), ("min_attempts", s.min_attempts)) if v}
    return names, {"required_tools": s.required_tools, **limits}


def _check_cli(path: Path, names: list[str], params: dict[str, Any]) -> dict[str, Any]:
    argv = ["check", str(path), "--json", "--checks", ",".join(names)]
    for flag in ("max_attempts", "min_attempts"):
        for tool, n in params.get(flag, {}).items():
            argv += [f"--{flag.replace('_', '-')}", f"{tool}={n}"]
    for tool in params.get("required_tools") or ():
        argv += ["--require", tool]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _key(check: dict[str, Any]) -> tuple[Any, ...]:
    return (check["name"], check["passed"], check["severity"], check["message"], tuple(check["evidence"]))


@pytest.mark.parametrize("agent", ["examples.plain.agents:naive", "examples.plain.agents:careful"])
@pytest.mark.parametrize("scenario", PLAIN, ids=lambda p: p.stem)
def test_runner_check_cli_and_python_api_grade_alike(scenario: Path, agent: str, tmp_path: Path) -> None:
    traces = tmp_path / "spans.jsonl"
    result = run_battery([scenario], agent=agent, repeat=2, intensities=[0.0, 0.3], seed=3, traces=traces)
    names, params = _spec(scenario)
    cli = {e["id"]: e for e in _check_cli(traces, names, params)["episodes"]}
    trace = Trace.load(traces)
    assert len(result.episodes) == 4
    for ep in result.episodes:
        one = Trace([trace.episode(ep.episode_id)])
        ordered = [n for n in ("max_attempts", "min_attempts") if n in params] + names
        direct = run_checks(one, ordered, **params)
        direct_score = score(one, checks=direct, required_tools=params["required_tools"]).value
        by_runner = [c for c in ep.checks if c["name"] not in CRITERIA]
        assert sorted(map(_key, by_runner)) == sorted(_key(r.to_dict()) for r in direct), ep.replay
        assert sorted(map(_key, by_runner)) == sorted(map(_key, cli[ep.episode_id]["checks"])), ep.replay
        assert ep.score == direct_score == cli[ep.episode_id]["score"]["value"], ep.replay


def test_the_task_verdict_travels_with_the_trace(tmp_path: Path) -> None:
    """The naive agent retries the refund after the 500 without an idempotency key: the oracle finds two
    refunds, so the task failed although every tool call ended well. The runner records that on the root
    span, so a later ``chaoskit check`` of the exported trace grades and scores it as the runner did."""
    traces = tmp_path / "spans.jsonl"
    scenario = ROOT / "examples" / "scenarios" / "refund-after-500.yaml"
    result = run_battery([scenario], agent="examples.plain.agents:naive", traces=traces)
    (ep,) = result.episodes
    end_state = next(c for c in ep.checks if c["name"] == "end_state")
    assert end_state == {
        "name": "end_state",
        "passed": False,
        "severity": "fail",
        "evidence": [],
        "message": "examples.plain.verify:refund_once rejected the end state",
    }
    (root,) = Trace.load(traces).episodes
    assert root.attributes["chaoskit.episode.success"] is False
    assert root.attributes["chaoskit.episode.task"] == "Refund order 4832 for the damaged item"
    names, params = _spec(scenario)
    (graded,) = _check_cli(traces, names, params)["episodes"]
    task_part = next(p for p in graded["score"]["parts"] if p["name"] == "task success")
    assert task_part["points"] == 0.0
    bluff = next(c for c in graded["checks"] if c["name"] == "no_bluff")
    assert not bluff["passed"] and "did not meet its success criteria" in bluff["message"]
    assert graded["score"]["value"] == ep.score
