"""The hot path: the two ends of a tool call that no fault touches, :func:`returned` and :func:`raised`.

A call with no fault needs none of an Attempt's state (what to fake, what to skip, what was injected): the
drivers (:func:`~chaoskit.engine._attempt.call_sync` / :func:`~chaoskit.engine._attempt.call_async`) count and
decide it, open its span (:func:`~chaoskit.engine._span.open_plain`, with tracing on), run the tool, and end
it here, with the same steps as :class:`~chaoskit.engine._attempt.Attempt`: the span steps of
:mod:`chaoskit.engine._span`, then :func:`~chaoskit.engine._steps.record`; the same span and the same record.
With tracing off there is no span (``opened`` is None): no argument is described, and only the record is made.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit.engine._span import Opened, close_error, close_ok, end_span
from chaoskit.engine._spec import RETURNED_ERROR, ToolSpec
from chaoskit.engine._steps import AttemptOutcome, Decision, idempotency_key, keeps, record, suspended

__all__ = ["raised", "returned"]

_detach = otel_context.detach
_now = time.time
_INVALID = trace.INVALID_SPAN
_OK, _ERROR, _CANCELLED = sc.OUTCOME_OK, sc.OUTCOME_ERROR, sc.OUTCOME_CANCELLED


def returned(
    spec: ToolSpec, decision: Decision, call_id: str | None, start: float, opened: Opened | None, result: Any
) -> None:
    """End the call that returned ``result``: an ok attempt, or a returned error (``ToolSpec.refusal``, asked
    once); an ok result is kept for a later ``stale`` fault when the plan asks for it."""
    scope, episode, bound, n, _, keep = decision  # one unpacking costs less than the reads by name
    refused = spec.refusal(result)
    if refused is None and keep and keeps(spec, result):
        scope.remember_result(spec.name, result)
    if opened is None:
        # tracing off: no span (no context token), no arguments described; the record holds the idempotency key
        span, token, args_hash = _INVALID, None, None
        idem = idempotency_key(spec, bound) if spec.idempotency_arg else None
    else:
        span, token, args_hash, idem = opened
    cfg = _config.CONFIG
    try:
        if token is not None and (refused is not None or cfg.record_results):
            close_ok(span, refused, result, {})
    finally:
        if token is not None:
            end_span(spec, span, token)
        if refused is None and episode is not None and not cfg.on_attempt:
            # record()'s commonest case (an episode, no hooks, an ok call): the short record of an ok attempt
            # (chaoskit.engine._info.OK_FIELDS), the span context for its ids (none with tracing off)
            ctx = span.get_span_context() if token is not None else None
            episode._record((spec, n, args_hash, idem, call_id, episode.id, start, _now(), ctx))
        else:
            # an ok call to hand to a hook (or with no episode), or a returned error
            ended = AttemptOutcome(
                episode,
                n,
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


def raised(
    spec: ToolSpec, decision: Decision, call_id: str | None, start: float, opened: Opened | None, exc: BaseException
) -> None:
    """End the call that raised ``exc``: an ``error`` attempt, ``cancelled`` for a ``BaseException`` that is not
    an ``Exception``; or no attempt at all when ``exc`` suspends the call (its span is then dropped unended,
    never exported, and the context restored)."""
    if opened is None:
        # tracing off: no span (no context token), no arguments described; the record holds the idempotency key
        span, token, args_hash = _INVALID, None, None
        idem = idempotency_key(spec, decision.args) if spec.idempotency_arg else None
    else:
        span, token, args_hash, idem = opened
    if suspended(spec, exc, decision.scope, decision.attempt, call_id):
        if token is not None:
            try:
                _detach(token)
            except Exception:
                pass
        return
    outcome = _ERROR if isinstance(exc, Exception) else _CANCELLED
    try:
        if token is not None:
            outcome = close_error(span, exc, True, False)
    finally:
        if token is not None:
            end_span(spec, span, token)
        ended = AttemptOutcome(
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
        )
        record(spec, ended)
