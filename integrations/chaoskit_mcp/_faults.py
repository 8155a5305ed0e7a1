"""The MCP protocol fault types as plan fault types: what ``chaoskit.faults`` entry points name, and their checks.

The core loads these when a plan names one (``chaoskit validate``, a runner's scenario), and keeps each as an
inert :class:`chaoskit.plan.ExtensionFault`; ``chaoskit mcp-proxy`` decides and injects them (see ``_plan``).
A plan naming one needs the ``mcp`` extra, the SDK the proxy runs on: without it, loading says to install it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.plan import FaultParameterError, FaultType, require_modules

from ._plan import PROTOCOL_FAULT_TYPES, problem

__all__ = ["LIST_CHANGED", "MALFORMED_RESULT", "SLOW_INITIALIZE", "TOOL_DISAPPEARS"]

require_modules("mcp")


def _fault_type(name: str, doc: str) -> FaultType:
    def check(values: dict[str, Any], entry: Mapping[str, Any]) -> None:
        found = problem(name, values, entry)
        if found is not None:
            raise FaultParameterError(found[0], f"fault type {name!r}: {found[1]}")

    return FaultType(name, PROTOCOL_FAULT_TYPES[name], check, acts_in="chaoskit mcp-proxy", doc=doc)


LIST_CHANGED = _fault_type(
    "list_changed",
    "after the triggering tools/call, notifications/tools/list_changed; tools in drop leave the tool list",
)
TOOL_DISAPPEARS = _fault_type("tool_disappears", "from the triggering call on, the tool is gone (-32602 Unknown tool)")
SLOW_INITIALIZE = _fault_type("slow_initialize", "the initialize response is held back delay_s")
MALFORMED_RESULT = _fault_type(
    "malformed_result",
    "the tool runs, then its result is replaced by one that breaks the CallToolResult schema",
)
