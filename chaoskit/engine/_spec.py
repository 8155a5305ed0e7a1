"""What chaoskit knows about a tool (ToolSpec, with its constant span attributes), and returned errors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit._errors import ConfigError
from chaoskit.engine._attrs import canonical_json

if TYPE_CHECKING:
    from chaoskit.plan._model import Plan

log = logging.getLogger("chaoskit")

__all__ = ["RETURNED_ERROR", "ErrorResult", "ToolSpec", "default_refusal", "refusal_check"]

#: ``error.type`` of an attempt whose tool returned an error value instead of raising (``chaoskit.tool.refused``)
RETURNED_ERROR = "ReturnedError"

#: ``error_result=``: a predicate ``(result) -> bool | str`` (a string is the error message), a key name (a
#: mapping result with that key truthy is an error), ``None`` for the defaults, ``False`` for none at all
ErrorResult = Callable[[Any], Any] | str | bool

_MESSAGE_CHARS = 512


def _text_of(value: Any) -> str:
    """The words of an error value: a string, a list of strings, or the message field of a mapping."""
    if isinstance(value, str):
        return value[:_MESSAGE_CHARS]
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return "; ".join(value)[:_MESSAGE_CHARS]
    if isinstance(value, Mapping):
        for key in ("message", "detail", "reason", "error", "text", "description"):
            inner = value.get(key)
            if isinstance(inner, str) and inner:
                return inner[:_MESSAGE_CHARS]
    return canonical_json(value)[:_MESSAGE_CHARS]


def _mcp_text(content: Any) -> str:
    # an MCP CallToolResult carries its message in text content blocks, as dicts or as objects
    parts: list[str] = []
    if isinstance(content, list | tuple):
        for block in content:
            text = block.get("text") if isinstance(block, Mapping) else getattr(block, "text", None)
            if isinstance(text, str):
                parts.append(text)
    return " ".join(parts)[:_MESSAGE_CHARS] or "the tool returned isError=true"


def _message_text(content: Any) -> str:
    # a LangChain message's content: a string, or a list of strings and {"type": "text", "text": ...} blocks
    if isinstance(content, str):
        return content[:_MESSAGE_CHARS]
    if isinstance(content, list | tuple):
        parts = [b if isinstance(b, str) else b.get("text") if isinstance(b, Mapping) else None for b in content]
        return " ".join(p for p in parts if isinstance(p, str))[:_MESSAGE_CHARS]
    return ""


# results that are never a returned error by the defaults, settled by their exact type alone
_PLAIN_RESULTS = frozenset({str, bytes, int, float, bool, type(None), list, tuple})


def default_refusal(result: Any) -> str | None:
    """The error message when ``result`` is a returned error by the defaults, else None.

    The defaults, the same for every entry point:

    - a dict whose only key is ``error``, with a truthy value;
    - an MCP tool result whose ``isError`` (dict key or attribute) is ``True``;
    - a LangChain ``ToolMessage`` with ``status="error"``, recognised by its shape without importing
      LangChain: an object (not a mapping) whose ``status`` attribute is the string ``"error"`` and that has
      ``content`` and ``tool_call_id`` attributes. Its message is the content's text.

    ``is True`` and the string test keep mocks and other always-truthy attributes out. On the hot path a
    string, number, list or ``None`` result costs one type lookup.
    """
    if type(result) in _PLAIN_RESULTS:
        return None
    if type(result) is dict and "error" not in result and "isError" not in result:
        return None
    if isinstance(result, dict):
        if len(result) == 1 and "error" in result:
            value = result["error"]
            return (_text_of(value) or "error") if value else None
        if result.get("isError") is True:
            return _mcp_text(result.get("content"))
        return None
    if getattr(result, "isError", None) is True:
        return _mcp_text(getattr(result, "content", None))
    status = getattr(result, "status", None)
    if (
        isinstance(status, str)
        and status == "error"
        and not isinstance(result, Mapping)
        and hasattr(result, "tool_call_id")
        and hasattr(result, "content")
    ):
        return _message_text(result.content) or "the tool answered with an error ToolMessage"
    return None


def _never(result: Any) -> str | None:
    return None


def _by_key(key: str) -> Callable[[Any], str | None]:
    def check(result: Any) -> str | None:
        if isinstance(result, Mapping):
            value = result.get(key)
            if value:
                return _text_of(value) or key
        return None

    return check


def _by_predicate(predicate: Callable[[Any], Any], tool: str) -> Callable[[Any], str | None]:
    warned = False

    def check(result: Any) -> str | None:
        nonlocal warned
        try:
            verdict = predicate(result)
        except Exception as exc:
            # a broken predicate is the user's to fix, but it must never break the agent's call
            if not warned:
                warned = True
                log.warning(
                    "chaoskit: the error_result predicate of %s raised %s: %s; its results are taken as successes",
                    tool,
                    type(exc).__name__,
                    exc,
                )
            return None
        if isinstance(verdict, str):
            return verdict[:_MESSAGE_CHARS] or None
        if not verdict:
            return None
        return default_refusal(result) or _text_of(result)

    return check


def refusal_check(error_result: ErrorResult | None, tool: str = "tool") -> Callable[[Any], str | None]:
    """The function that says whether a tool's result is a returned error (its message) or not (None)."""
    if error_result is None or error_result is True:
        return default_refusal
    if error_result is False:
        return _never
    if isinstance(error_result, str):
        if not error_result:
            raise ConfigError(
                "error_result: an empty key name; give the key whose truthy value marks an error "
                "(e.g. 'error'), a predicate (result) -> bool | str, None for the defaults or False"
            )
        return _by_key(error_result)
    if callable(error_result):
        return _by_predicate(error_result, tool)
    raise ConfigError(
        f"error_result: expected a predicate (result) -> bool | str, a key name, None (the defaults) or False "
        f"(no returned errors), got {type(error_result).__name__}"
    )


def check_flag(value: Any, argument: str) -> bool:
    """``value`` when it is a bool, else a ConfigError naming ``argument``."""
    if not isinstance(value, bool):
        raise ConfigError(f"{argument}: expected True or False, got {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What chaoskit knows about a tool; fixed when the tool is wrapped.

    ``idempotent`` declares that repeating a call with the same arguments changes nothing (recorded as
    ``chaoskit.tool.idempotent``). ``error_result`` says which returned values are errors (see
    :data:`ErrorResult`); such an attempt is recorded as ``outcome=error`` with ``chaoskit.tool.refused``.
    ``plan`` may be given as a dict (validated with ``Plan.from_dict`` here). ``suspends`` and
    ``opaque_result`` are for entry points whose framework has control-flow exceptions and non-data results.
    """

    name: str
    irreversible: bool = False
    idempotency_arg: str | None = None
    description: str | None = None
    plan: Plan | None = None
    tool_type: str = "function"
    idempotent: bool = False
    error_result: ErrorResult | None = None
    #: exceptions that suspend a call instead of ending it (LangGraph's ``GraphInterrupt``, raised by
    #: ``interrupt()``): such a call is not an attempt. It leaves no span and no record, gives back its fault's
    #: budget, and keeps its call number for the call that resumes it (same tool, same call id)
    suspends: tuple[type[BaseException], ...] = ()
    #: ``(result) -> reason | None``: a reason when a result is no data a data fault may change (a LangGraph
    #: ``Command``: a handoff or a state update); a data fault on it is skipped, an error fault still applies
    opaque_result: Callable[[Any], str | None] | None = None
    refusal: Callable[[Any], str | None] = field(init=False, repr=False, compare=False)
    #: the attributes every attempt span of this tool starts with, built once here (read-only)
    span_attributes: MappingProxyType[str, Any] = field(init=False, repr=False, compare=False)
    #: the span name, ``execute_tool {name}``
    span_name: str = field(init=False, repr=False, compare=False)
    #: ``span_attributes`` as a plain dict when every value is a ``str`` or ``bool``, else None: the hot path
    #: copies it straight into a span's attribute store (a dict copies several times faster than its proxy)
    _plain_attributes: dict[str, Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"name: a tool name must be a non-empty string, got {self.name!r}")
        check_flag(self.irreversible, "irreversible")
        check_flag(self.idempotent, "idempotent")
        if self.idempotency_arg is not None and (not isinstance(self.idempotency_arg, str) or not self.idempotency_arg):
            raise ConfigError(
                f"idempotency_arg: expected the name of an argument (a string) or None, got {self.idempotency_arg!r}"
            )
        object.__setattr__(self, "plan", _config.as_plan(self.plan, "plan"))
        object.__setattr__(self, "refusal", refusal_check(self.error_result, self.name))
        constant = self._constant_attributes()
        object.__setattr__(self, "span_attributes", MappingProxyType(constant))
        plain = all(type(v) is str or type(v) is bool for v in constant.values())
        object.__setattr__(self, "_plain_attributes", dict(constant) if plain else None)
        object.__setattr__(self, "span_name", f"{sc.OP_EXECUTE_TOOL} {self.name}")
        # every entry point makes a ToolSpec, so this is where a tool becomes known to the
        # "plan names a tool that never exists" warning
        _config.remember_tool(self.name)

    def _constant_attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: self.name,
            sc.GEN_AI_TOOL_TYPE: self.tool_type,
            sc.TOOL_IRREVERSIBLE: self.irreversible,
        }
        if self.idempotent:
            attrs[sc.TOOL_IDEMPOTENT] = True
        if self.description:
            # a fixed limit: the description is part of the tool, not of the settings of the moment
            text = self.description
            cut = text if len(text) <= 512 else text[:492] + f"…[+{len(text) - 492} chars]"
            attrs[sc.GEN_AI_TOOL_DESCRIPTION] = cut
        return attrs
