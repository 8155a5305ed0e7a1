"""chaoskit for LangGraph 1.x: ToolNode interceptors, a chaos ToolNode, and instrumenting compiled graphs."""

# instrument_graph(graph, plan) finds the ToolNodes of an existing compiled graph (a hand-built StateGraph +
# ToolNode, create_react_agent or langchain.agents.create_agent), routes their tools through
# chaoskit_langchain.chaos_tool (every fault type, made inside the tool's run) and installs an interceptor
# that opens attempts in the order the model asked for the calls.

from __future__ import annotations

# first: refuse an unsupported LangGraph release before the integration uses it
from . import _compat  # noqa: F401

# isort: split

from ._graph import (
    ChaosToolNode,
    chaos_interceptor,
    find_tool_nodes,
    instrument_graph,
    is_instrumented,
    uninstrument_graph,
)

__all__ = [
    "ChaosToolNode",
    "chaos_interceptor",
    "find_tool_nodes",
    "instrument_graph",
    "is_instrumented",
    "uninstrument_graph",
]
