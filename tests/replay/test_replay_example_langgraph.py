"""examples/replay/langgraph_agent.py: a create_agent agent recorded once, its faulted branches added once with
--on-miss record, then the battery offline with its model never called (docs/replay.md, "End to end")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit.runner._battery import run_battery

AGENT = "examples.replay.langgraph_agent:make"
SCENARIOS = ["examples/scenarios/support-refund-after-500.yaml"]


def _facts(result: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (e.scenario, e.repetition, tuple((c["name"], c["severity"]) for c in e.checks if c["name"] != "end_state"))
        for e in result.episodes
    )


def test_recorded_then_faulted_branches_added_then_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAOSKIT_REPLAY_MODEL", raising=False)
    run_battery(SCENARIOS, agent=AGENT, record=tmp_path)
    cassette = tmp_path / "support-refund-not-repeated.jsonl"
    models = chaoskit.replay.Cassette.open(cassette).models
    assert len(models) >= 3  # the model's calls are on the recording, beside the tools'
    with pytest.raises(chaoskit.ReplayMiss, match="no recorded model call with this request"):
        run_battery(SCENARIOS, agent=AGENT, replay=tmp_path, repeat=2)
    live = run_battery(SCENARIOS, agent=AGENT, replay=tmp_path, repeat=2, on_miss="record")
    assert len(chaoskit.replay.Cassette.open(cassette).models) > len(models)

    # from now on no model may run: a call that is not on the recording would raise
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was called on an offline replay")

    monkeypatch.setattr("examples.support.model.ScriptedChatModel._generate", refuse)
    offline = run_battery(SCENARIOS, agent=AGENT, replay=tmp_path, repeat=2)
    assert _facts(offline) == _facts(live)
    assert ("no_duplicate_writes", "pass") in _facts(offline)[0][2]  # the careful agent keys its refund
