"""chaoskit run --record / --replay: a battery recorded once, then replayed under its faults, the same under every
executor; the arguments that do not go together are refused."""

from __future__ import annotations

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
