"""The attempt engine: decide fault -> record attempt -> run or fake -> record outcome.

Every entry point goes through the same steps: count and decide (:func:`~chaoskit.engine._steps.decide`, pure),
the span steps of :mod:`chaoskit.engine._span`, then :func:`~chaoskit.engine._steps.record`. :func:`call_sync`
and :func:`call_async` are the two thin drivers for entry points that own the call (``@chaos``, the LangChain
tool wrapper); the others (the middleware, the LangGraph interceptor, the callback handler, the proxies)
:func:`begin` an :class:`Attempt` and report its halves.

Outcomes: ``ok``; ``error`` when the tool raised, or returned a value its ToolSpec's ``error_result`` calls an
error (then ``chaoskit.tool.refused`` and ``error.type=ReturnedError``, and the value still goes back to the
caller); ``cancelled`` for a ``BaseException`` that is not an ``Exception`` (``asyncio.CancelledError``,
``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``): the run was stopped, the tool did not fail.

The hot path is one tool call with no fault firing: :func:`call_sync` / :func:`call_async` run it without an
Attempt, ending it with :mod:`chaoskit.engine._plain`, and with tracing off bind no argument that no trigger
reads. A span starts with every attribute it will end with, in one dict; :meth:`Attempt.succeed` and
:meth:`Attempt.fail` set attributes again only when the call went another way.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.engine._effects as _effects
import chaoskit.semconv as sc
from chaoskit._errors import ChaosWarning
from chaoskit.engine._digests import salt_for, text_digests
from chaoskit.engine._info import AttemptInfo
from chaoskit.engine._plain import raised, returned
from chaoskit.engine._span import close_error, close_ok, end_span, open_plain, start_attributes, start_span
from chaoskit.engine._spanattrs import fault_attributes, fault_event, fault_summary
from chaoskit.engine._spec import RETURNED_ERROR, ToolSpec
from chaoskit.engine._steps import (
    Args,
    AttemptOutcome,
    Decision,
    decide,
    idempotency_key,
    keeps,
    record,
    suspended,
)
from chaoskit.plan._faults import _UNSET, _FaultBase

log = logging.getLogger("chaoskit")

__all__ = ["Attempt", "AttemptInfo", "ToolSpec", "begin", "call_async", "call_sync"]

_attach = otel_context.attach
_in_context = trace.set_span_in_context
_now = time.time


class Attempt:
    """One tool attempt in flight: its decision, its span, and how to finish it.

    An entry point that calls the tool itself, where start and end run in different frames (a callback
    handler), reads ``before`` first: ``before.sleep`` (seconds of injected latency), ``before.exc`` (the
    exception to raise instead of calling the tool), ``before.call`` (whether the real tool runs at all) and
    ``before.value`` (what to return when it does not);
    it sets ``executed = True`` once the real tool ran, then reports ``transform``/``succeed``/``fail``.
    """

    # one name a line would cost 20 lines of a module near its size limit
    __slots__ = tuple(
        "_done _history _presumed _token args before call_id caller episode executed fault fault_index hash"  # noqa: SIM905
        " idem injected_exc injected_value n refused scope skipped span spec start".split()
    )

    def __init__(
        self,
        spec: ToolSpec,
        args: Args,
        call_id: str | None,
        *,
        attach: bool,
        cannot_inject: Callable[[_FaultBase], str | None] | None = None,
        _decision: Decision | None = None,
        caller: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.call_id = call_id
        self.caller = caller
        self.executed = False
        self.injected_exc: BaseException | None = None
        self.injected_value: Any = _UNSET
        self._done = False
        self._token: Any = None
        self.span: Any = None
        self.skipped: str | None = None
        self.refused: str | None = None
        self.hash: str | None = None
        tracing = _config.CONFIG.trace
        if _decision is None:
            _decision = decide(spec, args, cannot_inject, tracing, call_id)
        self.scope, self.episode, self.n = _decision.scope, _decision.episode, _decision.attempt
        self.args = resolved = _decision.args
        self._history = _decision.keeps_results
        fired = _decision.fault
        fault = self.fault = fired[1] if fired else None
        self.fault_index: int | None = fired[0] if fired else None
        shown = fault
        if fault is not None and cannot_inject is not None:
            reason = cannot_inject(fault)
            if reason:
                # next_call already left its budget alone (same pure veto)
                self.skip(reason, stacklevel=5, counted=False)
                shown = None
        self.idem = idempotency_key(spec, resolved)
        shown_index = self.fault_index
        self.start = _now()
        if self.fault is None:
            self.before = _effects.PASS
        else:
            self._prepare()
        self._presumed = self.before.call
        if not tracing:
            self.span = trace.INVALID_SPAN
            return
        self.span, self.hash = start_span(spec, self._start_attributes(shown, shown_index), resolved)
        if attach:
            self._token = _attach(_in_context(self.span))

    def _prepare(self) -> None:
        fault = self.fault
        try:
            self.before = _effects.before(fault, self.spec.name, self.scope.first_results.get(self.spec.name, _UNSET))
        except Exception as exc:
            # a fault parameter that cannot be produced (e.g. a value that cannot be copied): skip that fault
            self.before = _effects.PASS
            self.skip(f"it could not be prepared: {type(exc).__name__}: {exc}", stacklevel=3)
            return
        if self.before.exc is not None:
            self.injected_exc = self.before.exc
            _mark(self.before.exc, fault.type if fault else None)
        if self.before.value is not _UNSET:
            self.injected_value = self.before.value

    def _start_attributes(self, fault: _FaultBase | None, index: int | None) -> dict[str, Any]:
        attrs = start_attributes(self.spec, self.n, self._presumed, self.episode, self.call_id, self.idem, self.caller)
        if self.skipped is not None:
            attrs[sc.FAULT_SKIPPED] = self.skipped
        if fault is not None:
            fault_attributes(attrs, fault, index)
            if fault.type == "prompt_injection":
                # under the episode's salt, so that a redacted argument of a later call can be matched to it
                attrs[sc.FAULT_TEXT_DIGESTS] = text_digests(
                    getattr(fault, "text", ""), salt_for(attrs.get(sc.EPISODE_ID))
                )
        return attrs

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
            f"was not injected: {reason}",
            ChaosWarning,
            stacklevel=stacklevel + 1,
        )
        self.skipped = fault.type
        self.fault = None
        self.fault_index = None
        if self.span is not None and self.span.is_recording():
            self.span.set_attribute(sc.FAULT_SKIPPED, fault.type)

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
        fault = self.fault
        if self.spec.opaque_result is not None and not keeps(self.spec, result):
            # a handoff or a state update, not data: a data fault would break it; an error fault still applies
            if fault is not None and fault.type in _effects.DATA:
                self.skip(self.spec.opaque_result(result) or "the result is no data")
                return result
        elif self._history:
            self.scope.remember_result(self.spec.name, result)
        if fault is None or fault.type == "latency":
            return result
        if _effects.raises_after(fault):
            exc = _effects.make_exception(fault, self.spec.name)
            self.injected_exc = exc
            _mark(exc, fault.type)
            raise exc
        try:
            out = _effects.after(fault, self.spec.name, result)
        except Exception as exc:
            # a transform that cannot handle this result is chaoskit's limit, not a fault the agent should see
            log.warning("chaoskit: %s could not transform the result of %s", fault.type, self.spec.name, exc_info=True)
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
            # the span started as ok with the tool run as presumed: only what differs is set now
            attrs: dict[str, Any] = {}
            if self.executed is not self._presumed:
                attrs[sc.TOOL_EXECUTED] = self.executed
            if self.injected_value is not _UNSET and span.is_recording():
                attrs[sc.FAULT_VALUE] = _attrs.to_attr_json(self.injected_value)
            if self.fault is not None:
                # applied and not raising (latency, a data fault): the call succeeded, the event says how
                self._fault_event()
            close_ok(span, refused, result, attrs)
        finally:
            if refused is None:
                self._end(sc.OUTCOME_OK, None, None, False)
            else:
                self._end(sc.OUTCOME_ERROR, RETURNED_ERROR, refused, False)

    def fail(self, exc: BaseException) -> None:
        """The call raised ``exc``. A ``BaseException`` that is not an ``Exception`` is recorded as
        ``cancelled``: the caller stopped the run, the tool did not fail."""
        if self._done:
            return
        self._done = True
        if suspended(self.spec, exc, self.scope, self.n, self.call_id):
            self._suspend()
            return
        outcome = sc.OUTCOME_ERROR if isinstance(exc, Exception) else sc.OUTCOME_CANCELLED
        injected = exc is self.injected_exc
        try:
            fault = self.fault
            described = None
            if fault is not None:
                self._fault_event()
                if injected:
                    described = sc.INJECTED_PREFIX + fault_summary(fault, self.fault_index)
            outcome = close_error(self.span, exc, self.executed, injected, described)
        finally:
            self._end(outcome, type(exc).__qualname__, str(exc), injected)

    def _suspend(self) -> None:
        # not an attempt (the call will be asked again, and counted then): the fault's budget goes back, and
        # the span is dropped unended, so it is never exported; only the context is restored
        if self.fault is not None and self.fault_index is not None:
            self.scope.unfire(self.fault_index, self.spec.name)
        if self._token is not None:
            try:
                otel_context.detach(self._token)
            except Exception:
                pass

    def _fault_event(self) -> None:
        span = self.span
        if self.fault is not None and span.is_recording():
            span.add_event(sc.FAULT_EVENT, fault_event(self.fault, self.fault_index))

    # -- the two drivers: the same steps, differing only in how they sleep and await -----------------------

    def _proceed(self) -> bool:
        """The fake step, once any latency is slept: raise the injected error, or say whether the real tool
        runs (else the faked ``before.value`` is the result)."""
        pre = self.before
        if pre.exc is not None:
            raise pre.exc
        if pre.call:
            self.executed = True
        return pre.call

    def run_sync(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Carry out this attempt around the real call ``fn(*args, **kwargs)``."""
        pre = self.before
        try:
            if pre.sleep:
                time.sleep(pre.sleep)
            if self._proceed():
                # a replayed call: the recording answers instead of the tool; the fault still applies on top
                result = self.transform(invoke(self.episode, self.spec, self.args, self.hash, fn, args, kwargs))
            else:
                result = pre.value
        except BaseException as exc:
            self.fail(exc)
            raise
        self.succeed(result)
        return result

    async def run_async(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Carry out this attempt around the real call ``await fn(*args, **kwargs)``."""
        pre = self.before
        try:
            if pre.sleep:
                await asyncio.sleep(pre.sleep)
            if self._proceed():
                result = self.transform(await ainvoke(self.episode, self.spec, self.args, self.hash, fn, args, kwargs))
            else:
                result = pre.value
        except BaseException as exc:
            self.fail(exc)
            raise
        self.succeed(result)
        return result

    def _end(self, outcome: str, error_type: str | None, message: str | None, injected: bool) -> None:
        end = _now()
        span = self.span
        end_span(self.spec, span, self._token)
        fault = self.fault
        ended = AttemptOutcome(
            self.episode,
            self.n,
            outcome,
            self.start,
            end,
            span.get_span_context(),
            error_type=error_type,
            message=message,
            refused=self.refused is not None,
            fault_type=fault.type if fault is not None else None,
            fault_index=self.fault_index,
            injected=injected,
            executed=self.executed,
            args_hash=self.hash,
            idempotency_key=self.idem,
            call_id=self.call_id,
        )
        record(self.spec, ended)


def invoke(
    episode: Any,
    spec: ToolSpec,
    bound: Any,
    args_hash: str | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """The run step: ``fn(*args, **kwargs)``, or for a replayed call (the episode's recording, ``Episode.answers``)
    its answer, looked up by the arguments hash ``args_hash`` that the call's span holds (None with tracing off):
    the real tool runs only when the recording says so."""
    answers = episode.answers if episode is not None else None
    if answers is None:
        # without keywords, no copy of the empty keyword dict for the call
        return fn(*args, **kwargs) if kwargs else fn(*args)
    return answers.call(spec, bound if not callable(bound) else None, args_hash, fn, args, kwargs)


async def ainvoke(
    episode: Any,
    spec: ToolSpec,
    bound: Any,
    args_hash: str | None,
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """:func:`invoke` for a coroutine function."""
    answers = episode.answers if episode is not None else None
    if answers is None:
        return await fn(*args, **kwargs)
    return await answers.acall(spec, bound if not callable(bound) else None, args_hash, fn, args, kwargs)


# which fault made this exception, for the integrations that turn it into a tool message (injected_fault)
_mark = _effects.mark


def begin(
    spec: ToolSpec,
    args: Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None = None,
    *,
    call_id: str | None = None,
    attach: bool = True,
    cannot_inject: Callable[[_FaultBase], str | None] | None = None,
    caller: Mapping[str, str] | None = None,
) -> Attempt:
    """Start one attempt: count the call, decide the fault (pure), open the span.

    ``args`` is the call's arguments by name, or a function returning them (called only when they are
    needed). ``attach=False`` is for callers that cannot keep the span current for the duration of the call
    (callback handlers, whose start and end run in different frames). ``cannot_inject(fault)`` returns a
    reason when this entry point cannot produce that fault: the fault is then skipped with a
    :class:`ChaosWarning`, recorded on the span as ``chaoskit.fault.skipped``, and keeps its ``times`` budget.
    It must be pure (it is asked while the call is counted and again to word the warning). ``caller`` holds
    what the entry point knows of the call's agent and conversation (``gen_ai.agent.name``,
    ``gen_ai.conversation.id``: string values), put on the span over the episode's own.
    """
    return Attempt(spec, args, call_id, attach=attach, cannot_inject=cannot_inject, caller=caller)


def call_sync(
    spec: ToolSpec,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bound: Args = None,
    call_id: str | None = None,
) -> Any:
    """One attempt around ``fn(*args, **kwargs)``: count and decide, then, with a fault, :func:`begin` and
    :meth:`Attempt.run_sync`; without, the unfaulted call (:mod:`chaoskit.engine._plain`), the same steps with
    none of an Attempt's state. ``bound`` is called only if the span, a trigger or the idempotency key needs
    the arguments."""
    tracing = _config.CONFIG.trace
    decision = decide(spec, bound, None, tracing, call_id)
    if decision.fault is not None:
        return Attempt(spec, bound, call_id, attach=True, _decision=decision).run_sync(fn, args, kwargs)
    start = _now()
    opened = open_plain(spec, decision, call_id) if tracing else None
    try:
        episode = decision.episode
        if episode is None or episode.answers is None:  # invoke()'s commonest case inline: no recording
            result = fn(*args, **kwargs) if kwargs else fn(*args)
        else:
            # a replayed call: answered from the recording, looked up by the arguments hash the span holds
            args_hash = None if opened is None else opened[2]
            result = invoke(episode, spec, decision.args, args_hash, fn, args, kwargs)
    except BaseException as exc:
        raised(spec, decision, call_id, start, opened, exc)
        raise
    returned(spec, decision, call_id, start, opened, result)
    return result


async def call_async(
    spec: ToolSpec,
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bound: Args = None,
    call_id: str | None = None,
) -> Any:
    """:func:`call_sync` for ``await fn(*args, **kwargs)``: the same steps, with :meth:`Attempt.run_async`."""
    tracing = _config.CONFIG.trace
    decision = decide(spec, bound, None, tracing, call_id)
    if decision.fault is not None:
        return await Attempt(spec, bound, call_id, attach=True, _decision=decision).run_async(fn, args, kwargs)
    start = _now()
    opened = open_plain(spec, decision, call_id) if tracing else None
    args_hash = None if opened is None else opened[2]  # a replayed call is looked up by it
    try:
        result = await ainvoke(decision.episode, spec, decision.args, args_hash, fn, args, kwargs)
    except BaseException as exc:
        raised(spec, decision, call_id, start, opened, exc)
        raise
    returned(spec, decision, call_id, start, opened, result)
    return result
