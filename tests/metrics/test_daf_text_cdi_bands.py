"""DAF counts delegation described in the reasoning text ("I'll hand this to a sub-agent"), once per sub-task
and never twice with its delegation call; CDI values fall in the documented bands."""

from __future__ import annotations

import pytest

from chaoskit.metrics import (
    StepRecord,
    ToolCall,
    Trajectory,
    cdi_band,
    daf,
    delegation_amplification_factor,
    text_delegations,
    trajectory_metrics,
)


def _traj(*steps: tuple[str, tuple[ToolCall, ...]]) -> Trajectory:
    recs = tuple(
        StepRecord("t", f"s{i}", "ep", float(i), i + 0.5, text=text, tool_calls=calls, captured=True)
        for i, (text, calls) in enumerate(steps)
    )
    return Trajectory("Plan a trip to Lisbon for two", recs)


@pytest.mark.parametrize(
    ("text", "subtasks"),
    [
        ("I'll hand this to a sub-agent and wait for its answer.", 1),
        ("Delegating the hotel search to a worker agent.", 1),
        ("Let me spawn two sub-agents: one for flights, one for hotels.", 2),
        ("I'll let a specialist agent check the visa rules.", 1),
        ("Handing these two files to a sub-agent.", 1),
        ("Launching three separate worker agents, one per city.", 3),
        ("Passing the refund part to another agent.", 1),
        ("I'll ask a helper agent to compare the fares, then hand the booking off to a sub-agent.", 2),
    ],
)
def test_delegation_in_text_counts(text: str, subtasks: int) -> None:
    traj = _traj((text, ()))
    assert text_delegations(traj) == subtasks
    assert daf(traj) == float(subtasks)  # was 0.0 before DAF read the text


@pytest.mark.parametrize(
    "text",
    [
        "I won't hand this to a sub-agent; it is a single lookup.",
        "No sub-agent is needed here, I can do it myself.",
        "I searched the flights and booked the cheapest one.",
        "Instead of delegating it to a sub-agent, I looked it up directly.",
        "The agent returned two fares.",
        "I have two sub-tasks left: compare fares, then book.",
        "Starting sub-task 2: compare the fares.",
        "I'll ask the sub-agent for its result.",
        "I have a helper agent available if needed.",
    ],
)
def test_no_delegation_in_text(text: str) -> None:
    assert daf(_traj((text, ()))) == 0.0


def test_a_described_delegation_with_its_call_counts_once() -> None:
    call = (ToolCall("delegate", {"task": "book the hotel"}),)
    traj = _traj(("I'll hand this to a sub-agent.", call), ("Now I'll delegate the flights to a worker agent.", ()))
    assert daf(traj) == 2.0  # the call, and the second step's text
    assert delegation_amplification_factor(traj, from_text=False) == 1.0
    m = trajectory_metrics(traj)
    assert m.delegated_in_text == 1 and m.to_dict()["delegated_in_text"] == 1
    assert m.cdi is not None and m.to_dict()["cdi_band"] == cdi_band(m.cdi) is not None


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (0.0, "aligned"),
        (0.29, "aligned"),
        (0.3, "moderate"),
        (0.59, "moderate"),
        (0.6, "significant"),
        (0.9, "significant"),
        (0.91, "severe"),
        (1.0, "severe"),
        (None, None),
    ],
)
def test_cdi_bands(value: float | None, band: str | None) -> None:
    assert cdi_band(value) == band


def test_cdi_band_refuses_a_value_outside_0_1() -> None:
    with pytest.raises(ValueError, match=r"CDI is in \[0, 1\], got 1.2"):
        cdi_band(1.2)
