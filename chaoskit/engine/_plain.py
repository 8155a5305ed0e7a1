"""The hot path: a tool call that no fault touches, run and recorded without an Attempt, and the span steps.

The span steps (start, close as ok or as an error, end) are shared with :class:`~chaoskit.engine._attempt.Attempt`.

A call with no fault needs none of an Attempt's state (what to fake, what to skip, what was injected), so
:func:`plain_sync` / :func:`plain_async`, given the call counted and decided by
:func:`~chaoskit.engine._steps.decide`, open its span with every attribute it will end with, run it, and
record it, as :meth:`Attempt.run_sync` would, with the same span and the same record. With tracing off the
drivers run :func:`~chaoskit.engine._steps.lean_end` instead: no span, no argument described.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit.engine._digests import add_redacted_digests
from chaoskit.engine._spanattrs import add_http_error
from chaoskit.engine._spec import RETURNED_ERROR, ToolSpec
from chaoskit.engine._steps import AttemptOutcome, Decision, idempotency_key, keeps, record, records, suspended
from chaoskit.engine._tracing import TRACEPARENT_SET, parent
from chaoskit.telemetry import bulk_tracer, get_tracer
from chaoskit.telemetry._bulk import SDK_SPAN, put, store_of

log = logging.getLogger("chaoskit")

__all__ = [
    "close_error",
    "close_ok",
    "end_span",
    "plain_async",
    "plain_sync",
    "record_error",
    "start_attributes",
    "start_span",
]

_INTERNAL = SpanKind.INTERNAL
_attach = otel_context.attach
_detach = otel_context.detach
_in_context = trace.set_span_in_context
_INVALID = trace.INVALID_SPAN
_now = time.time
_OK, _ERROR, _CANCELLED = sc.OUTCOME_OK, sc.OUTCOME_ERROR, sc.OUTCOME_CANCELLED
# the attribute names of the hot path, as module constants (one look-up each, not two)
_ATTEMPT, _OUTCOME, _EXECUTED, _EPISODE_ID = sc.ATTEMPT, sc.OUTCOME, sc.TOOL_EXECUTED, sc.EPISODE_ID
_ARGS, _ARGS_HASH = sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.ARGS_HASH
_REDACTED = _attrs.REDACTED


def start_attributes(
    spec: ToolSpec,
    n: int,
    executed: bool,
    episode: Any,
    call_id: str | None,
    idem: str | None,
    caller: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The attributes an attempt span starts with, fault aside: the tool's constant ones (built once, when it
    was wrapped), the episode's (its agent and conversation), the caller's (``caller``: the agent and
    conversation an integration found on the call, which win) and the call's own, in one dict."""
    attrs = spec.span_attributes.copy()
    attrs[sc.ATTEMPT] = n
    attrs[sc.OUTCOME] = _OK
    attrs[sc.TOOL_EXECUTED] = executed
    if episode is not None:
        attrs[sc.EPISODE_ID] = episode.id
        if episode.tool_attributes:
            attrs.update(episode.tool_attributes)
    if caller:
        attrs.update(caller)
    if call_id:
        attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id
    if idem is not None:
        attrs[sc.IDEMPOTENCY_KEY] = idem
    return attrs


def start_span(spec: ToolSpec, attrs: dict[str, Any], args: Mapping[str, Any] | None) -> tuple[Any, str | None]:
    """Start the attempt span of ``spec`` with ``attrs`` and, when the span records, the description and hash
    of ``args``: ``(span, args hash)``. A failure in the application's span processors gives a non-recording
    span (logged), never an error in the agent's call.

    The attributes are set in one call: through ``start_span`` (where the sampler and processors see them),
    or, where nothing reads them before the span has started, stored at once (:func:`chaoskit.telemetry.
    _bulk.put`), the arguments described only once the span is known to record."""
    args_hash: str | None = None
    try:
        tracer = get_tracer()
        if bulk_tracer() is tracer:
            span = tracer.start_span(spec.span_name, parent() if TRACEPARENT_SET else None, _INTERNAL)
            if span.is_recording():
                if args is not None:
                    args_hash = _describe(spec, attrs, args)
                put(span, attrs)
            return span, args_hash
        # the arguments are described now when the span surely records, else only once it does
        eager = args is not None and records(tracer)
        if args is not None and eager:
            args_hash = _describe(spec, attrs, args)
        span = tracer.start_span(spec.span_name, context=parent(), kind=_INTERNAL, attributes=attrs)
        if args is not None and not eager and span.is_recording():
            late: dict[str, Any] = {}
            args_hash = _describe(spec, late, args)
            span.set_attributes(late)
        return span, args_hash
    except Exception:
        # the application's own span processors run inside start_span; theirs to fix, never the agent's
        log.exception("chaoskit: starting the span for %s failed; the call goes on without one", spec.name)
        return _INVALID, args_hash


def _describe(spec: ToolSpec, attrs: dict[str, Any], args: Mapping[str, Any]) -> str:
    # the hash and the bounded JSON of the arguments, in one encoding, under the standard name and its alias
    args_hash, text = _attrs.describe_args(args, exclude=spec.idempotency_arg, exact=spec.irreversible)
    attrs[_ARGS] = text
    attrs[_config.CONFIG.args_alias] = text
    attrs[sc.ARGS_HASH] = args_hash
    if _REDACTED in text:
        add_redacted_digests(attrs, args, _config.CONFIG.is_secret)
    return args_hash


def close_ok(span: Any, refused: str | None, result: Any, attrs: dict[str, Any]) -> None:
    """Add to a recording span what a call that returned ``result`` changes of its start attributes (``attrs``:
    what the caller adds, e.g. a faked value): a returned error (``refused``), the result when recorded."""
    if not span.is_recording():
        return
    if refused is not None:
        attrs[sc.OUTCOME] = _ERROR
        attrs[sc.FAULT_INJECTED] = False
        attrs[sc.TOOL_REFUSED] = True
        attrs[sc.ERROR_TYPE] = RETURNED_ERROR
    cfg = _config.CONFIG
    if cfg.record_results:
        # the conventions record gen_ai.tool.call.result for a successful execution only: what a refused
        # attempt returned (its error value, which a replay gives back) has a name of its own
        name = sc.GEN_AI_TOOL_CALL_RESULT if refused is None else sc.TOOL_REFUSAL
        attrs[name] = _attrs.to_text(result, cfg.max_output_chars)
        if not isinstance(result, str):
            # a replay (chaoskit.replay) must give back a value, not its JSON text
            attrs[sc.TOOL_RESULT_JSON] = True
    if attrs:
        span.set_attributes(attrs)
    if refused is not None:
        span.set_status(Status(StatusCode.ERROR, _attrs.cap(refused, 512)))


def close_error(span: Any, exc: BaseException, executed: bool, injected: bool, description: str | None = None) -> str:
    """Record on a recording span that the call raised ``exc``; the outcome (``error``, or ``cancelled`` for a
    ``BaseException`` that is not an ``Exception``: the run was stopped, the tool did not fail).

    The error status's description is ``description`` (an injected fault's ``injected: ...``), else the
    exception's message."""
    outcome = _ERROR if isinstance(exc, Exception) else _CANCELLED
    if span.is_recording():
        attrs: dict[str, Any] = {
            sc.OUTCOME: outcome,
            sc.TOOL_EXECUTED: executed,
            sc.FAULT_INJECTED: injected,
            sc.ERROR_TYPE: type(exc).__qualname__,
        }
        add_http_error(attrs, exc)
        record_error(span, exc, attrs, description)
    return outcome


def record_error(span: Any, exc: BaseException, attrs: dict[str, Any], description: str | None = None) -> None:
    """Set ``attrs`` and the exception ``exc`` on a recording span, with an ERROR status (a cancelled attempt
    too: it carries ``error.type``, and the conventions tie the two) described by ``description`` or the
    exception's message.

    The exception goes in the ``exception`` span event, or, with ``gen_ai_latest_experimental`` (span events
    are deprecated, OTEP 4430), in ``exception.type`` and ``exception.message`` on the span itself, where the
    graders read it back (docs/semconv.md)."""
    message = str(exc)
    if _config.CONFIG.latest_genai:
        attrs[sc.EXCEPTION_TYPE] = type(exc).__qualname__
        attrs[sc.EXCEPTION_MESSAGE] = _attrs.cap(message, 1024)
        span.set_attributes(attrs)
    else:
        span.set_attributes(attrs)
        span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, _attrs.cap(description or message, 512)))


def end_span(spec: ToolSpec, span: Any, token: Any) -> None:
    """End the span and make its parent current again; a failing span processor is logged, never raised."""
    try:
        span.end()
    except Exception:
        # span processors of the application run here; a failing one must not lose the attempt record
        log.exception("chaoskit: ending the span of %s failed; ignored", spec.name)
    if token is not None:
        try:
            _detach(token)
        except Exception:
            pass


def _open(spec: ToolSpec, decision: Decision, call_id: str | None) -> tuple[Any, str | None, str | None]:
    """:func:`start_span` with :func:`start_attributes` for an unfaulted call, the common case inline (one frame
    where there were five: this runs on every traced call): ``(span, args hash, idempotency key)``."""
    args = decision.args
    idem = idempotency_key(spec, args) if spec.idempotency_arg else None
    attrs = spec.span_attributes.copy()
    attrs[sc.ATTEMPT] = decision.attempt
    attrs[sc.OUTCOME] = _OK
    attrs[sc.TOOL_EXECUTED] = True
    episode = decision.episode
    if episode is not None:
        attrs[sc.EPISODE_ID] = episode.id
        if episode.tool_attributes:
            attrs.update(episode.tool_attributes)
    if call_id:
        attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id
    if idem is not None:
        attrs[sc.IDEMPOTENCY_KEY] = idem
    args_hash: str | None = None
    try:
        tracer = bulk_tracer()
        if tracer is None:
            span, args_hash = start_span(spec, attrs, args)
            return span, args_hash, idem
        span = tracer.start_span(spec.span_name, parent() if TRACEPARENT_SET else None, _INTERNAL)
        if span.is_recording():
            if args is not None:
                args_hash = _describe(spec, attrs, args)
            put(span, attrs)
        return span, args_hash, idem
    except Exception:
        # as in start_span: the application's span processors are theirs to fix, never the agent's
        log.exception("chaoskit: starting the span for %s failed; the call goes on without one", spec.name)
        return _INVALID, args_hash, idem


def _bound_args(decision: Decision) -> Mapping[str, Any] | None:
    # the call's arguments by name, when the entry point gave them (a function giving them is not called here)
    bound = decision.args
    return bound if bound is not None and not callable(bound) else None


def _call(
    spec: ToolSpec, decision: Decision, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], h: Any
) -> Any:
    """``fn(*args, **kwargs)``, or its answer from the episode's cassette, looked up by the arguments hash ``h``
    that the call's span already holds (chaoskit.replay)."""
    episode = decision.episode
    if episode is None or episode.answers is None:
        return fn(*args, **kwargs)
    return episode.answers.call(spec, _bound_args(decision), h, fn, args, kwargs)


def plain_sync(
    spec: ToolSpec,
    decision: Decision,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call_id: str | None,
) -> Any:
    """Run ``fn(*args, **kwargs)`` as a traced attempt that :func:`~chaoskit.engine._steps.decide` found no
    fault for (with tracing off, the drivers run :func:`~chaoskit.engine._steps.lean_end` instead).

    The commonest call (no call id or idempotency key, a span that takes its attributes in bulk, an ok
    result, an episode, no hooks) runs in this one frame, with what :func:`_open` and :func:`_returned` do
    inline; any other goes through them. The span and the record are the same either way."""
    start = _now()
    tracer = bulk_tracer()
    episode, n = decision.episode, decision.attempt
    if tracer is None or call_id is not None or spec.idempotency_arg:
        span, args_hash, idem = _open(spec, decision, call_id)
        token = _attach(_in_context(span))
        try:
            result = _call(spec, decision, fn, args, kwargs, args_hash)
        except BaseException as exc:
            _raised(spec, decision, span, token, exc, start, args_hash, idem, call_id)
            raise
        _returned(spec, decision, span, token, result, spec.refusal(result), start, args_hash, idem, call_id)
        return result
    args_hash = None
    try:
        span = tracer.start_span(spec.span_name, parent() if TRACEPARENT_SET else None, _INTERNAL)
        if type(span) is SDK_SPAN:  # started, so recording
            bound = decision.args
            text = None
            if bound is not None:
                args_hash, text = _attrs.describe_args(bound, exclude=None, exact=spec.irreversible)
            eid = episode.id if episode is not None else None
            constant = spec._plain_attributes
            # the span's own attribute dict, filled in place: every value here is a str, bool or int
            target = store_of(span) if constant is not None and (episode is None or type(eid) is str) else None
            if target is None or constant is None:
                attrs = {**spec.span_attributes, _ATTEMPT: n, _OUTCOME: _OK, _EXECUTED: True}
            else:
                attrs = target
                attrs.update(constant)
                attrs[_ATTEMPT], attrs[_OUTCOME], attrs[_EXECUTED] = n, _OK, True
            if episode is not None:
                attrs[_EPISODE_ID] = eid
                if episode.tool_attributes:  # the episode's agent and conversation (strings, checked when set)
                    attrs.update(episode.tool_attributes)
            if text is not None:
                attrs[_ARGS] = attrs[_config.CONFIG.args_alias] = text  # args_alias: chaoskit.args, or _ARGS
                attrs[_ARGS_HASH] = args_hash
                if _REDACTED in text:
                    add_redacted_digests(attrs, bound, _config.CONFIG.is_secret)
            if attrs is not target:
                put(span, attrs)
        elif span.is_recording():
            # not the SDK's own span after all: the general path's attributes
            attrs = start_attributes(spec, n, True, episode, None, None)
            if decision.args is not None:
                args_hash = _describe(spec, attrs, decision.args)
            span.set_attributes(attrs)
    except Exception:
        log.exception("chaoskit: starting the span for %s failed; the call goes on without one", spec.name)
        span = _INVALID
    token = _attach(_in_context(span))
    try:
        if episode is None or episode.answers is None:  # without keywords, no copy of the empty keyword dict
            result = fn(*args, **kwargs) if kwargs else fn(*args)
        else:  # a replayed call: answered from the recording, looked up by the hash the span holds
            result = episode.answers.call(spec, _bound_args(decision), args_hash, fn, args, kwargs)
    except BaseException as exc:
        _raised(spec, decision, span, token, exc, start, args_hash, None, None)
        raise
    refused = spec.refusal(result)
    if refused is not None or episode is None or _config.CONFIG.on_attempt or decision.keeps_results:
        _returned(spec, decision, span, token, result, refused, start, args_hash, None, None)
        return result
    # _returned() inline for an ok result with nothing to keep, set or hand to a hook
    if _config.CONFIG.record_results:
        try:
            close_ok(span, None, result, {})
        finally:
            end_span(spec, span, token)
            episode._record((spec, n, args_hash, None, None, episode.id, start, _now(), span.get_span_context()))
        return result
    # end_span() inline: nothing to set at the end, the commonest call
    try:
        span.end()
    except Exception:
        log.exception("chaoskit: ending the span of %s failed; ignored", spec.name)
    try:
        _detach(token)
    except Exception:
        pass
    # the short record of an ok attempt (chaoskit.engine._info.OK_FIELDS)
    episode._record((spec, n, args_hash, None, None, episode.id, start, _now(), span.get_span_context()))
    return result


async def plain_async(
    spec: ToolSpec,
    decision: Decision,
    fn: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call_id: str | None,
) -> Any:
    """:func:`plain_sync` for ``await fn(*args, **kwargs)``."""
    start = _now()
    span, args_hash, idem = _open(spec, decision, call_id)
    token = _attach(_in_context(span))
    answers = decision.episode.answers if decision.episode is not None else None
    try:
        if answers is None:
            result = await fn(*args, **kwargs)
        else:
            result = await answers.acall(spec, _bound_args(decision), args_hash, fn, args, kwargs)
    except BaseException as exc:
        _raised(spec, decision, span, token, exc, start, args_hash, idem, call_id)
        raise
    _returned(spec, decision, span, token, result, spec.refusal(result), start, args_hash, idem, call_id)
    return result


def _returned(
    spec: ToolSpec,
    decision: Decision,
    span: Any,
    token: Any,
    result: Any,
    refused: str | None,
    start: float,
    args_hash: str | None,
    idem: str | None,
    call_id: str | None,
) -> None:
    # refused: spec.refusal(result), asked once by the caller
    if refused is None and decision.keeps_results and keeps(spec, result):
        decision.scope.remember_result(spec.name, result)
    try:
        if refused is not None or _config.CONFIG.record_results:
            close_ok(span, refused, result, {})
    finally:
        end_span(spec, span, token)
        episode = decision.episode
        if refused is None and episode is not None and not _config.CONFIG.on_attempt:
            # record() inline for the commonest case (an episode, no hooks, an ok call): AttemptInfo's fields
            # in order, the span context for its ids
            episode._record(
                (
                    spec.name,
                    decision.attempt,
                    _OK,
                    None,
                    None,
                    None,
                    None,
                    False,
                    True,
                    spec.irreversible,
                    args_hash,
                    idem,
                    call_id,
                    episode.id,
                    start,
                    _now(),
                    span.get_span_context(),
                    False,
                    spec.idempotent,
                )
            )
        else:
            # an ok call to hand to a hook (or with no episode), or a returned error
            ended = AttemptOutcome(
                episode,
                decision.attempt,
                _OK if refused is None else _ERROR,
                start,
                _now(),
                span.get_span_context(),
                error_type=None if refused is None else RETURNED_ERROR,
                message=refused,
                refused=refused is not None,
                args_hash=args_hash,
                idempotency_key=idem,
                call_id=call_id,
            )
            record(spec, ended)


def _raised(
    spec: ToolSpec,
    decision: Decision,
    span: Any,
    token: Any,
    exc: BaseException,
    start: float,
    args_hash: str | None,
    idem: str | None,
    call_id: str | None,
) -> None:
    if suspended(spec, exc, decision.scope, decision.attempt, call_id):
        # not an attempt: its span is dropped unended (never exported), the context restored
        if token is not None:
            try:
                _detach(token)
            except Exception:
                pass
        return
    outcome = _ERROR if isinstance(exc, Exception) else _CANCELLED
    try:
        outcome = close_error(span, exc, True, False)
    finally:
        end_span(spec, span, token)
        record(
            spec,
            AttemptOutcome(
                decision.episode,
                decision.attempt,
                outcome,
                start,
                _now(),
                span.get_span_context(),
                error_type=type(exc).__qualname__,
                message=str(exc),
                args_hash=args_hash,
                idempotency_key=idem,
                call_id=call_id,
            ),
        )
