"""Where the engine's spans hang: a ``TRACEPARENT`` handed down by the process that started this one."""

from __future__ import annotations

import os

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from chaoskit.telemetry import warn_once

__all__ = ["TRACEPARENT_SET", "parent", "traceparent_context"]

_tp_cache: tuple[str, otel_context.Context | None] | None = None
#: TRACEPARENT is set by whoever starts the process (e.g. the battery runner), so looking once is enough
TRACEPARENT_SET = "TRACEPARENT" in os.environ


def traceparent_context() -> otel_context.Context | None:
    """The parent given by a ``TRACEPARENT`` variable (W3C), so a child process joins its runner's trace.

    One that cannot be parsed is ignored, as OpenTelemetry does, with one warning naming the variable.
    """
    global _tp_cache
    value = os.environ.get("TRACEPARENT") if "TRACEPARENT" in os.environ else None
    if not value:
        return None
    cached = _tp_cache
    if cached is not None and cached[0] == value:
        return cached[1]
    ctx: otel_context.Context | None = TraceContextTextMapPropagator().extract({"traceparent": value})
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        warn_once(
            ("TRACEPARENT", value),
            "chaoskit: TRACEPARENT=%r is not a W3C traceparent (expected "
            "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>); ignored, spans start a new trace",
            value[:200],
        )
        ctx = None
    _tp_cache = (value, ctx)
    return ctx


def parent() -> otel_context.Context | None:
    """The parent context for a tool attempt's span: None (the current span) unless a TRACEPARENT applies."""
    if not TRACEPARENT_SET or trace.get_current_span().get_span_context().is_valid:
        return None
    return traceparent_context()
