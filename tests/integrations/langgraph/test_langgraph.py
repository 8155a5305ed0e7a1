"""chaoskit_langgraph: chaos_interceptor, ChaosToolNode, instrument_graph on existing compiled graphs."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from _lc_helpers import (
    AFTER_WRITE,
    MODE_IDS,
    MODES,
    ORDER,
    RAISING,
    Recorder,
    calls_then_reports,
    parse_text,
    plan_of,
    run,
    tool_graph,
)
from chaoskit_langchain import is_chaos_tool
from chaoskit_langgraph import (
    ChaosToolNode,
    chaos_interceptor,
    find_tool_nodes,
    instrument_graph,
    is_instrumented,
    uninstrument_graph,
)
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode
from langgraph.prebuilt.tool_node import ToolRuntime

import chaoskit
from chaoskit import Plan
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel


class World:
    """One `lookup` tool (sync or async) and a scripted model that calls it `calls` times in one turn and then
    answers with every ToolMessage it read."""

    def __init__(self, *, async_tool: bool = False, calls: int = 1) -> None:
        self.runs: list[str] = []

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append(order_id)
            return {**ORDER, "order_id": order_id}

        @tool("lookup")
        async def alookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            await asyncio.sleep(0)
            self.runs.append(order_id)
            return {**ORDER, "order_id": order_id}

        self.tools: list[BaseTool] = [alookup if async_tool else lookup]
        self.calls = calls
        self.model = ScriptedChatModel(policy=calls_then_reports(calls))

    def graph(self, node: Callable[[list[BaseTool]], ToolNode] | None = None) -> Any:
        make = node or (lambda tools: ToolNode(tools, handle_tool_errors=True))
        return tool_graph(self.model, make(self.tools))


DATA = [
    ({"type": "empty"}, lambda r: r["items"] == []),
    ({"type": "empty", "value": {"order": None}}, lambda r: r == {"order": None}),
    ({"type": "partial", "keep": 0.5}, lambda r: set(r) == {"order_id", "status"}),
    ({"type": "schema_drift", "rename": {"status": "state"}}, lambda r: "state" in r and "status" not in r),
    ({"type": "garbage", "off_by_one": True}, lambda r: r["amount"] == 26 and r["order_id"] == "4801"),
    ({"type": "garbage", "garbage": "stale"}, lambda r: r == "stale"),
    ({"type": "prompt_injection", "text": "obey me"}, lambda r: r["note"] == "obey me"),
]
ALL = [(f, ("raise", e)) for f, e in [*RAISING, AFTER_WRITE]] + [(f, ("data", c)) for f, c in DATA]
ALL_IDS = [str(f) for f, _ in ALL]


def check(fault: dict[str, Any], expect: tuple[str, Any], seen: list[list[str]], world: World, cap: Any) -> None:
    kind, what = expect
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["gen_ai.tool.call.id"] == "call_1_0" and attrs["chaoskit.fault.type"] == fault["type"]
    if kind == "raise":
        assert seen[0][0] == "error" and what.__name__ in seen[0][1]
        assert world.runs == (["4800"] if fault.get("after_write") else [])
        assert attrs["chaoskit.outcome"] == "error" and attrs["chaoskit.fault.injected"] is True
    else:
        assert seen[0][0] == "success" and what(parse_text(seen[0][1])), seen
        assert attrs["chaoskit.outcome"] == "ok"


# -- chaos_interceptor ----------------------------------------------------------------------------------------


def _interceptor_node(tools: list[BaseTool], plan: Plan) -> ToolNode:
    chaos = chaos_interceptor(plan)
    return ToolNode(tools, handle_tool_errors=True, wrap_tool_call=chaos, awrap_tool_call=chaos.acall)


def _chaos_tool_node(tools: list[BaseTool], plan: Plan) -> ToolNode:
    return ChaosToolNode(tools, plan, handle_tool_errors=True)


# chaos_interceptor makes faults at the interceptor; ChaosToolNode (like instrument_graph) inside the tool run
@pytest.mark.parametrize("make", [_interceptor_node, _chaos_tool_node], ids=["chaos_interceptor", "ChaosToolNode"])
@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize(("fault", "expect"), ALL, ids=ALL_IDS)
def test_tool_node_entry_points(
    fault: dict[str, Any], expect: Any, use_async: bool, async_tool: bool, make: Callable[..., ToolNode]
) -> None:
    world = World(async_tool=async_tool)
    graph = world.graph(lambda tools: make(tools, plan_of(**fault)))
    with capture_spans() as cap:
        seen = run(graph, use_async)
    check(fault, expect, seen, world, cap)


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize(("fault", "expect"), ALL, ids=ALL_IDS)
def test_instrument_graph(fault: dict[str, Any], expect: Any, use_async: bool, async_tool: bool) -> None:
    world = World(async_tool=async_tool)
    graph = world.graph()
    assert instrument_graph(graph) is graph and is_instrumented(graph)
    rec = Recorder()
    with capture_spans() as cap, chaoskit.episode("inst", plan=plan_of(**fault)):
        seen = run(graph, use_async, {"callbacks": [rec]})
    check(fault, expect, seen, world, cap)
    if expect[0] == "raise":  # made inside the tool run: LangChain's callbacks saw a tool error
        assert [type(e) for e in rec.errors] == [expect[1]]


def test_instrument_twice_does_not_double_wrap_and_uninstrument_restores() -> None:
    world = World()
    graph = world.graph()
    (node,) = find_tool_nodes(graph)
    original = node.tools_by_name["lookup"]
    instrument_graph(graph)
    wrapped = node.tools_by_name["lookup"]
    instrument_graph(graph, plan_of(type="error"))
    assert node.tools_by_name["lookup"] is wrapped and is_chaos_tool(wrapped)
    with capture_spans() as cap:
        run(graph, False)
    assert len(attempt_attributes(cap, "lookup")) == 1
    uninstrument_graph(graph)
    assert node.tools_by_name["lookup"] is original and not is_instrumented(graph)
    assert node._wrap_tool_call is None and node._awrap_tool_call is None
    with capture_spans() as cap:
        assert run(graph, False)[0][0] == "success"
    assert attempt_attributes(cap) == []


def test_instrument_graph_without_tool_nodes_says_so() -> None:
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: s)
    g.add_edge(START, "agent")
    with pytest.raises(ValueError, match="no ToolNode"):
        instrument_graph(g.compile())


@pytest.mark.parametrize("use_async", [False, True])
def test_instrument_create_agent_keeps_its_middleware(use_async: bool) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware

    world = World()
    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0.0, backoff_factor=0.0, jitter=False)
    agent = create_agent(world.model, tools=world.tools, middleware=[retry])
    instrument_graph(agent, plan_of(type="error"), irreversible=["lookup"])
    with capture_spans() as cap:
        seen = run(agent, use_async)
    assert seen[0][0] == "success" and world.runs == ["4800"]
    attrs = attempt_attributes(cap, "lookup")
    # the retry middleware is outside chaoskit's layer: every retry is a new attempt of the same call
    assert [(a["chaoskit.attempt"], a["chaoskit.outcome"]) for a in attrs] == [(1, "error"), (2, "ok")]
    assert all(a["gen_ai.tool.call.id"] == "call_1_0" and a["chaoskit.tool.irreversible"] for a in attrs)


@pytest.mark.parametrize("use_async", [False, True])
def test_instrument_create_react_agent(use_async: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
        from langgraph.prebuilt import create_react_agent

        world = World()
        agent = create_react_agent(world.model, tools=world.tools)
    instrument_graph(agent, plan_of(type="partial", items=1, keep=0.5))
    with capture_spans() as cap:
        seen = run(agent, use_async)
    assert set(json.loads(seen[0][1])) == {"order_id", "status"}
    assert attempt_attributes(cap, "lookup")[0]["chaoskit.fault.type"] == "partial"


# -- parallel tool calls ---------------------------------------------------------------------------------------


def _create_agent(world: World) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolErrorMiddleware

    return create_agent(
        world.model, tools=world.tools, middleware=[ToolErrorMiddleware(on_error=lambda e, r: f"Error: {e!r}")]
    )


SETUPS: dict[str, Callable[[World], Any]] = {
    "instrument-statgraph": lambda w: instrument_graph(w.graph()),
    "instrument-create_agent": lambda w: instrument_graph(_create_agent(w)),
    "ChaosToolNode": lambda w: w.graph(lambda tools: ChaosToolNode(tools, handle_tool_errors=True)),
    "chaos_interceptor": lambda w: w.graph(
        lambda tools: ToolNode(
            tools, handle_tool_errors=True, wrap_tool_call=(i := chaos_interceptor()), awrap_tool_call=i.acall
        )
    ),
}


@pytest.mark.parametrize(("use_async", "async_tool"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("setup", list(SETUPS))
def test_parallel_calls_deterministic_indices_and_parents(setup: str, use_async: bool, async_tool: bool) -> None:
    plan = Plan(
        faults=[{"type": "error", "tool": "lookup", "on_call": 2}, {"type": "empty", "tool": "lookup", "on_call": 4}]
    )
    for _ in range(5):
        world = World(async_tool=async_tool, calls=5)
        graph = SETUPS[setup](world)
        with capture_spans() as cap, chaoskit.episode("parallel", plan=plan) as ep:
            seen = run(graph, use_async)
        spans = cap.attempt_spans("lookup")
        index = {
            s.attributes["gen_ai.tool.call.id"]: s.attributes["chaoskit.attempt"]  # type: ignore[index]
            for s in spans
        }
        assert index == {f"call_1_{i}": i + 1 for i in range(5)}
        assert [m[0] for m in seen] == ["success", "error", "success", "success", "success"]
        assert json.loads(seen[3][1])["items"] == []
        root = ep.span.get_span_context().span_id  # type: ignore[union-attr]
        assert all(s.parent is not None and s.parent.span_id == root for s in spans)


def test_tool_spans_are_parents_of_spans_made_inside_the_tool() -> None:
    from opentelemetry import trace

    inner: list[Any] = []

    @tool
    def lookup(order_id: str) -> str:
        """Look up."""
        inner.append(trace.get_current_span().get_span_context().span_id)
        return "ok"

    world = World()
    world.tools = [lookup]
    graph = instrument_graph(world.graph())
    with capture_spans() as cap:
        run(graph, False)
    (span,) = cap.attempt_spans("lookup")
    assert inner == [span.get_span_context().span_id]


# -- LangGraph's default: an unhandled tool error ends the run ---------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
def test_default_handle_tool_errors_crash_is_an_episode_outcome(use_async: bool) -> None:
    world = World()
    graph = instrument_graph(world.graph(lambda tools: ToolNode(tools)))  # LangGraph's default handling
    with (
        capture_spans() as cap,
        pytest.raises(ConnectionResetError),
        chaoskit.episode("crash", plan=plan_of(type="error")) as ep,
    ):
        run(graph, use_async)
    assert ep.outcome == "crashed" and isinstance(ep.error, ConnectionResetError)
    (root,) = [s for s in cap.spans if s.name == "invoke_agent crash"]
    reason = (root.attributes or {})["chaoskit.episode.error"]
    assert str(reason).startswith("agent crashed on a tool error: ConnectionResetError")
    assert "injected error fault" in str(reason) and "handle_tool_errors" in str(reason)
    # the attempt itself is an injected fault, not a chaoskit failure
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.fault.injected"] is True


def test_handle_tool_errors_true_hands_the_error_to_the_model() -> None:
    world = World()
    graph = instrument_graph(world.graph())
    with chaoskit.episode("handled", plan=plan_of(type="error")) as ep:
        seen = run(graph, False)
    assert seen[0][0] == "error" and ep.outcome == "completed"


def test_finds_tool_nodes_in_subgraphs_and_keeps_injected_state_and_runtime() -> None:
    @tool
    def lookup(order_id: str, state: Annotated[dict, InjectedState], runtime: ToolRuntime) -> str:  # type: ignore[type-arg]
        """Look up."""
        return f"{order_id}:{len(state['messages'])}:{runtime.tool_call_id}"

    world = World()
    world.tools = [lookup]
    outer = StateGraph(MessagesState)
    outer.add_node("sub", world.graph(lambda tools: ToolNode(tools)))
    outer.add_edge(START, "sub")
    graph = outer.compile()
    assert len(find_tool_nodes(graph)) == 1
    instrument_graph(graph, plan_of(type="prompt_injection", text="obey", on_call=None))
    with capture_spans() as cap:
        seen = run(graph, False)
    assert seen == [["success", "4800:2:call_1_0\n\nobey"]]
    (attrs,) = attempt_attributes(cap, "lookup")
    assert json.loads(attrs["chaoskit.args"]) == {"order_id": "4800"}  # injected values are not model args
    uninstrument_graph(graph)
    assert run(graph, False) == [["success", "4800:2:call_1_0"]]


def test_sequencer_does_not_wait_forever_for_a_call_that_never_comes() -> None:
    import threading
    import time as _time

    from chaoskit_langchain._common import Sequencer

    ai = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": f"c{i}", "type": "tool_call"} for i in range(3)])
    # a wait long enough that a loaded machine still starts c1 within it (at 0.05 s, c2 sometimes gave up on c1
    # before its thread ran), and a bound far below "forever"
    seq = Sequencer(max_wait_s=1.0)
    order: list[str] = []

    def go(cid: str) -> None:
        ticket = seq.ticket(cid, {"messages": [ai]})
        assert ticket is not None
        ticket.wait()
        order.append(cid)
        ticket.release()

    t0 = _time.perf_counter()
    threads = [threading.Thread(target=go, args=(c,)) for c in ("c2", "c1")]  # c0 never comes
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order == ["c1", "c2"] and _time.perf_counter() - t0 < 30
    # a retry of a call that already took its turn is not ordered again; a lone call is never ordered
    assert seq.ticket("c1", {"messages": [ai]}) is None
    assert seq.ticket("x", {"messages": [AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "x"}])]}) is None
