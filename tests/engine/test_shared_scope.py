"""chaoskit.engine.SharedScope: one episode's call counters carried from one process to the next in a mapping."""

from __future__ import annotations

import json
from typing import Any

from chaoskit import Plan, chaos
from chaoskit.engine import SharedScope

PLAN = Plan(faults=[{"type": "error", "tool": "fetch", "on_call": 2}, {"type": "error", "tool": "fetch", "times": 1}])


@chaos
def fetch() -> str:
    return "ok"


def call_in_a_new_process(counts: dict[str, Any]) -> tuple[str, str]:
    """What one proxy process does: a new SharedScope, the counts read from the shared file, one call."""
    counts = json.loads(json.dumps(counts))  # only what survives the file
    with SharedScope(PLAN).activate(counts):
        try:
            out = fetch()
        except ConnectionResetError:
            out = "error"
    return json.dumps(counts), out


def test_the_counts_continue_across_scopes() -> None:
    state: dict[str, Any] = {}
    outcomes = []
    for _ in range(4):
        text, out = call_in_a_new_process(state)
        state = json.loads(text)
        outcomes.append(out)
    # call 1: the `times: 1` fault (its budget is then spent, across processes); call 2: on_call 2; then none
    assert outcomes == ["error", "error", "ok", "ok"]
    assert state["calls"] == {"fetch": 4} and [1, "fetch", 1] in state["fired"]


def test_without_carried_counts_every_process_is_call_1() -> None:
    outcomes = [call_in_a_new_process({})[1] for _ in range(3)]
    assert outcomes == ["error", "error", "error"]  # what a session per call saw before: the times budget refills
