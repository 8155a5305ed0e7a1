"""From an agent's tools to a fault battery: tool discovery, classification and scenario generation.

Public for describer packages (``chaoskit.describers`` entry points): :class:`ToolInfo`, :class:`Param`,
:class:`SuggestError`, :data:`EVERY_TOOL`, :func:`register_describer`, :func:`tool_from_callable`.
"""

from __future__ import annotations

from chaoskit.suggest._battery_writer import FAULTS
from chaoskit.suggest._classify import classify
from chaoskit.suggest._discover import DESCRIBER_GROUP, discover, discover_ref, register_describer, tool_from_callable
from chaoskit.suggest._findings import declared_findings
from chaoskit.suggest._suggest import Suggestion, declared_for, suggest
from chaoskit.suggest._tool_info import EVERY_TOOL, Classification, Decision, McpServer, Param, SuggestError, ToolInfo

__all__ = [
    "DESCRIBER_GROUP",
    "EVERY_TOOL",
    "FAULTS",
    "Classification",
    "Decision",
    "McpServer",
    "Param",
    "SuggestError",
    "Suggestion",
    "ToolInfo",
    "classify",
    "declared_findings",
    "declared_for",
    "discover",
    "discover_ref",
    "register_describer",
    "suggest",
    "tool_from_callable",
]
