"""chaoskit for the Model Context Protocol: a chaos proxy in front of any MCP server (``chaoskit mcp-proxy``).

Every ``tools/call`` goes through chaoskit's attempt engine (the public ``chaoskit.engine`` interface): the same
plans, faults and ``execute_tool`` spans as ``@chaos``. Importing this package imports no part of the ``mcp``
SDK (so that ``chaoskit mcp-proxy`` without it can say what to install); the names that need the SDK import
it on first use, after checking the installed release (``_compat``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._cli import add_parser
from ._plan import PROTOCOL_FAULT_TYPES, ProtocolFault, load_plan

if TYPE_CHECKING:
    from ._calls import ProxyOptions, ToolCalls, UnknownToolError, UpstreamGone
    from ._serve import ProxySetup, serve_http, serve_stdio

__all__ = [
    "PROTOCOL_FAULT_TYPES",
    "ProtocolFault",
    "ProxyOptions",
    "ProxySetup",
    "ToolCalls",
    "UnknownToolError",
    "UpstreamGone",
    "add_parser",
    "load_plan",
    "serve_http",
    "serve_stdio",
]

_LAZY = {
    "ProxyOptions": "._calls",
    "ToolCalls": "._calls",
    "UnknownToolError": "._calls",
    "UpstreamGone": "._calls",
    "ProxySetup": "._serve",
    "serve_http": "._serve",
    "serve_stdio": "._serve",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chaoskit_mcp' has no attribute {name!r}")
    import importlib

    from . import _compat

    _compat.check_installed()
    return getattr(importlib.import_module(module, __name__), name)
