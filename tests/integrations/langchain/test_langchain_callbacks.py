"""ChaosCallbackHandler: chaos for any LangChain/LangGraph run through its callbacks, including compiled graphs."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from _lc_helpers import MODE_IDS, MODES, ORDER, RAISING, Recorder, calls_then_reports, plan_of, run, tool_graph
from chaoskit_langchain import ChaosCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import ChaosWarning
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel, tool_calls


class Graph:
    """A hand-built StateGraph + ToolNode(handle_tool_errors=True) with one `lookup` tool, sync or async."""

    def __init__(self, *, async_tool: bool = False, calls: int = 1) -> None:
        self.runs: list[str] = []

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append(order_id)
            return dict(ORDER)

        @tool("lookup")
        async def alookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append(order_id)
            return dict(ORDER)

        model = ScriptedChatModel(policy=calls_then_reports(calls, lambda i: {"order_id": str(i)}))
        tools: list[BaseTool] = [alookup if async_tool else lookup]
        self.graph = tool_graph(model, ToolNode(tools, handle_tool_errors=True))

    def invoke(self, callbacks: list[Any], use_async: bool = False) -> list[list[str]]:
        return run(self.graph, use_async, {"callbacks": callbacks})


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize(("fault", "exc_type"), RAISING, ids=[f["type"] for f, _ in RAISING])
def test_error_faults_are_raised_before_the_tool_runs(
    fault: dict[str, Any], exc_type: type, use_async: bool, async_tool: bool
) -> None:
    g = Graph(async_tool=async_tool)
    with capture_spans() as cap:
        seen = g.invoke([ChaosCallbackHandler(plan_of(**fault))], use_async)
    assert seen[0][0] == "error" and exc_type.__name__ in seen[0][1] and g.runs == []
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["gen_ai.tool.call.id"] == "call_1_0" and attrs["chaoskit.fault.type"] == fault["type"]
    assert attrs["chaoskit.outcome"] == "error" and attrs["chaoskit.fault.injected"] is True
    assert attrs["chaoskit.tool.executed"] is False


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
def test_after_write_is_raised_after_the_tool_ran(use_async: bool, async_tool: bool) -> None:
    g = Graph(async_tool=async_tool)
    with capture_spans() as cap:
        seen = g.invoke([ChaosCallbackHandler(plan_of(type="http", status=503, after_write=True))], use_async)
    assert seen[0][0] == "error" and "ToolHTTPError" in seen[0][1] and g.runs == ["0"]
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.tool.executed"] is True and attrs["chaoskit.fault.after_write"] is True


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
def test_latency_and_clean_runs(use_async: bool, async_tool: bool) -> None:
    g = Graph(async_tool=async_tool, calls=2)
    t0 = time.perf_counter()
    with capture_spans() as cap:
        seen = g.invoke([ChaosCallbackHandler(plan_of(type="latency", delay_s=0.05))], use_async)
    assert time.perf_counter() - t0 >= 0.05
    assert [s for s, _ in seen] == ["success", "success"] and sorted(g.runs) == ["0", "1"]
    attrs = attempt_attributes(cap, "lookup")
    assert sorted(a["gen_ai.tool.call.id"] for a in attrs) == ["call_1_0", "call_1_1"]
    assert all(a["chaoskit.outcome"] == "ok" and a["chaoskit.tool.executed"] for a in attrs)
    assert sorted(a.get("chaoskit.fault.type", "-") for a in attrs) == ["-", "latency"]


DATA = [
    {"type": "empty"},
    {"type": "empty", "value": []},
    {"type": "partial"},
    {"type": "schema_drift"},
    {"type": "garbage", "garbage": "x"},
    {"type": "garbage", "off_by_one": True},
    {"type": "prompt_injection"},
]


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("fault", DATA, ids=[str(f) for f in DATA])
def test_faults_a_callback_cannot_make_are_skipped_loudly(fault: dict[str, Any], use_async: bool) -> None:
    g = Graph()
    with capture_spans() as cap, pytest.warns(ChaosWarning) as record:
        seen = g.invoke([ChaosCallbackHandler(plan_of(**fault))], use_async)
    text = " ".join(str(w.message) for w in record)
    assert fault["type"] in text and "ChaosCallbackHandler cannot inject" in text
    assert "chaos_tool" in text and "ChaosMiddleware" in text and "instrument_graph" in text
    assert seen[0] == ["success", json.dumps(ORDER)]  # the output is untouched, and the warning says so
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.fault.skipped"] == fault["type"] and "chaoskit.fault.type" not in attrs


def test_attaches_to_create_agent_and_with_config() -> None:
    from langchain.agents import create_agent

    @tool
    def lookup(order_id: str) -> str:
        """Look up."""
        return "found"

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        return AIMessage(seen[-1].text) if seen else tool_calls(("lookup", {"order_id": "1"}), turn=1)

    agent = create_agent(ScriptedChatModel(policy=policy), tools=[lookup])
    handler = ChaosCallbackHandler(plan_of(type="error"))
    # create_agent's ToolNode keeps LangGraph's default: the injected error ends the run
    with capture_spans() as cap, pytest.raises(ConnectionResetError), chaoskit.episode("attach") as ep:
        agent.with_config(callbacks=[handler]).invoke({"messages": [HumanMessage("x")]})
    assert ep.outcome == "crashed"
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["gen_ai.tool.call.id"] == "call_1_0"
    out = agent.invoke({"messages": [HumanMessage("x")]}, {"callbacks": [ChaosCallbackHandler()]})
    assert out["messages"][-1].text == "found"


def test_ordering_effect_on_other_tracers() -> None:
    before, after = Recorder(), Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Graph().invoke([before, ChaosCallbackHandler(plan_of(type="error")), after])
    # a fault raised from on_tool_start stops LangChain's handler loop: earlier handlers saw a start and
    # nothing else, later ones never saw the run
    assert before.kinds == ["start"] and after.kinds == []
    before, after = Recorder(), Recorder()
    Graph().invoke([before, ChaosCallbackHandler(plan_of(type="http", after_write=True)), after])
    assert before.kinds == ["start", "end"] and after.kinds == ["start"]


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
def test_a_tools_own_error_means_it_ran(use_async: bool, async_tool: bool) -> None:
    # as under @chaos: the tool was called, so it may have written before it failed
    @tool("lookup")
    def broken(order_id: str) -> str:
        """Look up."""
        raise ConnectionError("real outage")

    @tool("lookup")
    async def abroken(order_id: str) -> str:
        """Look up."""
        raise ConnectionError("real outage")

    graph = tool_graph(
        ScriptedChatModel(policy=calls_then_reports(1)),
        ToolNode([abroken if async_tool else broken], handle_tool_errors=True),
    )
    with capture_spans() as cap:
        seen = run(graph, use_async, {"callbacks": [ChaosCallbackHandler()]})
    assert seen[0][0] == "error"
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.outcome"] == "error" and attrs["error.type"] == "ConnectionError"
    assert attrs["chaoskit.tool.executed"] is True and attrs["chaoskit.fault.injected"] is False


def test_an_error_the_tool_handled_itself_is_a_failed_attempt_and_no_after_write() -> None:
    from langchain_core.tools import ToolException

    @tool("lookup")
    def broken(order_id: str) -> str:
        """Look up."""
        raise ToolException("no such order")

    broken.handle_tool_error = True
    graph = tool_graph(ScriptedChatModel(policy=calls_then_reports(1)), ToolNode([broken]))
    with (
        capture_spans() as cap,
        pytest.warns(
            chaoskit.ChaosWarning,
            match=r"\(http\) on lookup call 1 was not injected: the tool "
            r"returned an error instead of a result \(no such order\)",
        ),
    ):
        seen = run(graph, False, {"callbacks": [ChaosCallbackHandler(plan_of(type="http", after_write=True))]})
    assert seen == [["error", "no such order"]]
    (attrs,) = attempt_attributes(cap, "lookup")
    # the error ToolMessage is a returned error: the tool ran and said no; after_write would claim a write
    assert attrs["chaoskit.outcome"] == "error" and attrs["error.type"] == "ReturnedError"
    assert attrs["chaoskit.tool.refused"] is True and attrs["chaoskit.tool.executed"] is True
    assert attrs["chaoskit.fault.injected"] is False and attrs["chaoskit.fault.skipped"] == "http"
