"""A tool with only a coroutine, driven with sync ``invoke``: the same clear error as without chaoskit, one attempt
recorded as that error (its real type), and no fault recorded as decided unless it was applied or marked skipped."""

from __future__ import annotations

from typing import Any

import pytest
from _lc_helpers import calls_then_reports, tool_graph
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tools
from chaoskit_langgraph import ChaosToolNode, instrument_graph
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import Plan
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel


def async_only() -> BaseTool:
    @tool
    async def lookup(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id}"

    return lookup


def build(entry: str | None, plan: Plan) -> tuple[Any, Any]:
    model = ScriptedChatModel(policy=calls_then_reports(1))
    lookup = async_only()
    if entry == "ChaosMiddleware":
        from langchain.agents import create_agent

        return create_agent(model, [lookup], middleware=[ChaosMiddleware(plan)]), None
    config = None
    if entry == "chaos_tools":
        node: Any = ToolNode(chaos_tools([lookup], plan))
    elif entry == "ChaosToolNode":
        node = ChaosToolNode([lookup], plan)
    else:
        node = ToolNode([lookup])
    graph = tool_graph(model, node)
    if entry == "instrument_graph":
        instrument_graph(graph, plan)
    elif entry == "ChaosCallbackHandler":
        config = {"callbacks": [ChaosCallbackHandler(plan)]}
    return graph, config


def real_error() -> str:
    graph, _ = build(None, Plan(faults=[]))
    with pytest.raises(NotImplementedError) as info:
        graph.invoke({"messages": [HumanMessage("where is 4800?")]})
    return str(info.value)


ENTRIES = ["chaos_tools", "ChaosToolNode", "instrument_graph", "ChaosMiddleware", "ChaosCallbackHandler"]


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_same_error_as_without_chaoskit_recorded_once(entry: str) -> None:
    plan = Plan(faults=[{"tool": "lookup", "type": "latency", "delay_s": 0, "on_call": 2}])
    graph, config = build(entry, plan)
    with capture_spans() as cap, pytest.raises(NotImplementedError) as info:
        with chaoskit.episode("sync", plan=plan) as ep:
            graph.invoke({"messages": [HumanMessage("where is 4800?")]}, config)
    assert str(info.value) == real_error()
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.outcome"] == "error" and attrs["error.type"] == "NotImplementedError"
    assert "chaoskit.fault.type" not in attrs
    assert ep.outcome == "crashed"


@pytest.mark.parametrize("entry", ["chaos_tools", "ChaosToolNode", "instrument_graph"])
def test_a_fault_decided_for_it_is_marked_skipped_not_recorded_as_decided(entry: str) -> None:
    plan = Plan(faults=[{"tool": "lookup", "type": "empty", "on_call": 1}])
    graph, config = build(entry, plan)
    with (
        capture_spans() as cap,
        chaoskit.episode("sync", plan=plan),
        pytest.warns(chaoskit.ChaosWarning, match="ainvoke"),
    ):
        with pytest.raises(NotImplementedError):
            graph.invoke({"messages": [HumanMessage("where is 4800?")]}, config)
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["error.type"] == "NotImplementedError" and attrs["chaoskit.tool.executed"] is False
    assert attrs["chaoskit.fault.skipped"] == "empty"
    assert attrs.get("chaoskit.fault.injected") is not True
