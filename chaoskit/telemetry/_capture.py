"""The one in-memory span capture (tests, the runner), a still-open span read as ended, and the hook to a ``Trace``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

import chaoskit.semconv as sc
from chaoskit.telemetry._otlpjson import to_otlp_json

__all__ = ["SpanCapture", "set_trace_builder", "snapshot"]

_trace_builder: Callable[[Sequence[ReadableSpan]], Any] | None = None


def set_trace_builder(builder: Callable[[Sequence[ReadableSpan]], Any]) -> None:
    """Register the function that reads finished spans as a ``chaoskit.Trace`` (for :meth:`SpanCapture.trace`)."""
    global _trace_builder
    _trace_builder = builder


def snapshot(span: Any, end_time: int | None = None) -> ReadableSpan | None:
    """A still-open SDK span as a finished one would read, ended at ``end_time`` (ns; now by default): for
    grading an episode before its root span ends, so that the verdict can still go on it. None for a span
    that is not the SDK's (a non-recording one)."""
    readable = getattr(span, "_readable_span", None)
    if readable is None or not span.is_recording():
        return None
    r = readable()
    return ReadableSpan(
        name=r.name,
        context=r.context,
        parent=r.parent,
        resource=r.resource,
        attributes=r.attributes,
        events=r.events,
        links=r.links,
        kind=r.kind,
        status=r.status,
        start_time=r.start_time,
        end_time=end_time if end_time is not None else (r.end_time or time.time_ns()),
        instrumentation_scope=r.instrumentation_scope,
    )


class SpanCapture(SpanProcessor):
    """Spans finished while a :func:`chaoskit.telemetry.capture` block is open, in end order.

    The one in-memory capture (``testing.OwnCapture`` and the runner's ``SpanCollector`` choose in
    :meth:`on_end` which spans to keep): a processor, idle when a span starts, so the hot path keeps its bulk
    path (``_bulk.ready``). As the SDK's in-memory exporter, it keeps sampled spans, none after :meth:`shutdown`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[ReadableSpan] = []
        self._stopped = False

    @property
    def processor(self) -> SpanProcessor:
        """The span processor that fills this capture (``telemetry.add_processor(cap.processor)``): itself."""
        return self

    def on_end(self, span: ReadableSpan) -> None:
        """Keep a finished, sampled span."""
        ctx = span.context
        if ctx is not None and ctx.trace_flags.sampled and not self._stopped:
            self.keep(span)

    def keep(self, span: ReadableSpan) -> None:
        """Add ``span`` to the captured spans."""
        with self._lock:
            self._kept.append(span)

    def shutdown(self) -> None:
        """Keep no more spans."""
        self._stopped = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered."""
        return True

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """The spans that ended since the capture started (or was cleared)."""
        with self._lock:
            return tuple(self._kept)

    def attempt_spans(self, tool: str | None = None) -> list[ReadableSpan]:
        """chaoskit's tool attempt spans, optionally of one tool, in start order."""
        out = [
            s
            for s in self.spans
            if (s.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
            and sc.ATTEMPT in (s.attributes or {})
            and (tool is None or (s.attributes or {}).get(sc.GEN_AI_TOOL_NAME) == tool)
        ]
        return sorted(out, key=lambda s: s.start_time or 0)

    def clear(self) -> None:
        """Forget the spans captured so far."""
        with self._lock:
            self._kept.clear()

    def to_otlp_json(self) -> dict[str, Any]:
        """The captured spans as one OTLP-JSON document (``resourceSpans``), as a Collector would export them."""
        return to_otlp_json(self.spans)

    def trace(self) -> Any:
        """The captured spans as a :class:`chaoskit.Trace` (episodes, attempts) for the checks.

        Built by the reader the grading layer registers (:func:`set_trace_builder`, done when a public
        ``chaoskit`` name is first used): this layer sits below the readers and never imports them.
        """
        if _trace_builder is None:
            raise RuntimeError(
                "no trace reader is registered; use chaoskit.telemetry through the chaoskit package (import "
                "chaoskit; chaoskit.telemetry.capture()) or chaoskit.testing.capture_spans() to read captured "
                "spans as a Trace"
            )
        return _trace_builder(self.spans)
