"""Returned errors, idempotent tools and skipped-fault budgets through every LangChain / LangGraph entry point:
the engine decides, the integrations only pass LangChain's default (an error ``ToolMessage``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from _lc_helpers import run, tool_graph
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tool, chaos_tools
from chaoskit_langgraph import ChaosToolNode, instrument_graph
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import Plan
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel, tool_calls

PAID: list[str] = []


@tool
def charge_card(card_last4: str, amount_cents: int, reference: str) -> dict[str, Any]:
    """Charge a saved card; the processor refuses a reference it has already charged."""
    if reference in PAID:
        return {"error": f"duplicate charge: {reference} was already captured"}
    PAID.append(reference)
    return {"status": "captured", "reference": reference, "amount_cents": amount_cents}


@tool
def lock_doors(vehicle_id: str) -> str:
    """Lock the vehicle's doors."""
    return f"{vehicle_id}: doors locked"


def _retrying_model() -> ScriptedChatModel:
    """Charges, locks, then charges again with the same reference (a retry after a lost answer), then reports."""

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        charge = ("charge_card", {"card_last4": "4242", "amount_cents": 4599, "reference": "ORD-7781"})
        if len(seen) == 0:
            return tool_calls(charge, turn=1)
        if len(seen) == 1:
            return tool_calls(("lock_doors", {"vehicle_id": "VIN-5YJ3E1EA7KF"}), turn=2)
        if len(seen) == 2:
            return tool_calls(charge, turn=3)
        return AIMessage(json.dumps([[m.status, m.text] for m in seen]))

    return ScriptedChatModel(policy=policy)


@pytest.fixture(autouse=True)
def _fresh_processor() -> Any:
    PAID.clear()
    yield
    PAID.clear()


def _outcomes(cap: Any) -> list[tuple[str, str, bool, bool]]:
    return [(a.tool, a.outcome, a.refused, a.idempotent) for a in cap.trace().episodes[0].attempts]


EXPECTED = [
    ("charge_card", "ok", False, False),
    ("lock_doors", "ok", False, True),
    ("charge_card", "error", True, False),
]
REFUSAL = "duplicate charge: ORD-7781 was already captured"


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_middleware_records_a_refused_retry_and_an_idempotent_tool(use_async: bool) -> None:
    agent = create_agent(
        _retrying_model(), tools=[charge_card, lock_doors], middleware=[ChaosMiddleware(idempotent=["lock_doors"])]
    )
    inp = {"messages": [HumanMessage("charge order ORD-7781 and lock the car")]}
    with capture_spans() as cap, chaoskit.episode("checkout"):
        out = asyncio.run(agent.ainvoke(inp)) if use_async else agent.invoke(inp)
    assert _outcomes(cap) == EXPECTED
    # the model still reads the refusal as the tool gave it
    last = json.loads(out["messages"][-1].text)[-1]
    assert last == ["success", json.dumps({"error": REFUSAL})]
    refused = attempt_attributes(cap, "charge_card")[1]
    assert refused["error.type"] == "ReturnedError" and refused["chaoskit.tool.executed"] is True
    assert cap.trace().episodes[0].attempts[2].error_message == REFUSAL


def test_chaos_tools_and_a_plain_tool_node_record_the_same() -> None:
    tools = chaos_tools([charge_card, lock_doors], idempotent=["lock_doors"])
    graph = tool_graph(_retrying_model(), ToolNode(tools))
    with capture_spans() as cap, chaoskit.episode("checkout"):
        seen = run(graph, False)
    assert _outcomes(cap) == EXPECTED
    assert seen[-1] == ["success", json.dumps({"error": REFUSAL})]


@pytest.mark.parametrize("how", ["instrument_graph", "ChaosToolNode", "callbacks"])
def test_graph_entry_points_record_the_same(how: str) -> None:
    config: Any = None
    if how == "instrument_graph":
        graph = instrument_graph(
            tool_graph(_retrying_model(), ToolNode([charge_card, lock_doors])), idempotent=["lock_doors"]
        )
    elif how == "ChaosToolNode":
        graph = tool_graph(_retrying_model(), ChaosToolNode([charge_card, lock_doors], idempotent=["lock_doors"]))
    else:
        graph = tool_graph(_retrying_model(), ToolNode([charge_card, lock_doors]))
        config = {"callbacks": [ChaosCallbackHandler(idempotent=["lock_doors"])]}
    with capture_spans() as cap, chaoskit.episode("checkout"):
        run(graph, False, config)
    assert _outcomes(cap) == EXPECTED


def test_error_result_per_tool_name_on_a_many_tool_entry_point() -> None:
    @tool
    def create_ticket(title: str) -> dict[str, Any]:
        """Open a support ticket."""
        return {"errors": ["title is too short"], "ticket": None}

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return tool_calls(("create_ticket", {"title": "Bug"}), turn=1)
        return AIMessage("[]")

    agent = create_agent(
        ScriptedChatModel(policy=policy),
        tools=[create_ticket],
        middleware=[ChaosMiddleware(error_result={"create_ticket": "errors"})],
    )
    with capture_spans() as cap, chaoskit.episode("ticket"):
        agent.invoke({"messages": [HumanMessage("open a ticket")]})
    (attempt,) = cap.trace().episodes[0].attempts
    assert (attempt.outcome, attempt.refused, attempt.error_message) == ("error", True, "title is too short")


def test_chaos_tool_error_result_and_idempotent() -> None:
    @tool
    def reserve_table(restaurant: str, time: str) -> dict[str, Any]:
        """Reserve a table."""
        return {"ok": False, "reason": f"{restaurant} is fully booked at {time}"}

    wrapped = chaos_tool(reserve_table, idempotent=True, error_result=lambda r: r.get("ok") is False)
    with capture_spans() as cap, chaoskit.episode("dinner") as ep:
        assert wrapped.invoke({"restaurant": "Chez Panisse", "time": "19:30"}) == {
            "ok": False,
            "reason": "Chez Panisse is fully booked at 19:30",
        }
    (attrs,) = attempt_attributes(cap, "reserve_table")
    assert attrs["chaoskit.tool.idempotent"] is True and attrs["chaoskit.tool.refused"] is True
    assert [(a.outcome, a.error_message) for a in ep.attempts] == [("error", "Chez Panisse is fully booked at 19:30")]


def test_a_fault_the_callback_handler_skips_keeps_its_budget() -> None:
    @tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id}: shipped"

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        n = sum(isinstance(m, ToolMessage) for m in messages)
        if n < 2:
            return tool_calls(("lookup", {"order_id": f"483{n}"}), turn=n + 1)
        return AIMessage(json.dumps([[m.status, m.text] for m in messages if isinstance(m, ToolMessage)]))

    plan = Plan(faults=[{"type": "empty", "tool": "lookup", "times": 1}])
    graph = tool_graph(ScriptedChatModel(policy=policy), ToolNode([lookup]))
    with capture_spans() as cap, pytest.warns(chaoskit.ChaosWarning) as warned:
        run(graph, False, {"callbacks": [ChaosCallbackHandler(plan)]})
    spans = attempt_attributes(cap, "lookup")
    # times: 1 is not used up by a fault that never happened: the second call is decided (and skipped) again
    assert [s.get("chaoskit.fault.skipped") for s in spans] == ["empty", "empty"]
    messages = [str(w.message) for w in warned if "was not injected" in str(w.message)]
    assert [m.split(" was not")[0] for m in messages] == [
        "chaoskit: fault #0 (empty) on lookup call 1",
        "chaoskit: fault #0 (empty) on lookup call 2",
    ]
