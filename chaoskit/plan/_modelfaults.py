"""Model fault types: what a model provider does wrong (overload, empty or cut completions, bad tool calls)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from chaoskit.plan._fault_registry import _FaultBase
from chaoskit.plan._fields import Fraction, Seconds

__all__ = [
    "MODEL_ONLY_TYPES",
    "MODEL_TYPES",
    "EmptyCompletionFault",
    "MalformedToolCallFault",
    "OverloadedFault",
    "RefusalFault",
    "TruncatedFault",
    "UnknownToolCallFault",
]

_MODEL: frozenset[str] = frozenset({"model"})
#: the fault types that apply to model calls only (``target: model`` is implied)
MODEL_ONLY_TYPES = (
    "overloaded",
    "empty_completion",
    "truncated",
    "malformed_tool_call",
    "unknown_tool_call",
    "refusal",
)
#: every fault type a ``target: model`` fault may have
MODEL_TYPES = ("rate_limit", "overloaded", "http", "timeout", *MODEL_ONLY_TYPES[1:], "latency")


class OverloadedFault(_FaultBase):
    """The provider is overloaded: HTTP 529 (Anthropic) or 503 (OpenAI and others), maybe with ``retry_after``."""

    type: Literal["overloaded"] = "overloaded"
    status: Literal[529, 503] = 529
    retry_after: Seconds = None
    error: str | None = None
    after_write: ClassVar[bool] = False
    _TARGETS: ClassVar[frozenset[str]] = _MODEL


class EmptyCompletionFault(_FaultBase):
    """The model answers, with no text and no tool calls (finish reason ``stop``)."""

    type: Literal["empty_completion"] = "empty_completion"
    _TARGETS: ClassVar[frozenset[str]] = _MODEL


class TruncatedFault(_FaultBase):
    """The completion is cut by the length limit: the first ``keep`` of its text, no tool calls, finish reason
    ``length``."""

    type: Literal["truncated"] = "truncated"
    keep: Fraction = 0.5
    _TARGETS: ClassVar[frozenset[str]] = _MODEL


class MalformedToolCallFault(_FaultBase):
    """The model's tool calls come with arguments that are not valid JSON (cut in the middle)."""

    type: Literal["malformed_tool_call"] = "malformed_tool_call"
    _TARGETS: ClassVar[frozenset[str]] = _MODEL


class UnknownToolCallFault(_FaultBase):
    """The model calls a tool the agent does not have: its first tool call is renamed ``name`` (one is added
    when it asked for none)."""

    type: Literal["unknown_tool_call"] = "unknown_tool_call"
    name: str = "lookup_internal_records"
    _TARGETS: ClassVar[frozenset[str]] = _MODEL

    @field_validator("name")
    @classmethod
    def _a_name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must be a tool name, e.g. lookup_internal_records")
        return v


class RefusalFault(_FaultBase):
    """The model refuses: its answer is ``text``, with no tool calls (finish reason ``refusal``)."""

    type: Literal["refusal"] = "refusal"
    text: str = "I'm sorry, but I can't help with that request."
    _TARGETS: ClassVar[frozenset[str]] = _MODEL
