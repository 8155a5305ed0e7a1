"""The one OTLP-JSON Lines span writer (:class:`SpanLines`), under every span file chaoskit writes.

Its faces: the span processor writing every ended span (:class:`SpanFileWriter`), the runner's ``--traces``
(``runner._spans.TraceSink``), the SDK exporter (:class:`JsonLinesSpanExporter`) and :func:`write_otlp_json`."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from chaoskit.telemetry._otlpjson import otlp_line
from chaoskit.telemetry._sinks import warn_once, why

__all__ = ["DEFAULT_MAX_PENDING", "JsonLinesSpanExporter", "SpanFileWriter", "SpanLines", "write_otlp_json"]

#: spans that may wait for the writer before a tool call that ends one more waits for the writer (back-pressure)
DEFAULT_MAX_PENDING = 4096


class SpanLines:
    """An OTLP-JSON Lines file of spans, opened at the first write (or :meth:`open`), its directory made.

    ``mode="a"`` appends to what the file holds; ``"w"`` starts it anew when it is opened. After a final
    :meth:`close`, writes are dropped. Errors (``OSError``) are the caller's to report."""

    def __init__(self, path: str | os.PathLike[str], *, mode: str = "a") -> None:
        self.path = Path(path)
        self._mode = mode
        self._fh: IO[str] | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def is_open(self) -> bool:
        """Whether the file has been opened (and not closed)."""
        return self._fh is not None

    def open(self) -> IO[str]:
        """Open the file now (making its directory); raises OSError when it cannot be written."""
        with self._lock:
            return self._open()

    def _open(self) -> IO[str]:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open(self._mode, encoding="utf-8")
        return self._fh

    def write_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Append ``spans`` as one OTLP-JSON line."""
        self.write_lines((otlp_line(spans),))

    def write_lines(self, lines: Iterable[str]) -> None:
        """Append OTLP-JSON lines (each without its newline), then flush."""
        with self._lock:
            if self._closed:
                return
            fh = self._open()
            for line in lines:
                fh.write(line + "\n")
            fh.flush()

    def tell(self) -> int:
        """Where the next line starts (0 when the file is not open)."""
        with self._lock:
            return self._fh.tell() if self._fh is not None else 0

    def close(self, *, final: bool = True) -> None:
        """Close the file; later writes are dropped, or (not ``final``) reopen it."""
        with self._lock:
            self._closed = final
            if self._fh is not None:
                with contextlib.suppress(OSError):
                    self._fh.close()
                self._fh = None


class SpanFileWriter(SpanProcessor):
    """Append each ended span to an OTLP-JSON Lines file (the OTel Collector file format), never dropping one.

    A writer thread encodes and appends what has queued up as one ``{"resourceSpans": [...]}`` line, so a busy
    agent or proxy does not wait for its spans. When ``max_pending`` spans are waiting, the caller ending one
    more waits until the writer has caught up to half of that: the file is complete at any rate of spans, and
    memory stays bounded. (The SDK's batch processor would drop them.)

    ``lazy=False`` opens the file now, so a path that cannot be written raises ``OSError`` naming it (the
    proxies' ``--traces``); ``lazy=True`` opens it at the first span and warns once instead (``write_jsonl``).
    A failed write is warned about once and never raised into the agent.

    ``at_once=True``: no thread; the span is in the file (written and flushed) when ``span.end()`` returns, so
    a process killed right after loses nothing (the MCP proxy ends a call's span before it answers).

    It does nothing when a span starts (the SDK's own ``on_start``, inherited), so a tool call keeps its bulk
    path (``_bulk.ready``) while the file is written.
    """

    def __init__(
        self, path: str, *, lazy: bool = False, max_pending: int = DEFAULT_MAX_PENDING, at_once: bool = False
    ) -> None:
        self._file = SpanLines(path)
        self.path = self._file.path
        self._failed = False
        if not lazy:
            self._file.open()
        self._queue: deque[ReadableSpan] = deque()
        self._max = max(1, max_pending)
        self._cond = threading.Condition()
        #: spans handed over and not yet written (or given up after a write error)
        self._pending = 0
        self._closed = False
        self._at_once = at_once
        self._thread = threading.Thread(target=self._work, name="chaoskit-span-file", daemon=True)
        if not at_once:
            self._thread.start()

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the span for the writer; wait for it first if ``max_pending`` spans are already waiting (or write
        it now, ``at_once``)."""
        with self._cond:
            if self._closed:
                return
            if self._at_once:
                self._write([span])
                return
            if self._pending >= self._max and threading.current_thread() is not self._thread:
                self._cond.wait_for(lambda: self._pending <= self._max // 2 or self._closed)
            self._pending += 1
            self._queue.append(span)
            if self._pending == 1 or self._pending >= self._max:
                self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue) or self._closed)
                if not self._queue and self._closed:
                    return
                spans = list(self._queue)
                self._queue.clear()
            self._write(spans)
            with self._cond:
                self._pending -= len(spans)
                self._cond.notify_all()

    def _write(self, spans: list[ReadableSpan]) -> None:
        if self._failed:
            return
        try:
            self._file.write_spans(spans)
        except Exception as exc:  # a span file must never stop the agent or the proxy
            # a file that could not even be opened is not tried again for every batch
            self._failed = isinstance(exc, OSError) and not self._file.is_open
            warn_once(
                (id(self), "write"),
                "chaoskit: writing spans to %s failed (%s); the agent goes on",
                self.path,
                why(exc),
            )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait until every queued span is in the file."""
        with self._cond:
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._pending <= 0, timeout_millis / 1000)

    def shutdown(self) -> None:
        """Write what is queued, stop the thread, close the file. Spans ending afterwards are not written."""
        self.force_flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if not self._at_once:
            self._thread.join(timeout=2)
        self._file.close()


class JsonLinesSpanExporter(SpanLines, SpanExporter):
    """Append OTLP-JSON lines to a file; failures are logged and reported as FAILURE, never raised."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append ``spans`` to the file as one OTLP-JSON line; a write error is warned about once, never raised."""
        try:
            self.write_spans(spans)
            return SpanExportResult.SUCCESS
        except Exception as exc:
            warn_once(
                (id(self), "export"),
                "chaoskit: writing spans to %s failed (%s); the agent goes on",
                self.path,
                why(exc),
            )
            return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing to do: every export writes and flushes its line."""
        return True

    def shutdown(self) -> None:
        """Close the file (an export after this opens it again)."""
        self.close(final=False)


def write_otlp_json(spans: Iterable[ReadableSpan], path: str | os.PathLike[str]) -> Path:
    """Write ``spans`` to ``path`` as one OTLP-JSON Lines record (handy in tests and reports)."""
    out = SpanLines(path)
    try:
        out.write_spans(list(spans))
    finally:
        out.close()
    return out.path
