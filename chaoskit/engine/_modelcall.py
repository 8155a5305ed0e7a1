"""Model calls: count each call of a model per episode and decide its fault, with the plan's triggers.

A model call is counted and decided exactly as a tool call is (:meth:`Scope.next_call`, under the name
:func:`~chaoskit.plan._model.model_key` gives the model, so per model and apart from every tool); the decision
is pure. What the fault does to the call is split in two: :meth:`ModelCall.error` (the exception to raise
instead of calling the model, after :attr:`ModelCall.delay_s`) and :func:`fault_completion` (what a completion
becomes), on plain data, so that each framework integration maps it onto its own message type. chaoskit never
retries a model call: it records each call the agent or its framework makes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import chaoskit.semconv as sc
from chaoskit._errors import ChaosWarning, ModelHTTPError, ModelTimeout, default_http_message
from chaoskit.engine._context import resolve
from chaoskit.engine._effects import mark
from chaoskit.engine._spanattrs import fault_attributes, fault_summary
from chaoskit.plan._faults import (
    EmptyCompletionFault,
    HTTPFault,
    LatencyFault,
    MalformedToolCallFault,
    OverloadedFault,
    RateLimitFault,
    RefusalFault,
    TimeoutFault,
    TruncatedFault,
    UnknownToolCallFault,
    _FaultBase,
)
from chaoskit.plan._model import Plan, model_key

__all__ = ["Completion", "ModelCall", "begin_model_call", "fault_completion"]

#: the name a model's calls are counted under when the integration cannot tell which model it is
UNNAMED = "model"


class Completion(NamedTuple):
    """A model's answer as plain data: ``tool_calls`` are ``{"name", "args", "id"}``; ``invalid_tool_calls``
    ``{"name", "args" (text), "id", "error"}``, as LangChain and the OpenAI API carry unparsable calls."""

    text: str
    tool_calls: list[dict[str, Any]]
    invalid_tool_calls: list[dict[str, Any]]
    finish_reason: str


@dataclass(slots=True)
class ModelCall:
    """One model call: its model, its number among that model's calls, and the fault decided for it
    (``skipped``: the type of a decided fault that :meth:`skip` said could not be applied)."""

    model: str
    n: int
    fault: _FaultBase | None
    fault_index: int | None
    episode: Any
    scope: Any = None
    skipped: str | None = None

    @property
    def delay_s(self) -> float:
        """Seconds to wait before the call (``latency``) or before raising (``timeout``)."""
        fault = self.fault
        if isinstance(fault, LatencyFault):
            return fault.delay_s or 0.0
        if isinstance(fault, TimeoutFault):
            return fault.after_s or 0.0
        return 0.0

    def error(self, convert: Callable[[BaseException], BaseException] | None = None) -> BaseException | None:
        """The exception to raise instead of calling the model (None when the model is called): a
        :class:`ModelHTTPError` or :class:`ModelTimeout`, passed through ``convert`` (an integration's own
        exception types), marked as injected."""
        fault = self.fault
        exc: BaseException
        if isinstance(fault, RateLimitFault | HTTPFault | OverloadedFault):
            msg = fault.error or f"{self.model}: {default_http_message(fault.status, fault.retry_after)}"
            if isinstance(fault, OverloadedFault) and fault.error is None:
                msg = f"{self.model}: HTTP {fault.status} Overloaded: the model is overloaded, try again later"
                if fault.retry_after is not None:
                    msg += f" (Retry-After: {fault.retry_after:g}s)"
            exc = ModelHTTPError(fault.status, msg, retry_after=fault.retry_after)
        elif isinstance(fault, TimeoutFault):
            exc = ModelTimeout(fault.error or f"{self.model} did not respond within {fault.after_s:g}s (read timeout)")
        else:
            return None
        if convert is not None:
            exc = convert(exc)
        mark(exc, fault.type)
        return exc

    def attributes(self) -> dict[str, Any]:
        """The attributes of this call's ``chat`` span: its number, and the fault with its parameters."""
        attrs: dict[str, Any] = {sc.MODEL_CALL: self.n}
        if self.skipped is not None:
            attrs[sc.FAULT_SKIPPED] = self.skipped
        fault = self.fault
        if fault is not None:
            fault_attributes(attrs, fault, self.fault_index)
            attrs[sc.FAULT_TARGET] = "model"
            attrs[sc.FAULT_SUMMARY] = fault_summary(fault, self.fault_index)
            retry_after = getattr(fault, "retry_after", None)
            if retry_after is not None:
                attrs[sc.RETRY_AFTER] = float(retry_after)
            if fault.after_chunks is not None:
                attrs[sc.FAULT_AFTER_CHUNKS] = fault.after_chunks
        return attrs

    def skip(self, reason: str) -> None:
        """The decided fault cannot be applied to this call: never silently (a :class:`ChaosWarning`, and the
        span's ``chaoskit.fault.skipped``); the call goes on unfaulted and the fault keeps its ``times`` budget."""
        fault, index = self.fault, self.fault_index
        if fault is None:
            return
        warnings.warn(
            f"chaoskit: fault #{index} ({fault.type}) on model {self.model} call {self.n} was not injected: {reason}",
            ChaosWarning,
            stacklevel=3,
        )
        if self.scope is not None and index is not None:
            self.scope.unfire(index, model_key(self.model))
        self.skipped, self.fault, self.fault_index = fault.type, None, None


def begin_model_call(model: str | None, *, plan: Plan | None = None) -> ModelCall:
    """Count one call of ``model`` (None: unnamed) in the current episode or activation, and decide its fault
    (pure: the plan's triggers on the call's number, and ``match`` on ``{"model": name}``). ``plan`` pins the
    plan (a proxy's own, as a tool's ``ToolSpec.plan`` does); None: the active one, else ``CHAOSKIT_PLAN``."""
    name = model or UNNAMED
    plan, scope, episode = resolve(plan)
    key = model_key(name)
    n, decision = scope.next_call(plan, key, {"model": name}, None, None if plan is None else plan.rules(key))
    if decision is None:
        return ModelCall(name, n, None, None, episode, scope)
    return ModelCall(name, n, decision[1], decision[0], episode, scope)


def _cut_json(args: Mapping[str, Any] | str | None) -> str:
    text = args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)
    # the first half, never closed: a parser fails on it whatever the arguments were
    return text[: max(1, len(text) // 2)].rstrip("}") or "{"


def fault_completion(
    fault: _FaultBase, text: str, tool_calls: Sequence[Mapping[str, Any]], finish_reason: str = "stop"
) -> Completion | str:
    """What the model's answer (``text``, ``tool_calls``) becomes under a completion fault; a string says why
    the fault cannot apply to this answer (a ``malformed_tool_call`` on an answer that calls no tool)."""
    calls = [dict(c) for c in tool_calls]
    if isinstance(fault, EmptyCompletionFault):
        return Completion("", [], [], "stop")
    if isinstance(fault, TruncatedFault):
        return Completion(text[: int(len(text) * fault.keep)], [], [], "length")
    if isinstance(fault, RefusalFault):
        return Completion(fault.text, [], [], "refusal")
    if isinstance(fault, MalformedToolCallFault):
        if not calls:
            return "the model's answer calls no tool, so there are no tool call arguments to break"
        invalid = [
            {
                "name": c.get("name"),
                "args": _cut_json(c.get("args")),
                "id": c.get("id"),
                "error": "the function arguments are not valid JSON",
            }
            for c in calls
        ]
        return Completion(text, [], invalid, "tool_calls")
    if isinstance(fault, UnknownToolCallFault):
        if calls:
            calls[0]["name"] = fault.name
        else:
            calls = [{"name": fault.name, "args": {}, "id": f"call_chaoskit_{fault.name}"}]
        return Completion(text, calls, [], "tool_calls")
    return Completion(text, calls, [], finish_reason)
