"""``chaoskit suggest`` for LangGraph: the tools of every ToolNode in a compiled graph (its public ``tools_by_name``).

Registered under the ``chaoskit.describers`` entry-point group; each tool is read by chaoskit_langchain's describer.
"""

from __future__ import annotations

from typing import Any

from chaoskit_langchain._describe import describe_tool
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel

from chaoskit.suggest import ToolInfo

from ._compat import tools_of
from ._graph import find_tool_nodes

__all__ = ["describe"]


def describe(obj: Any) -> list[ToolInfo] | None:
    """The tools of a compiled graph or a ToolNode (an empty list for a graph without one); None for anything else."""
    if isinstance(obj, ToolNode):
        nodes = [obj]
    elif isinstance(obj, Pregel):
        nodes = find_tool_nodes(obj)
    else:
        return None
    return [describe_tool(t, source="langgraph") for node in nodes for t in tools_of(node).values()]
