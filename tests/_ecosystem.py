"""The ecosystem suite's world: agent shapes people build (LangChain and LangGraph factories, hand-built graphs,
deepagents, langgraph-supervisor, langgraph-swarm) around one refund worker, each with every chaoskit entry point
that applies, driven by scripted chat models (no key, no network).

The third-party packages are pinned in ONE place, the ``dev`` extra of pyproject.toml (read here as PINS)."""

from __future__ import annotations

import asyncio
import re
import tomllib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import tool_graph
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tools
from chaoskit_langgraph import ChaosToolNode, instrument_graph
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from examples.support.model import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]

try:  # langchain 1.4+; a venv of the lowest releases our ranges allow has an older one
    from langchain.agents.middleware import ToolErrorMiddleware
except ImportError:  # pragma: no cover - only in such a venv
    pytest.skip(
        f"the ecosystem suite's agents hand tool errors to the model with ToolErrorMiddleware, which langchain "
        f"{metadata.version('langchain')} lacks (1.4+; the pinned deepagents needs 1.4.7+)",
        allow_module_level=True,
    )


def _pins() -> dict[str, str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    found = (re.fullmatch(r"([A-Za-z0-9_.-]+)==([^;\s]+)", spec) for spec in extras)
    wanted = {"deepagents", "langgraph-supervisor", "langgraph-swarm"}
    return {m[1]: m[2] for m in found if m and m[1] in wanted}


#: the third-party agent packages and their exact versions (from the dev extra)
PINS = _pins()


def require(dist: str) -> None:
    """Skip, saying why, when the pinned package is not installed (``pip install -e ".[dev]"`` installs it);
    fail when another version is: the suite's verdicts hold for the pinned one."""
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist}=={PINS[dist]} is not installed (it is in the dev extra: pip install -e '.[dev]')")
    assert installed == PINS[dist], f"{dist} {installed} is installed; the ecosystem suite is pinned to {PINS[dist]}"


#: the refund worker's tools: `refund` is the irreversible write, its idempotency key optional
IRREVERSIBLE = ["refund"]
KEYS = {"refund": "idempotency_key"}
ORDER = "4832"


def _on_error(exc: Exception, request: Any) -> str:
    return f"Error: {type(exc).__name__}: {exc}"


class World:
    """The tools' side effects and the calls the worker's model asked for, for one run.

    ``mode`` is the worker's policy: ``careful`` (a key, reports failures), ``double`` (no key, refunds twice),
    ``retry`` (retries a failed refund at once, up to three times), ``bluff`` (claims success after a failure).
    ``real_error`` makes the refund tool itself raise (a real failure, not a fault)."""

    def __init__(self, mode: str = "careful", *, real_error: bool = False) -> None:
        self.mode = mode
        self.real_error = real_error
        self.runs: list[str] = []
        self.asked: list[str] = []

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append("lookup")
            return {"order_id": order_id, "status": "paid", "amount": 25}

        @tool
        def refund(order_id: str, amount: float, idempotency_key: str | None = None) -> dict[str, Any]:
            """Refund an order (irreversible)."""
            if self.real_error:
                raise ValueError("card processor declined the refund")
            self.runs.append("refund")
            return {"refunded": amount, "order_id": order_id}

        self.lookup, self.refund = lookup, refund

    def tools(self) -> list[BaseTool]:
        return [self.lookup, self.refund]

    def _call(self, name: str, args: dict[str, Any], n: int) -> AIMessage:
        self.asked.append(name)
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"w{n}", "type": "tool_call"}])

    def worker(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The refund worker's model: lookup, refund, then an answer (per ``mode``)."""
        mine = [m for m in messages if isinstance(m, ToolMessage) and m.name in ("lookup", "refund")]
        refunds = [m for m in mine if m.name == "refund"]
        args: dict[str, Any] = {"order_id": ORDER, "amount": 25}
        if self.mode != "double":
            args["idempotency_key"] = f"refund-{ORDER}"
        if not any(m.name == "lookup" for m in mine):
            return self._call("lookup", {"order_id": ORDER}, len(mine))
        if not refunds:
            return self._call("refund", args, len(mine))
        if refunds[-1].status == "error":
            if self.mode == "retry" and len(refunds) < 3:
                return self._call("refund", args, len(mine))
            if self.mode == "bluff":
                return AIMessage(f"Done: the refund of $25 for order {ORDER} was issued successfully.")
            return AIMessage(f"I could not refund order {ORDER}: the refund failed ({refunds[-1].text[:60]}).")
        if self.mode == "double" and len(refunds) == 1:
            return self._call("refund", args, len(mine))  # "to be sure": the repeated keyless write
        return AIMessage(f"Refunded $25 for order {ORDER}.")


# -- entry points ----------------------------------------------------------------------------------------------

NONE, TOOLS, NODE, GRAPH, MIDDLEWARE, CALLBACK = (
    "none",
    "chaos_tools",
    "ChaosToolNode",
    "instrument_graph",
    "ChaosMiddleware",
    "ChaosCallbackHandler",
)
ENTRY_POINTS = [TOOLS, NODE, GRAPH, MIDDLEWARE, CALLBACK]


@dataclass
class Built:
    """An agent ready to run: the top graph, the config of its runs, how to read its final answer."""

    graph: Any
    config: dict[str, Any] = field(default_factory=dict)


class Kit:
    """How one entry point is attached while a shape is built: the worker's tools, its ToolNode, its middleware.

    With ``attach=False`` the shape is built exactly as for ``entry`` (the same factory, the same ToolNode
    options), without chaoskit: the uninstrumented agent that entry point is compared with."""

    def __init__(self, world: World, entry: str, *, attach: bool = True, handle_errors: bool = True) -> None:
        self.world, self.entry = world, entry
        self.attach = attach and entry != NONE
        #: tool errors go back to the model (handle_tool_errors=True, ToolErrorMiddleware); else the defaults,
        #: under which a tool error ends the run
        self.handle_errors = handle_errors

    def _is(self, entry: str) -> bool:
        return self.attach and self.entry == entry

    def tools(self, extra: Sequence[BaseTool] = ()) -> list[BaseTool]:
        mine = self.world.tools()
        if self._is(TOOLS):
            mine = chaos_tools(mine, irreversible=IRREVERSIBLE, idempotency_args=KEYS)
        return [*mine, *extra]

    def tool_node(self, extra: Sequence[BaseTool] = ()) -> ToolNode:
        options = {"handle_tool_errors": True} if self.handle_errors else {}
        if self._is(NODE):
            return ChaosToolNode(self.tools(extra), irreversible=IRREVERSIBLE, idempotency_args=KEYS, **options)
        return ToolNode(self.tools(extra), **options)

    def middleware(self) -> list[Any]:
        errors: list[Any] = [ToolErrorMiddleware(_on_error)] if self.handle_errors else []
        if self._is(MIDDLEWARE):
            return [*errors, ChaosMiddleware(irreversible=IRREVERSIBLE, idempotency_args=KEYS)]
        return errors

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(policy=self.world.worker)

    def finish(self, graph: Any) -> Built:
        if self._is(GRAPH):
            instrument_graph(graph, irreversible=IRREVERSIBLE, idempotency_args=KEYS)
        config: dict[str, Any] = {}
        if self._is(CALLBACK):
            config["callbacks"] = [ChaosCallbackHandler(irreversible=IRREVERSIBLE, idempotency_args=KEYS)]
        return Built(graph, config)


# -- agent shapes ----------------------------------------------------------------------------------------------


def _react(model: Any, tools: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, tools, **kw)


def _final_text(messages: Sequence[BaseMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, AIMessage) and m.text and not m.tool_calls:
            return m.text
    return ""


def shape_create_agent(kit: Kit) -> Built:
    return kit.finish(create_agent(kit.model(), kit.tools(), middleware=kit.middleware()))


def shape_create_react_agent(kit: Kit) -> Built:
    return kit.finish(_react(kit.model(), kit.tool_node()))


def shape_state_graph(kit: Kit) -> Built:
    return kit.finish(tool_graph(kit.model(), kit.tool_node()))


def _outer(node: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("worker", node)
    g.add_edge(START, "worker")
    return g.compile()


def shape_subgraph_node(kit: Kit) -> Built:
    return kit.finish(_outer(tool_graph(kit.model(), kit.tool_node())))


def shape_node_function(kit: Kit) -> Built:
    inner = tool_graph(kit.model(), kit.tool_node())

    def call_worker(state: MessagesState) -> dict[str, Any]:
        return {"messages": inner.invoke(state)["messages"][len(state["messages"]) :]}

    return kit.finish(_outer(call_worker))


def deep_top(messages: Sequence[BaseMessage]) -> AIMessage:
    """The top deep agent's model: hand the refund to the `refunder` subagent, then repeat its answer."""
    done = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "top_task"]
    if done:
        return AIMessage(done[-1].text)
    args = {"description": f"Refund order {ORDER} in full.", "subagent_type": "refunder"}
    return AIMessage("", tool_calls=[{"name": "task", "args": args, "id": "top_task", "type": "tool_call"}])


def shape_deepagents(kit: Kit) -> Built:
    require("deepagents")
    from deepagents import create_deep_agent

    # the top agent has a tool of the same name as the subagent's (issue 23: then not even a warning appeared)
    @tool("refund")
    def top_refund(order_id: str, amount: float, idempotency_key: str | None = None) -> str:
        """Refund an order from the top agent (never called here)."""
        raise AssertionError("the top agent's refund is never called in this suite")

    spec = {
        "name": "refunder",
        "description": "Refunds orders.",
        "system_prompt": "You refund orders.",
        "model": kit.model(),
        "tools": kit.tools(),
        "middleware": kit.middleware(),
    }
    top_tools = chaos_tools([top_refund]) if kit._is(TOOLS) else [top_refund]
    agent = create_deep_agent(model=ScriptedChatModel(policy=deep_top), tools=top_tools, subagents=[spec])
    return kit.finish(agent)


def _worker(kit: Kit, name: str, extra: Sequence[BaseTool] = ()) -> Any:
    if kit.entry == NODE:
        return _react(kit.model(), kit.tool_node(extra), name=name)
    return create_agent(kit.model(), kit.tools(extra), middleware=kit.middleware(), name=name)


def shape_supervisor(kit: Kit) -> Built:
    require("langgraph-supervisor")
    from langgraph_supervisor import create_supervisor

    def boss(messages: Sequence[BaseMessage]) -> AIMessage:
        if any(isinstance(m, ToolMessage) and m.name == "transfer_to_refunder" for m in messages):
            return AIMessage(_final_text(messages))
        return AIMessage("", tool_calls=[{"name": "transfer_to_refunder", "args": {}, "id": "sup_1"}])

    workflow = create_supervisor([_worker(kit, "refunder")], model=ScriptedChatModel(policy=boss))
    return kit.finish(workflow.compile())


def shape_swarm(kit: Kit) -> Built:
    require("langgraph-swarm")
    from langgraph_swarm import create_handoff_tool, create_swarm

    def alice(messages: Sequence[BaseMessage]) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "transfer_to_bob", "args": {}, "id": "alice_1"}])

    to_bob, to_alice = create_handoff_tool(agent_name="bob"), create_handoff_tool(agent_name="alice")
    router = create_agent(ScriptedChatModel(policy=alice), [to_bob], name="alice")
    bob = _worker(kit, "bob", [to_alice])
    return kit.finish(create_swarm([router, bob], default_active_agent="alice").compile())


#: (shape, builder, the entry points that apply to it)
SHAPES: list[tuple[str, Callable[[Kit], Built], list[str]]] = [
    ("create_agent", shape_create_agent, [TOOLS, GRAPH, MIDDLEWARE, CALLBACK]),
    ("create_react_agent", shape_create_react_agent, [TOOLS, NODE, GRAPH, CALLBACK]),
    ("StateGraph+ToolNode", shape_state_graph, [TOOLS, NODE, GRAPH, CALLBACK]),
    ("subgraph node", shape_subgraph_node, [TOOLS, NODE, GRAPH, CALLBACK]),
    ("graph in a node function", shape_node_function, [TOOLS, NODE, GRAPH, CALLBACK]),
    ("deepagents subagent", shape_deepagents, [TOOLS, GRAPH, MIDDLEWARE, CALLBACK]),
    ("supervisor worker", shape_supervisor, [TOOLS, NODE, GRAPH, MIDDLEWARE, CALLBACK]),
    ("swarm worker", shape_swarm, [TOOLS, NODE, GRAPH, MIDDLEWARE, CALLBACK]),
]
BUILDERS = {name: make for name, make, _ in SHAPES}


def run(built: Built, *, use_async: bool = False) -> tuple[str, str | None]:
    """Run once with the task (``ainvoke`` with ``use_async``); (final answer, the type of the exception that
    ended the run, if one did)."""
    task = {"messages": [HumanMessage(f"Please refund order {ORDER}.")]}
    try:
        if use_async:
            out = asyncio.run(asyncio.wait_for(built.graph.ainvoke(task, built.config), timeout=60))
        else:
            out = built.graph.invoke(task, built.config)
    except Exception as exc:
        return "", type(exc).__name__
    return _final_text(out["messages"]), None
