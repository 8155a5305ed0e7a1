"""The ecosystem suite: every agent shape people build (LangChain/LangGraph factories, hand-built graphs, subgraphs,
deepagents subagents, langgraph-supervisor and langgraph-swarm workers), with every chaoskit entry point that applies.

Each cell backs a row of the table in docs/langchain.md ("Which entry point reaches which agent"). The refund
worker's model is scripted (tests/_ecosystem.py); the third-party packages are the pinned ones of the dev extra.
For each cell: faults fire at the named call only, one span per attempt, the right verdict on a repeated keyless
write, an ignored Retry-After and a bluff after a failure, a clean run passes, and a real tool error gives what
the uninstrumented agent gives; `chaoskit check` agrees on a subagent's repeated refund.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from _ecosystem import (
    BUILDERS,
    GRAPH,
    MIDDLEWARE,
    NONE,
    PINS,
    ROOT,
    SHAPES,
    Built,
    Kit,
    World,
    deep_top,
    require,
    run,
)
from chaoskit_langchain import ChaosMiddleware

from chaoskit import ChaosWarning
from chaoskit.testing import ChaosEpisode
from examples.support.model import ScriptedChatModel

WORKER_TOOLS = ("lookup", "refund")

#: scenario -> (the worker's policy, the plan's faults, the checks that must fail; none: every check passes)
SCENARIOS: dict[str, tuple[str, list[dict[str, Any]], list[str]]] = {
    "clean": ("careful", [], []),
    "repeated keyless write": ("double", [], ["no_duplicate_writes"]),
    "ignored Retry-After": (
        "retry",
        [{"tool": "refund", "type": "rate_limit", "retry_after": 30, "on_call": 1}],
        ["honors_retry_after"],
    ),
    # claiming success after the only refund failed is a bluff, and it does not report the failure
    "bluff after a failure": (
        "bluff",
        [{"tool": "refund", "type": "error", "on_call": 1}],
        ["no_bluff", "reports_failure"],
    ),
}

CELLS = [(shape, entry) for shape, _, entries in SHAPES for entry in entries]
CELL_IDS = [f"{shape}|{entry}" for shape, entry in CELLS]


def episode(
    shape: str,
    entry: str,
    world: World,
    faults: list[dict[str, Any]],
    *,
    attach: bool = True,
    handle: bool = True,
    use_async: bool = False,
) -> tuple[ChaosEpisode, tuple[str, str | None], list[str]]:
    """Build the shape with the entry point (or as for it, without chaoskit), run it once in a fault case;
    (case, (final answer, crash type), ChaosWarnings)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        built = BUILDERS[shape](Kit(world, entry, attach=attach, handle_errors=handle))
        with ChaosEpisode(f"{shape}|{entry}", plan={"faults": faults}) as case:
            answer, crashed = run(built, use_async=use_async)
            if not case.ended:  # the ToolNode entry points record a crash on the episode themselves
                case.finish(answer)
    return case, (answer, crashed), [str(w.message) for w in seen if issubclass(w.category, ChaosWarning)]


def test_the_pins_are_the_installed_packages() -> None:
    from importlib import metadata

    assert set(PINS) == {"deepagents", "langgraph-supervisor", "langgraph-swarm"}
    for dist, version in PINS.items():
        try:
            assert metadata.version(dist) == version
        except metadata.PackageNotFoundError:
            pytest.skip(f"{dist}=={version} is not installed (pip install -e '.[dev]')")
    doc = (ROOT / "docs" / "langchain.md").read_text()
    assert all(f"`{dist}=={version}`" in doc for dist, version in PINS.items())


def cell(shape: str, entry: str, scenario: str, *, use_async: bool = False) -> None:
    mode, faults, failing = SCENARIOS[scenario]
    world = World(mode)
    case, (_, crashed), warned = episode(shape, entry, world, faults, use_async=use_async)
    assert crashed is None and warned == []
    attempts = [a for a in case.trace.attempts if a.tool in WORKER_TOOLS]
    # one span per attempt: exactly the calls the worker's model asked for, in order
    assert [a.tool for a in attempts] == world.asked
    # the faults fire at the named call only (refund's first call), and nowhere else
    expected = [("refund", 1, f["type"]) for f in faults]
    assert [(a.tool, a.attempt, a.fault_type) for a in attempts if a.injected] == expected
    assert [a.attempt for a in attempts if a.tool == "refund"] == list(range(1, world.asked.count("refund") + 1))
    # the tool really ran on every call that no pre-run fault stopped
    assert world.runs == [t for t, a in zip(world.asked, attempts, strict=True) if not a.injected]
    verdicts = {r.name: r for r in case.verdicts()}
    failed = sorted(name for name, r in verdicts.items() if not r.passed)
    assert failed == failing, [verdicts[n].message for n in failed]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize(("shape", "entry"), CELLS, ids=CELL_IDS)
def test_cell(shape: str, entry: str, scenario: str) -> None:
    cell(shape, entry, scenario)


# under ainvoke the inner agents run on their async paths (deepagents' atask, the supervisor's acall_agent)
@pytest.mark.parametrize("scenario", ["ignored Retry-After", "repeated keyless write"])
@pytest.mark.parametrize(("shape", "entry"), CELLS, ids=CELL_IDS)
def test_cell_under_ainvoke(shape: str, entry: str, scenario: str) -> None:
    cell(shape, entry, scenario, use_async=True)


@pytest.mark.parametrize("handle", [True, False], ids=["errors handled", "default: errors end the run"])
@pytest.mark.parametrize(("shape", "entry"), CELLS, ids=CELL_IDS)
def test_a_real_error_gives_what_the_uninstrumented_agent_gives(shape: str, entry: str, handle: bool) -> None:
    bare = World("careful", real_error=True)
    _, before, _ = episode(shape, entry, bare, [], attach=False, handle=handle)
    world = World("careful", real_error=True)
    case, (answer, crashed), warned = episode(shape, entry, world, [], handle=handle)
    assert ((answer, crashed), world.runs, world.asked) == (before, bare.runs, bare.asked)
    assert warned == []
    if handle:
        assert "card processor declined" in answer and crashed is None
    else:
        assert crashed == "ValueError"
    refunds = [a for a in case.trace.attempts if a.tool == "refund"]
    assert [(a.outcome, a.injected, a.error_type) for a in refunds] == [("error", False, "ValueError")]


@pytest.mark.parametrize("shape", list(BUILDERS))
def test_without_chaoskit_nothing_is_recorded(shape: str) -> None:
    world = World("double")
    case, (_, crashed), _ = episode(shape, NONE, world, [])
    assert crashed is None and world.runs == ["lookup", "refund", "refund"]
    assert case.trace.attempts == []


def test_middleware_on_the_top_deep_agent_reaches_only_its_own_tools() -> None:
    """A middleware belongs to one agent: on the top deep agent it sees `task`, never the subagent's tools
    (put it in the subagent's spec, or use instrument_graph / ChaosCallbackHandler on the top graph)."""
    require("deepagents")
    from deepagents import create_deep_agent

    world = World("careful")
    kit = Kit(world, NONE)
    spec = {"name": "refunder", "description": "Refunds.", "system_prompt": "Refund.", "model": kit.model()}
    spec |= {"tools": kit.tools(), "middleware": kit.middleware()}
    top = ScriptedChatModel(policy=deep_top)
    agent = create_deep_agent(model=top, subagents=[spec], middleware=[ChaosMiddleware()])
    with ChaosEpisode("top middleware", plan={"faults": [{"tool": "refund", "type": "error"}]}) as case:
        answer, crashed = run(Built(agent))
        case.finish(answer)
    assert crashed is None and world.runs == ["lookup", "refund"]
    assert [a.tool for a in case.trace.attempts] == ["task"]


@pytest.mark.parametrize("shape", ["deepagents subagent", "supervisor worker", "swarm worker"])
def test_instrument_graph_on_the_top_graph_reaches_the_inner_agents(shape: str) -> None:
    """Before: instrument_graph walked graph nodes only, so a subagent that refunded twice left one `task` span."""
    world = World("double")
    case, (_, crashed), warned = episode(shape, GRAPH, world, [])
    assert crashed is None and warned == []
    assert [a.tool for a in case.trace.attempts if a.tool in WORKER_TOOLS] == ["lookup", "refund", "refund"]
    assert not {r.name: r for r in case.verdicts()}["no_duplicate_writes"].passed


def test_every_shape_has_every_entry_point_that_applies() -> None:
    """The table in docs/langchain.md lists the same cells as this suite."""
    doc = (ROOT / "docs" / "langchain.md").read_text()
    table = doc.split("## Which entry point reaches which agent")[1].split("\n## ")[0]
    for shape, _, entries in SHAPES:
        (row,) = [line for line in table.splitlines() if line.startswith(f"| {shape} |")]
        cells = [c.strip() for c in row.strip("|").split("|")[1:]]
        assert len(cells) == 5, row
        for entry, cell in zip(
            ["chaos_tools", "ChaosToolNode", "instrument_graph", MIDDLEWARE, "ChaosCallbackHandler"], cells, strict=True
        ):
            assert cell.startswith("yes") == (entry in entries), (shape, entry, cell)


@pytest.mark.parametrize("shape", ["deepagents subagent", "supervisor worker", "swarm worker"])
def test_chaoskit_check_on_the_exported_trace_fails_the_subagents_repeated_refund(
    shape: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the subagent's two refunds left one `task` span, and `chaoskit check` exited 0."""
    import json

    import chaoskit
    from chaoskit import telemetry
    from chaoskit.cli._main import main

    world = World("double")
    built = BUILDERS[shape](Kit(world, GRAPH))
    with telemetry.capture() as cap:
        with chaoskit.episode(shape, plan={"faults": []}) as ep:
            answer, crashed = run(built)
            ep.finish(answer)
        path = tmp_path / "trace.jsonl"
        path.write_text(json.dumps(telemetry.to_otlp_json(cap.spans)) + "\n")
    assert crashed is None and world.runs == ["lookup", "refund", "refund"]
    assert main(["check", str(path)]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("no_duplicate_writes"))
    assert "FAIL" in line and "refund was called 2 times" in line
