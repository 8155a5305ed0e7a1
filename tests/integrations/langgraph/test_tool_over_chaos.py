"""``@tool`` over ``@chaos`` (and tools already made by ``chaos_tool``): ``instrument_graph(g, plan)`` and
``ChaosToolNode(tools, plan)`` apply their plan to them, with one span per attempt carrying the tool call id."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _lc_helpers import calls_then_reports, run, tool_graph
from chaoskit_langchain import chaos_tool
from chaoskit_langgraph import ChaosToolNode, instrument_graph, uninstrument_graph
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel

PLAN = Plan(faults=[{"tool": "lookup", "type": "http", "status": 503, "on_call": 1}])


def under_chaos(async_tool: bool) -> BaseTool:
    if async_tool:

        @tool
        @chaos(irreversible=True)
        async def lookup(order_id: str) -> str:
            """Look up an order."""
            await asyncio.sleep(0)
            return f"order {order_id}"

        return lookup

    @tool
    @chaos(irreversible=True)
    def lookup(order_id: str) -> str:  # type: ignore[no-redef]
        """Look up an order."""
        return f"order {order_id}"

    return lookup


def graph_with(entry: str, tools: list[BaseTool], plan: Plan) -> Any:
    model = ScriptedChatModel(policy=calls_then_reports(2))
    if entry == "ChaosToolNode":
        return tool_graph(model, ChaosToolNode(tools, plan, handle_tool_errors=True))
    return instrument_graph(tool_graph(model, ToolNode(tools, handle_tool_errors=True)), plan)


@pytest.mark.parametrize(("use_async", "async_tool"), [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("entry", ["instrument_graph", "ChaosToolNode"])
def test_the_plan_applies_to_a_tool_over_chaos(entry: str, use_async: bool, async_tool: bool) -> None:
    graph = graph_with(entry, [under_chaos(async_tool)], PLAN)  # used to raise ConfigError
    with capture_spans() as cap, chaoskit.episode("over"):
        seen = run(graph, use_async)
    assert seen[0][0] == "error" and "503" in seen[0][1] and seen[1] == ["success", "order 4801"]
    attrs = attempt_attributes(cap, "lookup")  # one span per attempt, not one per layer
    assert [a["gen_ai.tool.call.id"] for a in attrs] == ["call_1_0", "call_1_1"]
    assert [a["chaoskit.attempt"] for a in attrs] == [1, 2]
    assert attrs[0]["chaoskit.fault.injected"] is True
    assert all(a["chaoskit.tool.irreversible"] is True for a in attrs)  # @chaos's own option kept


def test_the_plan_applies_to_a_chaos_tool_wrapped_with_another_plan() -> None:
    quiet = Plan(faults=[])
    wrapped = chaos_tool(under_chaos(False).model_copy(update={"func": under_chaos(False).func.__wrapped__}), quiet)
    graph = graph_with("instrument_graph", [wrapped], PLAN)
    with capture_spans() as cap, chaoskit.episode("again"):
        seen = run(graph, False)
    assert seen[0][0] == "error" and "503" in seen[0][1]
    assert len(attempt_attributes(cap, "lookup")) == 2
    uninstrument_graph(graph)
    with capture_spans() as cap:
        seen = run(graph, False)
    assert seen[0][0] == "success"  # its own (quiet) plan again


def test_without_a_plan_of_its_own_the_tools_keep_theirs() -> None:
    own = Plan(faults=[{"tool": "lookup", "type": "error", "on_call": 2}])

    @tool
    @chaos(own)
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id}"

    graph = graph_with("instrument_graph", [lookup], None)  # type: ignore[arg-type]
    with capture_spans() as cap, chaoskit.episode("own"):
        seen = run(graph, False)
    assert seen[0][0] == "success" and seen[1][0] == "error"
    assert [a["gen_ai.tool.call.id"] for a in attempt_attributes(cap, "lookup")] == ["call_1_0", "call_1_1"]
