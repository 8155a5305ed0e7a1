"""The one OTLP-JSON Lines span file writer: every ended span reaches the file, written by a thread of its own."""

from __future__ import annotations

import json
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from chaoskit.telemetry._otlpfast import encode
from chaoskit.telemetry._otlpjson import to_otlp_json
from chaoskit.telemetry._sinks import warn_once, why

__all__ = ["DEFAULT_MAX_PENDING", "SpanFileWriter"]

#: spans that may wait for the writer before a tool call that ends one more waits for the writer (back-pressure)
DEFAULT_MAX_PENDING = 4096


class SpanFileWriter(SpanProcessor):
    """Append each ended span to an OTLP-JSON Lines file (the OTel Collector file format), never dropping one.

    A writer thread encodes and appends what has queued up as one ``{"resourceSpans": [...]}`` line, without
    protobuf (``_otlpfast``), so a busy agent or proxy does not wait for its spans. When ``max_pending`` spans
    are waiting, the caller ending one more waits until the writer has caught up to half of that: the file is
    complete at any rate of spans, and memory stays bounded. (The SDK's batch processor would drop them.)

    ``lazy=False`` opens the file now, so a path that cannot be written raises ``OSError`` naming it (the
    proxies' ``--traces``); ``lazy=True`` opens it at the first span and warns once instead (``write_jsonl``).
    A failed write is warned about once and never raised into the agent.

    ``at_once=True``: no thread; the span is in the file (written and flushed) when ``span.end()`` returns, so
    a process killed right after loses nothing (the MCP proxy ends a call's span before it answers).
    """

    def __init__(
        self, path: str, *, lazy: bool = False, max_pending: int = DEFAULT_MAX_PENDING, at_once: bool = False
    ) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = None
        self._failed = False
        if not lazy:
            self._open()
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

    def _open(self) -> IO[str]:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        return self._fh

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Nothing to do at the start."""

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
            try:
                document = encode(spans)
            except TypeError:
                document = to_otlp_json(spans)
            fh = self._open()
            fh.write(json.dumps(document, separators=(",", ":")) + "\n")
            fh.flush()
        except Exception as exc:  # a span file must never stop the agent or the proxy
            self._failed = isinstance(exc, OSError) and self._fh is None
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
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None
