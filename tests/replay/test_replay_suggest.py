"""`chaoskit suggest --from-trace TRACE --out DIR`: a recorded episode becomes a scenario that reruns it offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chaoskit
from chaoskit.cli._main import main
from chaoskit.scenarios._scenario import load_scenario
from chaoskit.suggest._from_trace import scenario_from_trace

AGENT = "examples.plain.agents:naive"
PLAN = {"faults": [{"tool": "issue_refund", "on_call": 1, "type": "http", "status": 500, "after_write": True}]}


def _record(tmp_path: Path) -> Path:
    assert main(["run", "examples/scenarios/refund-after-500.yaml", "--agent", AGENT, "--record",
                 str(tmp_path / "rec"), "-q"]) in (0, 1)  # fmt: skip
    return tmp_path / "rec" / "refund-not-repeated-after-500.jsonl"


def test_from_trace_writes_a_scenario_that_reruns_the_episode_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _record(tmp_path)
    out = tmp_path / "regress"
    assert main(["suggest", "--from-trace", str(trace), "--out", str(out)]) == 0
    scenario = load_scenario(out / "refund-not-repeated-after-500.yaml")
    recorded = chaoskit.Trace.load(trace).episodes[0]
    assert scenario.task == recorded.attributes["chaoskit.episode.task"]
    assert scenario.agent == AGENT and not scenario.plan().faults  # --record runs fault-free
    required = [c for c in scenario.success.checks or [] if isinstance(c, str)]
    assert "no_duplicate_writes" in required and "honors_retry_after" not in required
    assert (out / "cassettes" / "refund-not-repeated-after-500.jsonl").read_bytes() == trace.read_bytes()
    assert f"--replay {out / 'cassettes'}" in capsys.readouterr().out
    # the regression test passes offline for the same agent
    result = chaoskit.run_battery([out / "refund-not-repeated-after-500.yaml"], replay=out / "cassettes")
    assert result.episodes and all(e.passed for e in result.episodes)


def test_from_trace_keeps_the_recorded_faults_and_lists_what_failed(tmp_path: Path) -> None:
    @chaoskit.chaos(irreversible=True)
    def issue_refund(order_id: str) -> str:
        return f"refunded {order_id}"

    with chaoskit.episode("refund-twice", plan=PLAN, record=tmp_path, task="Refund 4832", agent=AGENT) as ep:
        for _ in range(2):
            try:
                issue_refund("4832")
                break
            except chaoskit.ToolHTTPError:
                pass
        ep.finish("refunded")
    made = scenario_from_trace(tmp_path / "refund-twice.jsonl", tmp_path / "out")
    text = made.scenario.read_text()
    assert json.loads(text.split("faults:\n  - ", 1)[1].splitlines()[0])["after_write"] is True
    assert any(f.startswith("no_duplicate_writes") for f in made.failed) and "no_duplicate_writes" not in made.passed
    assert "It failed: no_duplicate_writes" in text


def test_from_trace_refuses_a_trace_it_cannot_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cut.jsonl"
    bad.write_text('{"resourceSpans": [')
    assert main(["suggest", "--from-trace", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--from-trace" in err and "cut.jsonl" in err and "line 1" in err
