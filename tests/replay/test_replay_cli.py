"""chaoskit run --record / --replay: a battery recorded once, then replayed under its faults, the same under every
executor; the arguments that do not go together are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit._errors import ChaoskitError
from chaoskit.cli._main import main

SCENARIOS = ["examples/scenarios/refund-after-500.yaml", "examples/scenarios/status-timeouts.yaml"]
AGENT = "examples.plain.agents:naive"


def _facts(result: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (e.scenario, e.repetition, e.passed, e.score, tuple((c["name"], c["severity"]) for c in e.checks))
        for e in result.episodes
    )


def test_recorded_battery_replays_under_faults_the_same_in_threads_and_processes(tmp_path: Path) -> None:
    assert main(["run", *SCENARIOS, "--agent", AGENT, "--record", str(tmp_path), "-q"]) in (0, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "refund-not-repeated-after-500.jsonl",
        "status-after-timeouts.jsonl",
    ]
    # the recording is a trace like any other: it reads and grades
    assert chaoskit.Trace.load(tmp_path / "refund-not-repeated-after-500.jsonl").episodes

    runs = {
        executor: chaoskit.run_battery(
            SCENARIOS, agent=AGENT, repeat=2, seed=3, executor=executor, workers=2, replay=tmp_path
        )
        for executor in ("thread", "process")
    }
    assert _facts(runs["thread"]) == _facts(runs["process"])
    # the backend was not touched: a scenario's state oracle (end_state) is not run on a replay, never a false fail
    assert all(c["name"] != "end_state" for e in runs["thread"].episodes for c in e.checks)
    # the faults of the plan came back on top of the recording: the naive agent repeats the refund after a 500
    refund = [e for e in runs["thread"].episodes if e.scenario == "refund-not-repeated-after-500"]
    assert refund and all(not e.passed for e in refund)
    assert all(any(c["name"] == "no_duplicate_writes" and c["severity"] == "fail" for c in e.checks) for e in refund)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--record", "R", "--replay", "R"], "give one"),
        (["--record", "R", "--repeat", "2"], "records each scenario once"),
    ],
)
def test_record_and_replay_options_that_do_not_go_together(extra: list[str], message: str, tmp_path: Path) -> None:
    extra = [str(tmp_path) if x == "R" else x for x in extra]
    with pytest.raises(ChaoskitError, match=message):
        chaoskit.run_battery(
            SCENARIOS[:1],
            agent=AGENT,
            repeat=2 if "--repeat" in extra else 1,
            record=tmp_path,
            replay=tmp_path if "--replay" in extra else None,
        )


def test_chaoskit_replay_reports_whether_the_verdicts_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", SCENARIOS[0], "--agent", AGENT, "--record", str(tmp_path), "-q"]) in (0, 1)
    cassette = str(tmp_path / "refund-not-repeated-after-500.jsonl")
    capsys.readouterr()
    # the same agent under the recorded (fault-free) plan: nothing changes
    assert main(["replay", cassette, "--agent", AGENT]) == 0
    assert "verdicts unchanged" in capsys.readouterr().out
    # under the scenario's 500 after_write, the naive agent now repeats the refund: a changed verdict, exit 1
    assert main(["replay", cassette, "--agent", AGENT, "--scenario", SCENARIOS[0], "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["changed"]["no_duplicate_writes"] == ["pass", "fail"]
    assert out["recorded"]["no_duplicate_writes"] == "pass"
    # a file that is not there: exit 2 with the reason
    assert main(["replay", str(tmp_path / "none.jsonl"), "--agent", AGENT]) == 2
    assert "none.jsonl: no recording there" in capsys.readouterr().err


def test_the_offline_battery_example(tmp_path: Path) -> None:
    from examples.replay.offline_battery import record_and_replay

    careful = record_and_replay(tmp_path / "careful")
    assert len(careful.episodes) == 9 and all(e.passed for e in careful.episodes)
    naive = record_and_replay(tmp_path / "naive", agent=AGENT)
    refund = [e for e in naive.episodes if e.scenario == "refund-not-repeated-after-500"]
    assert len(refund) == 3
    assert all(any(c["name"] == "no_duplicate_writes" and c["severity"] == "fail" for c in e.checks) for e in refund)
