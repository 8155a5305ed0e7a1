"""instrument_graph on the top graph reaches every tool the agent can run, or says loudly which part it cannot."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from _lc_helpers import ORDER, calls_then_reports, plan_of, run, tool_graph
from chaoskit_langgraph import find_tool_nodes, instrument_graph, uninstrument_graph
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import ChaosWarning
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support.model import ScriptedChatModel


def lookup_tool(runs: list[str]) -> BaseTool:
    @tool
    def lookup(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        runs.append(order_id)
        return {**ORDER, "order_id": order_id}

    return lookup


def inner_graph(runs: list[str]) -> Any:
    """The agent that owns the tool: model -> ToolNode(lookup) -> model."""
    model = ScriptedChatModel(policy=calls_then_reports(1))
    return tool_graph(model, ToolNode([lookup_tool(runs)], handle_tool_errors=True))


def outer(node: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("worker", node)
    g.add_edge(START, "worker")
    return g.compile()


def attach(graph: Any, *args: Any, **kwargs: Any) -> list[str]:
    """instrument_graph, returning the ChaosWarnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        instrument_graph(graph, *args, **kwargs)
    return [str(w.message) for w in seen if issubclass(w.category, ChaosWarning)]


def faulted_run(graph: Any) -> tuple[list[list[str]], list[dict[str, Any]], list[str]]:
    """One run under an error fault on lookup's first call: the answer, the attempts and the ChaosWarnings."""
    with warnings.catch_warnings(record=True) as seen, capture_spans() as cap:
        warnings.simplefilter("always")
        with chaoskit.episode("reach", plan=plan_of(type="error")):
            answer = run(graph, False)
    return answer, attempt_attributes(cap, "lookup"), [str(w.message) for w in seen if w.category is ChaosWarning]


# -- reached: graphs that node functions and tools hold ------------------------------------------------------

GLOBAL_RUNS: list[str] = []
GLOBAL_INNER = inner_graph(GLOBAL_RUNS)


def _via_global(state: MessagesState) -> dict[str, Any]:
    return GLOBAL_INNER.invoke(state)  # type: ignore[no-any-return]


def shapes() -> list[tuple[str, Any]]:
    """(name, make) where make(runs) builds an outer graph whose tool runs in an inner agent (and may give the
    list the tool appends to, when it is not ``runs``)."""

    def closure(runs: list[str]) -> Any:
        inner = inner_graph(runs)
        return outer(lambda state: inner.invoke(state))

    def method(runs: list[str]) -> Any:
        class Holder:
            def __init__(self) -> None:
                self.agent = inner_graph(runs)

            def step(self, state: MessagesState) -> dict[str, Any]:
                return self.agent.invoke(state)  # type: ignore[no-any-return]

        return outer(Holder().step)

    def module_global(runs: list[str]) -> Any:
        uninstrument_graph(GLOBAL_INNER)
        GLOBAL_RUNS.clear()
        return outer(_via_global), GLOBAL_RUNS

    def in_tool(runs: list[str]) -> Any:
        inner = inner_graph(runs)

        @tool
        def delegate(task: str) -> str:
            """Hand the task to the inner agent (a subagent run inside a tool, as deepagents' `task` does)."""
            return str(inner.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text)

        def top_policy(messages: list[Any]) -> AIMessage:
            done = [m for m in messages if getattr(m, "name", None) == "delegate"]
            if done:
                return AIMessage(done[-1].text)
            return AIMessage("", tool_calls=[{"name": "delegate", "args": {"task": "look"}, "id": "top_1"}])

        return tool_graph(ScriptedChatModel(policy=top_policy), ToolNode([delegate], handle_tool_errors=True))

    return [("closure", closure), ("bound method", method), ("module global", module_global), ("in a tool", in_tool)]


@pytest.mark.parametrize(("name", "make"), shapes(), ids=[n for n, _ in shapes()])
def test_one_line_reaches_agents_that_node_functions_and_tools_hold(name: str, make: Any) -> None:
    runs: list[str] = []
    graph = make(runs)
    if isinstance(graph, tuple):
        graph, runs = graph
    assert attach(graph) == []  # everything reachable: nothing to warn about
    (node,) = [n for n in find_tool_nodes(graph) if "lookup" in n.tools_by_name]
    assert (node.tools_by_name["lookup"].metadata or {}).get("chaoskit_attached") is True
    answer, attempts, warned = faulted_run(graph)
    # the fault fired at the inner agent's tool, at its first call, made inside the tool's run
    assert [(a["chaoskit.attempt"], a["chaoskit.fault.injected"]) for a in attempts] == [(1, True)]
    assert runs == [] and warned == []
    assert "ConnectionResetError" in str(answer)
    uninstrument_graph(graph)
    assert "chaoskit_attached" not in (node.tools_by_name["lookup"].metadata or {})
    with capture_spans() as cap:
        run(graph, False)
    assert attempt_attributes(cap) == [] and runs == ["4800"]


# -- not reached: said at attach time, and again when the tool runs -------------------------------------------


def test_a_graph_built_while_the_node_runs_is_named_at_attach_time_and_at_run_time() -> None:
    runs: list[str] = []

    def build_and_run(state: MessagesState) -> dict[str, Any]:
        return inner_graph(runs).invoke(state)  # type: ignore[no-any-return]

    g = StateGraph(MessagesState)
    g.add_node("top_tools", ToolNode([lookup_tool([])]))  # the top agent has a tool of the same name
    g.add_node("worker", build_and_run)
    g.add_edge(START, "worker")
    graph = g.compile()
    (message,) = attach(graph, plan_of(type="error"))
    assert "node 'worker'" in message and "build_and_run" in message and "ChaosCallbackHandler" in message
    # before: the top agent's `lookup` made the name known, and nothing at all was said about the inner one
    answer, attempts, warned = faulted_run(graph)
    assert attempts == [] and runs == ["4800"] and answer[0][0] == "success"
    assert len(warned) == 1 and "tool 'lookup' ran without chaoskit" in warned[0]


def test_a_tool_called_outside_every_tool_node_is_named() -> None:
    runs: list[str] = []
    lookup = lookup_tool(runs)
    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([lookup_tool([])]))
    g.add_node("direct", lambda s: {"messages": [AIMessage(str(lookup.invoke({"order_id": "1"})))]})
    g.add_edge(START, "direct")
    (message,) = attach(g.compile())
    assert "node 'direct'" in message and "tool 'lookup'" in message and "chaos_tool(lookup)" in message


def test_a_remote_graph_is_named() -> None:
    from langgraph.pregel.remote import RemoteGraph

    remote = RemoteGraph("refunder", url="http://127.0.0.1:9")  # never contacted: attaching only looks
    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([lookup_tool([])]))
    g.add_node("remote", remote)
    g.add_edge(START, "remote")
    (message,) = attach(g.compile())
    assert "remote graph 'refunder'" in message and "another process" in message


def test_the_usual_agents_attach_without_a_warning_and_run_without_one() -> None:
    from langchain.agents import create_agent

    runs: list[str] = []
    model = ScriptedChatModel(policy=calls_then_reports(1))
    built = [inner_graph(runs), create_agent(model, [lookup_tool(runs)])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        built.append(create_react_agent(model, [lookup_tool(runs)]))
    for graph in built:
        assert attach(graph) == []
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with chaoskit.episode("quiet"):
                run(graph, False)
        assert [w for w in seen if w.category is ChaosWarning] == []
    assert runs == ["4800"] * 3


class _LazyProxy:
    """Like a lazy proxy of a web framework: any attribute it lacks fails with something else than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("working outside of a request context")


def test_an_object_that_fails_when_looked_at_is_named_and_the_walk_goes_on() -> None:
    runs: list[str] = []
    inner = inner_graph(runs)
    proxy = _LazyProxy()

    def worker(state: MessagesState) -> dict[str, Any]:
        assert proxy is not None
        return inner.invoke(state)  # type: ignore[no-any-return]

    (message,) = attach(outer(worker))
    assert "_LazyProxy could not be looked into (RuntimeError: working outside" in message
    assert "ChaosCallbackHandler" in message
    # pytest rewrote the assert above: the walk does not wander into pytest's session (and this module's globals)
    assert [sorted(n.tools_by_name) for n in find_tool_nodes(outer(worker))] == [["lookup"]]


def test_a_huge_agent_stops_the_walk_and_says_so() -> None:
    rows = [[object() for _ in range(500)] for _ in range(250)]  # 125,000 objects: past the walk's budget
    tools = ToolNode([lookup_tool([])])

    def worker(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(str(len(rows)))]}

    g = StateGraph(MessagesState)
    g.add_node("tools", tools)
    g.add_node("worker", worker)
    g.add_edge(START, "worker")
    (message,) = attach(g.compile())
    assert "more than 100000 objects" in message and "the walk stopped" in message


def test_a_tool_that_builds_its_subagent_while_it_runs_is_named_at_attach_time_and_at_run_time() -> None:
    runs: list[str] = []

    @tool
    def delegate(task: str) -> str:
        """Hand the task to a subagent compiled for this call."""
        return str(inner_graph(runs).invoke({"messages": [HumanMessage(task)]})["messages"][-1].text)

    def top_policy(messages: list[Any]) -> AIMessage:
        done = [m for m in messages if getattr(m, "name", None) == "delegate"]
        if done:
            return AIMessage(done[-1].text)
        return AIMessage("", tool_calls=[{"name": "delegate", "args": {"task": "look"}, "id": "top_1"}])

    graph = tool_graph(ScriptedChatModel(policy=top_policy), ToolNode([delegate], handle_tool_errors=True))
    (message,) = attach(graph)
    assert "tool 'delegate'" in message and "calls .invoke" in message and "ChaosCallbackHandler" in message
    _, attempts, warned = faulted_run(graph)
    assert attempts == [] and runs == ["4800"]
    assert len(warned) == 1 and "tool 'lookup' ran without chaoskit" in warned[0]
