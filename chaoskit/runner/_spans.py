"""Where a battery's spans go: bucketed per episode for grading, and written to ``--traces`` as OTLP-JSON Lines."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from chaoskit._errors import ChaoskitError
from chaoskit.semconv import EPISODE_ID, GEN_AI_OPERATION_NAME, OP_INVOKE_AGENT, RUN_KEY
from chaoskit.telemetry import SpanCapture
from chaoskit.telemetry._filewriter import SpanLines

__all__ = ["SpanCollector", "TraceSink", "current_traceparent"]


class SpanCollector(SpanCapture):
    """The one span capture, bucketed by episode (``chaoskit.episode.id`` or the runner's ``chaoskit.run.key``);
    the spans of no episode are its captured :attr:`spans` (:attr:`other`), kept only with ``keep_other``."""

    def __init__(self, keep_other: bool) -> None:
        super().__init__()
        self.by_key: dict[str, list[ReadableSpan]] = {}
        self.keep_other = keep_other
        #: episode root spans by span id, from their start: a model step (chat span) carries no chaoskit
        #: attribute, so it is filed under the episode of its parent
        self._roots: dict[int, str] = {}

    @property
    def other(self) -> tuple[ReadableSpan, ...]:
        """The spans of no episode (with ``keep_other``), in end order."""
        return self.spans

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        """Remember an episode's root span, so that its model steps can be filed under it."""
        attrs = span.attributes or {}
        eid = attrs.get(EPISODE_ID)
        if isinstance(eid, str) and attrs.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT:
            with self._lock:
                self._roots[span.context.span_id] = eid

    def on_end(self, span: ReadableSpan) -> None:
        """File the span under its episode, or (with ``keep_other``) with the spans of no episode."""
        attrs = span.attributes or {}
        key = attrs.get(EPISODE_ID) or attrs.get(RUN_KEY)
        with self._lock:
            if not isinstance(key, str) and span.parent is not None:
                key = self._roots.get(span.parent.span_id)
            if attrs.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT:
                self._roots.pop(span.context.span_id, None)
            if isinstance(key, str):
                self.by_key.setdefault(key, []).append(span)
                return
        if self.keep_other:
            self.keep(span)

    def pop(self, *keys: str | None) -> list[ReadableSpan]:
        """Take the spans filed under ``keys`` (None keys are skipped)."""
        out: list[ReadableSpan] = []
        with self._lock:
            for k in keys:
                if k is not None:
                    out.extend(self.by_key.pop(k, ()))
        return out

    def shutdown(self) -> None:
        """Nothing to release."""
        return None


class TraceSink(SpanLines):
    """``--traces out.jsonl``: the one span writer, one OTLP-JSON line per episode, the file started anew; with no
    path, nothing is written."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        # with no path, no file is ever opened (writes check for one): os.devnull only fills the slot
        super().__init__(path or os.devnull, mode="w")
        if path:
            try:
                self.open()
            except OSError as exc:
                raise ChaoskitError(f"--traces {self.path}: cannot write: {exc.strerror or exc}") from None

    def write_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Write ``spans`` as one OTLP-JSON line."""
        if self._fh is not None and spans:
            super().write_spans(spans)

    def write_lines(self, lines: Iterable[str]) -> None:
        """Copy OTLP-JSON lines written by a command-line agent, skipping blank ones."""
        if self._fh is not None:
            super().write_lines(line.rstrip("\n") for line in lines if line.strip())


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span (what a command-line agent receives as ``TRACEPARENT``)."""
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent") if otel_trace.get_current_span().get_span_context().is_valid else None
