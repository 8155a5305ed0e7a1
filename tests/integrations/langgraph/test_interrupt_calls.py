"""Human in the loop: a tool that calls ``interrupt()`` is suspended, not failed. The ``GraphInterrupt`` leaves no
attempt span and uses no call index; after the resume, the resumed call is the call the plan's ``on_call`` counts.
At every entry point: chaos_tools (and instrument_graph / ChaosToolNode), ChaosMiddleware, ChaosCallbackHandler."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tools
from chaoskit_langgraph import ChaosToolNode, instrument_graph
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Interrupt, interrupt

import chaoskit
from chaoskit import Plan
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel, tool_calls

ENTRIES = ["chaos_tools", "ChaosToolNode", "instrument_graph", "ChaosMiddleware", "ChaosCallbackHandler"]


def policy(messages: Sequence[BaseMessage]) -> AIMessage:
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if not seen:
        return tool_calls(("refund", {"order_id": "4832"}), turn=1)
    return AIMessage(f"{seen[-1].status}: {seen[-1].text}")


def make_refund(runs: list[str]) -> BaseTool:
    @tool
    def refund(order_id: str) -> str:
        """Refund an order, once a human approved it."""
        answer = interrupt(f"refund {order_id}?")
        runs.append(answer)
        return f"refunded {order_id} ({answer})"

    return refund


def build(entry: str, plan: Plan, runs: list[str]) -> tuple[Any, dict[str, Any]]:
    refund = make_refund(runs)
    config: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
    if entry == "ChaosMiddleware":
        from langchain.agents import create_agent

        graph = create_agent(
            ScriptedChatModel(policy=policy),
            [refund],
            middleware=[ChaosMiddleware(plan)],
            checkpointer=InMemorySaver(),
        )
        return graph, config
    if entry == "chaos_tools":
        node: Any = ToolNode(chaos_tools([refund], plan), handle_tool_errors=True)
    elif entry == "ChaosToolNode":
        node = ChaosToolNode([refund], plan, handle_tool_errors=True)
    else:
        node = ToolNode([refund], handle_tool_errors=True)
    model = ScriptedChatModel(policy=policy)
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", node)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    if entry == "instrument_graph":
        instrument_graph(graph, plan)
    elif entry == "ChaosCallbackHandler":
        config["callbacks"] = [ChaosCallbackHandler(plan)]
    return graph, config


def ask_then_resume(graph: Any, config: dict[str, Any], use_async: bool, plan: Plan) -> tuple[Any, Any, Any]:
    inp = {"messages": [HumanMessage("refund 4832 please")]}
    with capture_spans() as cap, chaoskit.episode("approval", plan=plan) as ep:
        if use_async:
            first = asyncio.run(graph.ainvoke(inp, config))
            out = asyncio.run(graph.ainvoke(Command(resume="approved"), config))
        else:
            first = graph.invoke(inp, config)
            out = graph.invoke(Command(resume="approved"), config)
    assert "__interrupt__" in first  # the run stopped for the human
    return out, cap, ep


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("entry", ENTRIES)
def test_an_interrupt_is_not_an_attempt(entry: str, use_async: bool) -> None:
    # on_call: 2 must not fire: there is one real call, the resumed one
    plan = Plan(faults=[{"tool": "refund", "type": "error", "on_call": 2}])
    runs: list[str] = []
    graph, config = build(entry, plan, runs)
    out, cap, ep = ask_then_resume(graph, config, use_async, plan)
    assert out["messages"][-1].text == "success: refunded 4832 (approved)"
    assert runs == ["approved"]
    (attrs,) = attempt_attributes(cap, "refund")  # no failed span for the interrupt
    assert attrs["chaoskit.attempt"] == 1 and attrs["chaoskit.outcome"] == "ok"
    assert attrs["gen_ai.tool.call.id"] == "call_1_0"
    assert [(a.tool, a.attempt, a.outcome) for a in ep.attempts] == [("refund", 1, "ok")]
    assert ep.outcome == "completed"


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_resumed_call_is_the_call_on_call_counts(entry: str) -> None:
    # after_write on call 1: the interrupted call gives its budget back, the resumed call (call 1) gets it
    plan = Plan(faults=[{"tool": "refund", "type": "http", "status": 502, "after_write": True, "on_call": 1}])
    runs: list[str] = []
    graph, config = build(entry, plan, runs)
    if entry == "ChaosMiddleware":  # create_agent re-raises tool errors: the agent crashed on the resumed call
        with pytest.raises(chaoskit.ToolHTTPError):
            ask_then_resume(graph, config, False, plan)
    else:
        out, _, _ = ask_then_resume(graph, config, False, plan)
        assert out["messages"][-1].text.startswith("error:") and "502" in out["messages"][-1].text
    assert runs == ["approved"]  # the write happened, then the fault


def test_another_call_between_the_interrupt_and_the_resume_gets_the_next_number() -> None:
    asked: list[str] = []

    @tool
    def approve(order_id: str) -> str:
        """Ask a human, the first time."""
        asked.append(order_id)
        if len(asked) == 1:
            raise GraphInterrupt([Interrupt(value="approve?")])  # what interrupt() raises inside a graph
        return f"approved {order_id}"

    (wrapped,) = chaos_tools([approve], Plan(faults=[]))
    call = {"name": "approve", "args": {"order_id": "1"}, "type": "tool_call"}
    with capture_spans() as cap, chaoskit.episode("between") as ep:
        with pytest.raises(GraphInterrupt):
            wrapped.invoke({**call, "id": "a"})
        wrapped.invoke({**call, "id": "b"})  # another call: the next number, not the suspended one's
        wrapped.invoke({**call, "id": "a"})  # the resume: the number the suspended call kept
    assert [(a.call_id, a.attempt, a.outcome) for a in ep.attempts] == [("b", 2, "ok"), ("a", 1, "ok")]
    assert [a["chaoskit.attempt"] for a in attempt_attributes(cap, "approve")] == [2, 1]
