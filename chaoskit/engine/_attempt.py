"""The attempt engine: decide fault -> record attempt -> run or fake -> record outcome.

Every entry point (``@chaos``, the LangChain tool wrapper, the middleware, the LangGraph interceptor and the
callback handler) goes through :func:`begin` and the returned :class:`Attempt`; :func:`call_sync` and
:func:`call_async` are the two thin drivers for entry points that own the call.

Outcomes: ``ok``; ``error`` when the tool raised, or returned a value its ToolSpec's ``error_result`` calls an
error (then ``chaoskit.tool.refused`` and ``error.type=ReturnedError``, and the value still goes back to the
caller); ``cancelled`` for a ``BaseException`` that is not an ``Exception`` (``asyncio.CancelledError``,
``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``): the run was stopped, the tool did not fail.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.engine._effects as _effects
from chaoskit._errors import ChaosWarning
from chaoskit.engine._context import resolve
from chaoskit.engine._spec import RETURNED_ERROR, AttemptInfo, ToolSpec
from chaoskit.plan._model import _UNSET, _FaultBase
from chaoskit.telemetry import get_tracer

log = logging.getLogger("chaoskit")

__all__ = ["Attempt", "AttemptInfo", "ToolSpec", "begin", "call_async", "call_sync"]


_TRACEPARENT_SET = "TRACEPARENT" in os.environ


def _parent() -> otel_context.Context | None:
    # TRACEPARENT is set by whoever starts the process (e.g. the battery runner), so looking once is enough
    if not _TRACEPARENT_SET or trace.get_current_span().get_span_context().is_valid:
        return None
    from chaoskit.engine._episode import traceparent_context

    return traceparent_context()


class Attempt:
    """One tool attempt in flight: its decision, its span, and how to finish it."""

    __slots__ = (
        "_done",
        "_history",
        "_token",
        "args",
        "before",
        "call_id",
        "episode",
        "executed",
        "fault",
        "fault_index",
        "hash",
        "idem",
        "injected_exc",
        "injected_value",
        "n",
        "refused",
        "scope",
        "skipped",
        "span",
        "spec",
        "start",
    )

    def __init__(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None,
        call_id: str | None,
        *,
        attach: bool,
        cannot_inject: Callable[[_FaultBase], str | None] | None = None,
    ) -> None:
        self.spec = spec
        self.call_id = call_id
        self.executed = False
        self.injected_exc: BaseException | None = None
        self.injected_value: Any = _UNSET
        self._done = False
        plan, scope, episode = resolve(spec.plan)
        self.scope = scope
        self.episode = episode
        self._history = plan is not None and plan.keeps_history(spec.name)
        resolved: Mapping[str, Any] | None
        resolved = args() if callable(args) else args
        self.args = resolved
        self.n, decision = scope.next_call(plan, spec.name, resolved, cannot_inject)
        self.fault: _FaultBase | None = decision[1] if decision else None
        self.fault_index: int | None = decision[0] if decision else None
        self.skipped: str | None = None
        self.refused: str | None = None
        self.span: Any = None
        if self.fault is not None and cannot_inject is not None:
            reason = cannot_inject(self.fault)
            if reason:
                # next_call already left its budget alone (same pure veto)
                self.skip(reason, stacklevel=5, counted=False)
        self.idem = None
        if spec.idempotency_arg and resolved is not None:
            key = resolved.get(spec.idempotency_arg)
            self.idem = None if key is None else str(key)

        self.start = time.time()
        # one attribute dict handed to start_span: the SDK cleans attributes per call, so fewer calls is cheaper
        self.hash: str | None = None
        args_json: str | None = None
        if resolved is not None:
            self.hash, args_json = _attrs.describe_args(resolved, exclude=spec.idempotency_arg)
        try:
            self.span = get_tracer().start_span(
                f"execute_tool {spec.name}",
                context=_parent(),
                kind=SpanKind.INTERNAL,
                attributes=_attrs.start_attributes(self, args_json),
            )
        except Exception:
            # the application's own span processors run inside start_span; theirs to fix, never the agent's
            log.exception("chaoskit: starting the span for %s failed; the call goes on without one", spec.name)
            self.span = trace.INVALID_SPAN
        self._token = otel_context.attach(trace.set_span_in_context(self.span)) if attach else None
        try:
            self.before = _effects.before(
                self.fault, spec.name, scope.first_results.get(spec.name, _UNSET)
            )
        except Exception as exc:
            # a fault parameter that cannot be produced (e.g. a value that cannot be copied): skip that fault
            self.before = _effects.PASS
            self.skip(f"it could not be prepared: {type(exc).__name__}: {exc}")
        if self.before.exc is not None:
            self.injected_exc = self.before.exc
            self.before.exc.__chaoskit_fault__ = self.fault.type if self.fault else None  # type: ignore[attr-defined]
        if self.before.value is not _UNSET:
            self.injected_value = self.before.value

    def skip(self, reason: str, *, stacklevel: int = 2, counted: bool = True) -> None:
        """Do not apply the decided fault, because this entry point cannot produce it here.

        Never a silent skip: a :class:`ChaosWarning` and the span's ``chaoskit.fault.skipped`` both say which
        fault did not happen. Call it before :meth:`transform`; afterwards the attempt runs unfaulted. The
        fault keeps its ``times`` budget: it did not happen, so a later call may still get it.
        """
        fault = self.fault
        if fault is None:
            return
        if counted and self.fault_index is not None:
            self.scope.unfire(self.fault_index, self.spec.name)
        warnings.warn(
            f"chaoskit: fault #{self.fault_index} ({fault.type}) on {self.spec.name} call {self.n} "
            f"was not injected: {reason}", ChaosWarning, stacklevel=stacklevel + 1,
        )
        self.skipped = fault.type
        self.fault = None
        self.fault_index = None
        if self.span is not None and self.span.is_recording():
            self.span.set_attribute("chaoskit.fault.skipped", fault.type)

    # -- the two halves the drivers (and the callback handler) use --------------------------------------

    def transform(self, result: Any) -> Any:
        """Called with the real tool's result: remember it, then apply a data fault (or raise after_write)."""
        self.executed = True
        refused = self.spec.refusal(result)
        if refused is not None:
            # the tool said no by returning an error: nothing was written and there is no data to fault
            self.refused = refused
            if self.fault is not None and self.fault.type != "latency":
                self.skip(f"the tool returned an error instead of a result ({_attrs.cap(refused, 120)})")
            return result
        if self._history:
            self.scope.remember_result(self.spec.name, result)
        fault = self.fault
        if fault is None or fault.type == "latency":
            return result
        if _effects.raises_after(fault):
            exc = _effects.make_exception(fault, self.spec.name)
            self.injected_exc = exc
            exc.__chaoskit_fault__ = fault.type  # type: ignore[attr-defined]
            raise exc
        try:
            out = _effects.after(fault, self.spec.name, result)
        except Exception as exc:
            # a transform that cannot handle this result is chaoskit's limit, not a fault the agent should see
            log.warning("chaoskit: %s could not transform the result of %s", fault.type, self.spec.name,
                        exc_info=True)
            self.skip(f"it cannot transform this result ({type(exc).__name__}: {exc})")
            return result
        self.injected_value = out
        return out

    def succeed(self, result: Any) -> None:
        """The call returned ``result`` (checked for a returned error by :meth:`transform`)."""
        if self._done:
            return
        self._done = True
        span = self.span
        refused = self.refused
        try:
            if span.is_recording():
                attrs: dict[str, Any] = {"chaoskit.outcome": "ok", "chaoskit.tool.executed": self.executed}
                if refused is not None:
                    attrs["chaoskit.outcome"] = "error"
                    attrs["chaoskit.fault.injected"] = False
                    attrs["chaoskit.tool.refused"] = True
                    attrs["error.type"] = RETURNED_ERROR
                if self.injected_value is not _UNSET:
                    attrs["chaoskit.fault.value"] = _attrs.to_attr_json(self.injected_value)
                if _config.CONFIG.record_results:
                    attrs["gen_ai.tool.call.result"] = _attrs.to_text(result, _config.CONFIG.max_attr_chars)
                span.set_attributes(attrs)
                if refused is not None:
                    span.set_status(Status(StatusCode.ERROR, _attrs.cap(refused, 512)))
        finally:
            if refused is None:
                self._end("ok", None, None, False)
            else:
                self._end("error", RETURNED_ERROR, refused, False)

    def fail(self, exc: BaseException) -> None:
        """The call raised ``exc``. A ``BaseException`` that is not an ``Exception`` is recorded as
        ``cancelled``: the caller stopped the run, the tool did not fail."""
        if self._done:
            return
        self._done = True
        span = self.span
        outcome = "error" if isinstance(exc, Exception) else "cancelled"
        injected = exc is self.injected_exc
        try:
            if span.is_recording():
                attrs: dict[str, Any] = {
                    "chaoskit.outcome": outcome,
                    "chaoskit.tool.executed": self.executed,
                    "chaoskit.fault.injected": injected,
                    "error.type": type(exc).__qualname__,
                }
                _attrs.add_http_error(attrs, exc)
                span.set_attributes(attrs)
                span.record_exception(exc)
                if outcome == "error":
                    span.set_status(Status(StatusCode.ERROR, _attrs.cap(str(exc), 512)))
        finally:
            self._end(outcome, type(exc).__qualname__, str(exc), injected)

    # -- the two drivers: identical steps, differing only in how they sleep and await -------------------

    def run_sync(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Carry out this attempt around the real call ``fn(*args, **kwargs)``."""
        try:
            pre = self.before
            if pre.sleep:
                time.sleep(pre.sleep)
            if pre.exc is not None:
                raise pre.exc
            if pre.call:
                self.executed = True
                result = self.transform(fn(*args, **kwargs))
            else:
                result = pre.value
        except BaseException as exc:
            self.fail(exc)
            raise
        self.succeed(result)
        return result

    async def run_async(
        self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Carry out this attempt around the real call ``await fn(*args, **kwargs)``."""
        try:
            pre = self.before
            if pre.sleep:
                await asyncio.sleep(pre.sleep)
            if pre.exc is not None:
                raise pre.exc
            if pre.call:
                self.executed = True
                result = self.transform(await fn(*args, **kwargs))
            else:
                result = pre.value
        except BaseException as exc:
            self.fail(exc)
            raise
        self.succeed(result)
        return result

    def _end(self, outcome: str, error_type: str | None, message: str | None, injected: bool) -> None:
        end = time.time()
        try:
            self.span.end()
        except Exception:
            # span processors of the application run here; a failing one must not lose the attempt record
            log.exception("chaoskit: ending the span of %s failed; ignored", self.spec.name)
        if self._token is not None:
            try:
                otel_context.detach(self._token)
            except Exception:
                pass
        episode = self.episode
        hooks = _config.CONFIG.on_attempt
        if episode is None and not hooks:
            return
        ctx = self.span.get_span_context()
        info = AttemptInfo(
            tool=self.spec.name,
            attempt=self.n,
            outcome=outcome,
            fault_type=self.fault.type if self.fault is not None else None,
            fault_index=self.fault_index,
            error_type=error_type,
            error_message=message,
            injected=injected,
            executed=self.executed,
            irreversible=self.spec.irreversible,
            args_hash=self.hash,
            idempotency_key=self.idem,
            call_id=self.call_id,
            episode_id=episode.id if episode is not None else None,
            start_time=self.start,
            end_time=end,
            span_id=f"{ctx.span_id:016x}" if ctx.is_valid else None,
            trace_id=f"{ctx.trace_id:032x}" if ctx.is_valid else None,
            refused=self.refused is not None,
            idempotent=self.spec.idempotent,
        )
        if episode is not None:
            episode._record(info)
        for hook in hooks:
            try:
                hook(info)
            except Exception:
                log.exception("chaoskit: an on_attempt hook failed; ignored")


def begin(
    spec: ToolSpec,
    args: Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None = None,
    *,
    call_id: str | None = None,
    attach: bool = True,
    cannot_inject: Callable[[_FaultBase], str | None] | None = None,
) -> Attempt:
    """Start one attempt: count the call, decide the fault (pure), open the span.

    ``attach=False`` is for callers that cannot keep the span current for the duration of the call
    (callback handlers, whose start and end run in different frames). ``cannot_inject(fault)`` returns a
    reason when this entry point cannot produce that fault: the fault is then skipped with a
    :class:`ChaosWarning`, recorded on the span as ``chaoskit.fault.skipped``, and keeps its ``times`` budget.
    It must be pure (it is asked while the call is counted and again to word the warning).
    """
    return Attempt(spec, args, call_id, attach=attach, cannot_inject=cannot_inject)


def call_sync(
    spec: ToolSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bound: Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None = None,
    call_id: str | None = None,
) -> Any:
    return begin(spec, bound, call_id=call_id).run_sync(fn, args, kwargs)


async def call_async(
    spec: ToolSpec,
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bound: Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None = None,
    call_id: str | None = None,
) -> Any:
    return await begin(spec, bound, call_id=call_id).run_async(fn, args, kwargs)
