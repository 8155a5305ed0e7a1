"""A span file written as each span ends, by a writer thread off the caller's path (the proxies' ``--traces``)."""

from __future__ import annotations

import json
import logging
import queue
import threading
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from chaoskit.telemetry._otlpfast import encode
from chaoskit.telemetry._otlpjson import to_otlp_json

__all__ = ["SpanFileWriter"]

log = logging.getLogger("chaoskit")

_STOP: Any = object()


class SpanFileWriter(SpanProcessor):
    """Append each ended span to an OTLP-JSON Lines file at once (no batching delay), in a writer thread.

    The lines are what ``chaoskit.telemetry.JsonLinesSpanExporter`` writes, encoded without protobuf
    (``_otlpfast``): off the event loop and ten times cheaper, so a busy proxy does not wait for its spans. The
    thread blocks on its queue (no polling) and writes what has queued up as one line.

    ``at_once=True``: no thread; the span is in the file (written and flushed) when ``span.end()`` returns, so
    a process killed right after loses nothing (the MCP proxy ends a call's span before it answers).
    """

    def __init__(self, path: str, *, at_once: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # opened now: a path that cannot be written fails at start, naming the path
        self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._idle = threading.Condition()
        self._pending = 0
        self._at_once = at_once
        self._thread = threading.Thread(target=self._work, name="chaoskit-span-file", daemon=True)
        if not at_once:
            self._thread.start()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Nothing to do at the start."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the span for the writer (or write it now, ``at_once``)."""
        if self._at_once:
            with self._idle:
                self._write([span])
            return
        with self._idle:
            self._pending += 1
        self._queue.put(span)

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            spans = [s for s in batch if s is not _STOP]
            if spans:
                self._write(spans)
            with self._idle:
                self._pending -= len(spans)
                self._idle.notify_all()
            if len(spans) != len(batch):
                return

    def _write(self, spans: list[ReadableSpan]) -> None:
        try:
            try:
                document = encode(spans)
            except TypeError:
                document = to_otlp_json(spans)
            if self._fh is not None:
                self._fh.write(json.dumps(document, separators=(",", ":")) + "\n")
                self._fh.flush()
        except Exception as exc:  # a span file must never stop the proxy
            log.warning("chaoskit: writing spans to %s failed: %s", self.path, exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait until every queued span is in the file."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending <= 0, timeout_millis / 1000)

    def shutdown(self) -> None:
        """Write what is queued, stop the thread, close the file."""
        self.force_flush()
        if not self._at_once:
            self._queue.put(_STOP)
            self._thread.join(timeout=2)
        with self._idle:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
