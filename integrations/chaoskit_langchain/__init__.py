"""chaoskit for LangChain 1.x: chaos tools, ``create_agent`` middleware and a callback handler.

Every entry point goes through chaoskit's attempt engine: the same plans, faults and ``execute_tool`` spans
as ``@chaos``. See ``docs/langchain.md`` for which entry point can inject which fault.
"""

from __future__ import annotations

from ._callbacks import ChaosCallbackHandler
from ._common import ToolErrorMessage
from ._middleware import ChaosMiddleware
from ._tool import chaos_tool, chaos_tools, is_chaos_tool, unwrap_tool

__all__ = [
    "ChaosCallbackHandler",
    "ChaosMiddleware",
    "ToolErrorMessage",
    "chaos_tool",
    "chaos_tools",
    "is_chaos_tool",
    "unwrap_tool",
]
