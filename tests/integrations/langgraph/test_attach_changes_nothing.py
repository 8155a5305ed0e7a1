"""Attaching chaoskit changes nothing but the faults: the same graph run with and without each entry point, for
every ``handle_tool_errors`` of ``ToolNode``, gives the same messages, the same real tool runs and the same
outcome when the tool really fails; an injected error is handled as the user's handler handles a real one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from _lc_helpers import tool_graph
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tools
from chaoskit_langgraph import ChaosToolNode, instrument_graph
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import Plan, chaos
from examples.support.model import ScriptedChatModel, tool_calls

#: attached, active, and firing on no call these graphs make
QUIET = Plan(faults=[{"tool": "lookup", "type": "error", "on_call": 99}])


def only_value_errors(e: ValueError) -> str:
    return f"value error handled: {e}"


#: every kind of ToolNode(handle_tool_errors=...) LangGraph documents, and the default
HANDLERS: dict[str, Any] = {
    "default": None,
    "true": True,
    "false": False,
    "str": "The tool failed; try again.",
    "callable": lambda e: f"handled: {type(e).__name__}: {e}",
    "typed": only_value_errors,
    "tuple": (ValueError,),
    "type": ValueError,
}
ERRORS: dict[str, Callable[[], Exception]] = {
    "ValueError": lambda: ValueError("bad order id"),
    "ConnectionResetError": lambda: ConnectionResetError("[Errno 104] Connection reset by peer"),
}


def passthrough(request: Any, execute: Callable[[Any], Any]) -> Any:
    return execute(request)


def retry_once(messages: Sequence[BaseMessage]) -> AIMessage:
    """Call lookup; after an error ToolMessage, call it once more; then answer."""
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    if not tools:
        return tool_calls(("lookup", {"order_id": "1"}), turn=1)
    if tools[-1].status == "error" and len(tools) < 2:
        return tool_calls(("lookup", {"order_id": "2"}), turn=2)
    return AIMessage("done: " + json.dumps([m.text for m in tools]))


@dataclass
class Run:
    """What happened: the conversation, the real tool runs, and how the run ended."""

    messages: list[tuple[Any, ...]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    outcome: str = "completed"
    episode: str | None = None


def _shape(m: BaseMessage) -> tuple[Any, ...]:
    if isinstance(m, ToolMessage):
        return ("tool", m.text, m.status, m.tool_call_id, m.name)
    if isinstance(m, AIMessage):
        return ("ai", m.text, [(c["name"], c["args"], c["id"]) for c in m.tool_calls])
    return (m.type, m.text)


def _lookup(runs: list[str], fail: Callable[[], Exception] | None, *, under_chaos: bool = False) -> BaseTool:
    def body(order_id: str) -> str:
        """Look up an order."""
        runs.append(order_id)
        if fail is not None and len(runs) == 1:
            raise fail()
        return f"order {order_id}: shipped"

    body.__name__ = "lookup"
    return tool(chaos(QUIET)(body) if under_chaos else body)


def _run(graph: Any, use_async: bool, run: Run, config: Any = None, plan: Plan | None = None) -> Run:
    inp = {"messages": [HumanMessage("where is my order?")]}
    try:
        if plan is None:
            out = asyncio.run(graph.ainvoke(inp, config)) if use_async else graph.invoke(inp, config)
        else:
            with chaoskit.episode("attach", plan=plan) as ep:
                out = asyncio.run(graph.ainvoke(inp, config)) if use_async else graph.invoke(inp, config)
    except Exception as exc:
        run.outcome = f"raised {type(exc).__name__}: {exc}"
    else:
        run.messages = [_shape(m) for m in out["messages"]]
    if plan is not None:
        run.episode = ep.outcome
    return run


def _node_kwargs(handler: str, wrapper: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = {} if HANDLERS[handler] is None else {"handle_tool_errors": HANDLERS[handler]}
    if wrapper:
        kwargs["wrap_tool_call"] = passthrough
    return kwargs


def without_chaoskit(handler: str, error: str | None, use_async: bool, wrapper: bool = False) -> Run:
    run = Run()
    fail = ERRORS[error] if error else None
    node = ToolNode([_lookup(run.runs, fail)], **_node_kwargs(handler, wrapper))
    return _run(tool_graph(ScriptedChatModel(policy=retry_once), node), use_async, run)


def with_chaoskit(entry: str, handler: str, error: str | None, use_async: bool, wrapper: bool = False) -> Run:
    run = Run()
    fail = ERRORS[error] if error else None
    kwargs = _node_kwargs(handler, wrapper)
    model = ScriptedChatModel(policy=retry_once)
    lookup = _lookup(run.runs, fail, under_chaos=entry == "tool_over_chaos")
    config = None
    if entry == "chaos_tools":
        graph = tool_graph(model, ToolNode(chaos_tools([lookup], QUIET), **kwargs))
    elif entry == "chaos_decorator":
        graph = tool_graph(model, ToolNode([chaos(QUIET)(lookup)], **kwargs))
    elif entry == "tool_over_chaos":
        graph = tool_graph(model, ToolNode([lookup], **kwargs))
    elif entry == "ChaosToolNode":
        graph = tool_graph(model, ChaosToolNode([lookup], QUIET, **kwargs))
    elif entry == "instrument_graph":
        graph = instrument_graph(tool_graph(model, ToolNode([lookup], **kwargs)), QUIET)
    elif entry == "instrument_graph_tool_over_chaos":
        lookup = _lookup(run.runs, fail, under_chaos=True)
        graph = instrument_graph(tool_graph(model, ToolNode([lookup], **kwargs)), QUIET)
    else:
        assert entry == "ChaosCallbackHandler"
        graph = tool_graph(model, ToolNode([lookup], **kwargs))
        config = {"callbacks": [ChaosCallbackHandler(QUIET)]}
    return _run(graph, use_async, run, config, plan=QUIET)


ENTRIES = [
    "chaos_tools",
    "chaos_decorator",
    "tool_over_chaos",
    "ChaosToolNode",
    "instrument_graph",
    "instrument_graph_tool_over_chaos",
    "ChaosCallbackHandler",
]


def assert_same(plain: Run, chaotic: Run) -> None:
    assert chaotic.outcome == plain.outcome
    assert chaotic.messages == plain.messages
    assert chaotic.runs == plain.runs
    # the episode records what really happened: a crash only when the run really ended on the error
    assert chaotic.episode == ("completed" if plain.outcome == "completed" else "crashed")


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("error", [*ERRORS, None])
@pytest.mark.parametrize("handler", list(HANDLERS))
@pytest.mark.parametrize("entry", ENTRIES)
def test_a_real_tool_error_goes_as_without_chaoskit(
    entry: str, handler: str, error: str | None, use_async: bool
) -> None:
    assert_same(without_chaoskit(handler, error, use_async), with_chaoskit(entry, handler, error, use_async))


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("error", list(ERRORS))
@pytest.mark.parametrize("handler", list(HANDLERS))
@pytest.mark.parametrize("entry", ["ChaosToolNode", "instrument_graph"])
def test_with_the_users_own_interceptor_too(entry: str, handler: str, error: str, use_async: bool) -> None:
    plain = without_chaoskit(handler, error, use_async, wrapper=True)
    assert_same(plain, with_chaoskit(entry, handler, error, use_async, wrapper=True))


def test_the_differences_these_tests_catch_are_real() -> None:
    # the matrix above compares against LangGraph's own behaviour: for these handlers a ConnectionResetError
    # ends the run without an interceptor, and becomes a message with one (what chaoskit used to change)
    for handler in ("tuple", "typed", "type"):
        assert without_chaoskit(handler, "ConnectionResetError", False).outcome.startswith("raised Connection")
        assert without_chaoskit(handler, "ConnectionResetError", False, wrapper=True).outcome == "completed"
        assert without_chaoskit(handler, "ValueError", False).outcome == "completed"


def test_uninstrument_gives_the_node_its_own_handle_tool_errors_back() -> None:
    import chaoskit_langgraph._compat as lg_compat
    from chaoskit_langgraph import find_tool_nodes, uninstrument_graph

    own = (ValueError,)
    graph = tool_graph(ScriptedChatModel(policy=retry_once), ToolNode([_lookup([], None)], handle_tool_errors=own))
    (node,) = find_tool_nodes(graph)
    instrument_graph(graph, QUIET)
    assert lg_compat.error_policy(node) is not own  # the equivalent policy, while instrumented
    uninstrument_graph(graph)
    assert lg_compat.error_policy(node) is own and lg_compat.interceptors(node) == (None, None)


def test_a_tool_error_caught_above_the_tool_node_is_no_crash() -> None:
    run = Run()
    lookup = _lookup(run.runs, ERRORS["ConnectionResetError"])
    inner = instrument_graph(tool_graph(ScriptedChatModel(policy=retry_once), ToolNode([lookup])), QUIET)

    def guarded(state: MessagesState) -> dict[str, Any]:
        try:
            return inner.invoke(state)  # type: ignore[no-any-return]
        except ConnectionResetError:
            return {"messages": [AIMessage("sorry, the order lookup is down")]}

    outer = StateGraph(MessagesState)
    outer.add_node("guarded", guarded)
    outer.add_edge(START, "guarded")
    with chaoskit.episode("caught", plan=QUIET) as ep:
        out = outer.compile().invoke({"messages": [HumanMessage("where is my order?")]})
    assert out["messages"][-1].text == "sorry, the order lookup is down"
    assert ep.outcome == "completed"  # the ToolNode re-raised, but the run went on: no crash


# -- an injected error is handled as the user's handler handles the same real error ---------------------------


def _injected(entry: str, handler: str, use_async: bool) -> Run:
    plan = Plan(
        faults=[{"tool": "lookup", "type": "error", "on_call": 1, "error": "[Errno 104] Connection reset by peer"}]
    )
    run = Run()
    kwargs = _node_kwargs(handler, False)
    model = ScriptedChatModel(policy=retry_once)
    lookup = _lookup(run.runs, None)
    if entry == "ChaosToolNode":
        graph = tool_graph(model, ChaosToolNode([lookup], plan, **kwargs))
    elif entry == "instrument_graph":
        graph = instrument_graph(tool_graph(model, ToolNode([lookup], **kwargs)), plan)
    else:
        graph = tool_graph(model, ToolNode(chaos_tools([lookup], plan), **kwargs))
    return _run(graph, use_async, run, plan=plan)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("handler", list(HANDLERS))
@pytest.mark.parametrize("entry", ["chaos_tools", "ChaosToolNode", "instrument_graph"])
def test_an_injected_error_is_handled_as_a_real_one(entry: str, handler: str, use_async: bool) -> None:
    real = without_chaoskit(handler, "ConnectionResetError", use_async)
    injected = _injected(entry, handler, use_async)
    assert injected.outcome == real.outcome
    assert injected.messages == real.messages
    # the injected call did not run the tool: one real run fewer, the same calls after it
    assert injected.runs == real.runs[1:]
    assert injected.episode == ("completed" if real.outcome == "completed" else "crashed")


# -- create_agent: ChaosMiddleware ----------------------------------------------------------------------------


def _agent_run(middleware: list[Any], error: str | None, use_async: bool, plan: Plan | None) -> Run:
    from langchain.agents import create_agent

    run = Run()
    lookup = _lookup(run.runs, ERRORS[error] if error else None)
    agent = create_agent(ScriptedChatModel(policy=retry_once), [lookup], middleware=middleware)
    return _run(agent, use_async, run, plan=plan)


def _error_middleware() -> Any:
    from langchain.agents.middleware import ToolErrorMiddleware

    return ToolErrorMiddleware(on_error=lambda exc, request: f"Error: {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("error", [*ERRORS, None])
@pytest.mark.parametrize("handled", [False, True], ids=["crashes", "ToolErrorMiddleware"])
def test_chaos_middleware_changes_nothing(handled: bool, error: str | None, use_async: bool) -> None:
    users = [_error_middleware()] if handled else []
    plain = _agent_run(users, error, use_async, None)
    chaotic = _agent_run([*users, ChaosMiddleware(QUIET)], error, use_async, QUIET)
    # create_agent's messages carry the same content; compare the conversation and the runs
    assert chaotic.outcome == plain.outcome
    assert chaotic.messages == plain.messages
    assert chaotic.runs == plain.runs
    assert chaotic.episode == ("completed" if plain.outcome == "completed" else "crashed")
