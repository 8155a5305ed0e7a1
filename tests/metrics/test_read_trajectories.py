"""A trajectory JSON in the benchmark's shape (task; steps with reasoning, tool calls, outputs) is read into
trajectories the metrics grade, or refused with an error naming file and field; never silently no steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit.grading import TraceReadError
from chaoskit.metrics import daf, read_steps, read_trajectories, ric, trajectory_metrics

BENCH: dict[str, Any] = {
    "task_description": "Book a table for two at Casa Lisboa on 2025-03-05 at 19:30",
    "steps": [
        {
            "reasoning": "I need the restaurant's availability first.",
            "tool_calls": [
                {"name": "search_restaurant", "arguments": {"name": "Casa Lisboa"}, "output": {"id": "R-7781"}}
            ],
        },
        {
            "reasoning": "Found it (R-7781). I'll hand the booking to a sub-agent.",
            "tool_calls": [],
        },
        {
            "thought": "Booking now.",
            "actions": [
                {
                    "tool": "book_table",
                    "args": '{"restaurant_id": "R-7781", "date": "2025-03-05", "time": "19:30"}',
                    "observation": "booked: confirmation C-55",
                }
            ],
        },
        {"reasoning": "Booked, confirmation C-55.", "tool_calls": []},
    ],
}


def test_the_benchmark_shape_is_read(tmp_path: Path) -> None:
    path = tmp_path / "traj.json"
    path.write_text(json.dumps(BENCH), encoding="utf-8")
    (traj,) = read_trajectories(path)
    assert traj.task == BENCH["task_description"]
    assert [s.text for s in traj.steps] == [
        "I need the restaurant's availability first.",
        "Found it (R-7781). I'll hand the booking to a sub-agent.",
        "Booking now.",
        "Booked, confirmation C-55.",
    ]
    assert traj.steps[0].tool_calls[0].name == "search_restaurant"
    assert traj.steps[2].tool_calls[0].arguments == {"restaurant_id": "R-7781", "date": "2025-03-05", "time": "19:30"}
    # a call's output is what the next step reads
    assert traj.steps[1].tool_results == ('{"id": "R-7781"}',)
    assert traj.steps[3].tool_results == ("booked: confirmation C-55",)
    assert daf(traj) == 1.0  # the delegation described in step 1
    assert ric(traj) == 0.0
    m = trajectory_metrics(traj)
    assert m.steps == 4 and m.captured_steps == 4 and m.cdi is not None


def test_a_list_and_a_trajectories_object() -> None:
    other = {"task": "Cancel order 4832", "steps": [{"reasoning": "Cancelling.", "tool_calls": []}]}
    assert [t.task for t in read_trajectories([BENCH, other])] == [BENCH["task_description"], "Cancel order 4832"]
    assert len(read_trajectories({"trajectories": [other, other]})) == 2


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"steps": []}, "task: missing or empty"),
        ({"task": "t", "steps": {"0": {}}}, "steps: must be a list"),
        ({"task": "t", "steps": ["think"]}, "steps[0]: must be an object"),
        ({"task": "t", "steps": [{"reasoning": 3}]}, "steps[0].reasoning: must be a string"),
        ({"task": "t", "steps": [{"tool_calls": [{"arguments": {}}]}]}, "steps[0].tool_calls[0].name: missing"),
        ({"task": "t", "steps": [{"tool_calls": "search"}]}, "steps[0].tool_calls: must be a list"),
        ([{"task": "t", "steps": []}, {"task": "", "steps": []}], "[1].task: missing or empty"),
        ({"trajectories": []}, "trajectories: no trajectory"),
        ({"resourceSpans": []}, "this is an OTLP trace"),
    ],
)
def test_bad_shapes_are_refused_naming_the_field(tmp_path: Path, doc: Any, field: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TraceReadError) as err:
        read_trajectories(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_not_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TraceReadError, match="not JSON"):
        read_trajectories(path)
    with pytest.raises(TraceReadError, match="file not found"):
        read_trajectories(tmp_path / "missing.json")


def test_read_steps_refuses_a_trajectory_json_instead_of_returning_no_steps(tmp_path: Path) -> None:
    path = tmp_path / "traj.json"
    path.write_text(json.dumps(BENCH), encoding="utf-8")
    with pytest.raises(TraceReadError, match=r"not OTLP-JSON.*read_trajectories"):
        read_steps(path)  # was [] before
    assert read_steps({"resourceSpans": []}) == []  # an empty OTLP document still has no steps


def test_the_benchmarks_own_trace_schema() -> None:
    # the trace schema of the ToolReliBench README: parameters, tool_outputs beside the calls, reflection,
    # token_usage, the model at the top
    doc = {
        "task_id": "long_000_run000",
        "model": "claude-3-5-sonnet",
        "architecture": "reflexion",
        "task_description": "Conduct a financial analysis of the S&P 500 this week",
        "steps": [
            {
                "step_number": 1,
                "reasoning": "Starting the analysis.",
                "tool_calls": [{"name": "search", "parameters": {"query": "S&P 500"}}],
                "tool_outputs": ["S&P 500: 4783.35"],
                "memory_state": {"step": 1, "facts_collected": 2},
                "reflection": None,
                "token_usage": {"prompt": 350, "completion": 120, "total": 470},
            },
            {
                "step_number": 2,
                "reasoning": "The index closed at 4783.35.",
                "tool_calls": [],
                "tool_outputs": [],
                "reflection": "I verified the figure against a second source.",
                "token_usage": {"prompt": 400, "completion": 90, "total": 490},
            },
        ],
        "success": True,
    }
    (traj,) = read_trajectories(doc)
    first, second = traj.steps
    assert first.tool_calls[0].arguments == {"query": "S&P 500"}
    assert second.tool_results == ("S&P 500: 4783.35",)
    assert second.text == "The index closed at 4783.35.\nI verified the figure against a second source."
    assert (first.model, first.input_tokens, first.output_tokens) == ("claude-3-5-sonnet", 350, 120)
    # the reflection's claim is backed by the search the step before made
    assert trajectory_metrics(traj).svr == 0.0
    bad = {**doc, "steps": [{**doc["steps"][0], "tool_outputs": "S&P 500: 4783.35"}]}
    with pytest.raises(TraceReadError, match=r"steps\[0\]\.tool_outputs: must be a list"):
        read_trajectories(bad)


def test_the_example_compares_two_trajectory_files() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    files = [str(root / "examples" / "trajectories" / f) for f in ("react.json", "reflexion.json")]
    r = subprocess.run(
        [sys.executable, str(root / "examples" / "compare_trajectories.py"), *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    cdi_line = next(ln for ln in r.stdout.splitlines() if ln.startswith("cdi"))
    assert "n=3" in cdi_line and "+2.68, 4.0, 0.055" in cdi_line
    daf_line = next(ln for ln in r.stdout.splitlines() if ln.startswith("daf"))
    assert "0.67 ± 0.58" in daf_line  # two of the three Reflexion runs hand the booking to a sub-agent
