"""OTLP export that never holds the agent up: batches off the hot path, failures logged once, a bounded flush.

:class:`BoundedExport` is the SDK's ``BatchSpanProcessor`` (a tool call only appends its span to a queue; a
background thread encodes and sends) with three guarantees added:

- **A bounded wait.** Flushing and shutting down each wait at most the export bound (:func:`export_timeout`:
  5 s by default, ``CHAOSKIT_EXPORT_TIMEOUT`` or ``configure(export_timeout=...)``), whatever the backend does
  and whatever ``OTEL_EXPORTER_OTLP_TIMEOUT`` says, and not at all once the backend has failed, is retrying,
  or let a wait run out. What is still unsent at exit is given up (retries aborted, the export thread left
  behind as a daemon), and one warning says how many spans were not delivered and where the local copy is.
- **Failures logged once.** The first failed export is one line on the ``chaoskit`` logger; the exporter's
  own per-retry log lines, emitted while chaoskit's export runs, are dropped.
- **A dead backend costs nothing more.** After a failed export the next batches are dropped unsent (and
  counted) for a pause that doubles, from 1 s to 30 s, until an export succeeds again: no encoding, no
  connection attempts, no retries competing with the agent for the interpreter.

A full queue drops the newest span (counted, not logged per span), unless the export blocks
(``CHAOSKIT_EXPORT_BLOCK=1`` or ``export_otlp(block=True)``, for load tests where a complete backend copy matters
more than latency): then the tool call that ends a span waits for room, at most the export bound. Spans
delivered or not, chaoskit's local sinks (the runner's report, ``--traces``, ``CHAOSKIT_TRACES_FILE``) are fed
separately and keep every span.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from chaoskit.telemetry._sinks import log, warn_once, why

__all__ = [
    "DEFAULT_EXPORT_TIMEOUT",
    "EXPORT_BLOCK_ENV",
    "EXPORT_TIMEOUT_ENV",
    "BoundedExport",
    "export_timeout",
    "local_copies",
    "note_local_copy",
    "set_export_timeout",
    "shutdown_all",
]

#: seconds a flush or the shutdown at exit may wait for the backend, unless set otherwise
DEFAULT_EXPORT_TIMEOUT = 5.0
#: the environment variable that sets that bound, in seconds
EXPORT_TIMEOUT_ENV = "CHAOSKIT_EXPORT_TIMEOUT"
#: the environment variable that makes a full export queue wait for room instead of dropping (``1``)
EXPORT_BLOCK_ENV = "CHAOSKIT_EXPORT_BLOCK"

#: the loggers of the SDK's exporters and batch processor: their lines inside chaoskit's export are dropped
_EXPORT_LOGGERS = (
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.sdk._shared_internal",
)
_PAUSE_MIN, _PAUSE_MAX = 1.0, 30.0
#: how often a bounded wait looks whether the backend has failed meanwhile
_POLL_S = 0.05
#: how long giving up may wait for the exporter's own shutdown (closing its connections)
_GIVE_UP_S = 0.5

_set_timeout: float | None = None
_local: list[str] = []
_live: weakref.WeakSet[BoundedExport] = weakref.WeakSet()
_inside = threading.local()


def export_timeout() -> float:
    """The export bound in seconds: ``configure(export_timeout=...)``, else ``CHAOSKIT_EXPORT_TIMEOUT``, else 5.

    A value of the variable that is not a number of seconds >= 0 is warned about once and 5 is used."""
    if _set_timeout is not None:
        return _set_timeout
    raw = os.environ.get(EXPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_EXPORT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        warn_once(
            EXPORT_TIMEOUT_ENV,
            "chaoskit: %s=%r is not a number of seconds >= 0; using %g",
            EXPORT_TIMEOUT_ENV,
            raw,
            DEFAULT_EXPORT_TIMEOUT,
        )
        return DEFAULT_EXPORT_TIMEOUT
    return value


def set_export_timeout(seconds: float | None) -> None:
    """Set the export bound (checked by ``configure``); None goes back to the environment or the default."""
    global _set_timeout
    _set_timeout = seconds


def note_local_copy(path: str | os.PathLike[str]) -> None:
    """Name a file that holds every span locally (``--traces``, ``CHAOSKIT_TRACES_FILE``) for the warning."""
    text = os.fspath(path)
    if text not in _local:
        _local.append(text)


def local_copies() -> tuple[str, ...]:
    """The local span files named so far."""
    return tuple(_local)


#: the SDK's retry wording around the reason itself ("Transient error X encountered while ..., retrying in 1s.")
_RETRY_WORDS = re.compile(r"^Transient error |,? retrying in [0-9.]+s\.?| encountered while exporting [^,]*")


def _reason(message: str) -> str:
    """The SDK's log line about a failed export, reduced to its reason and capped."""
    text = _RETRY_WORDS.sub("", message).strip()
    return text if len(text) <= 300 else text[:299] + "…"


class _Quiet(logging.Filter):
    """Drops the SDK exporters' log lines emitted inside chaoskit's own export (keeping the first's text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        gate = getattr(_inside, "gate", None)
        if gate is None:
            return True
        if record.levelno >= logging.WARNING:
            gate.troubled = True
            if gate.reason is None:
                gate.reason = _reason(record.getMessage())
        return False


_QUIET = _Quiet()
for _name in _EXPORT_LOGGERS:
    logging.getLogger(_name).addFilter(_QUIET)


class _Gate(SpanExporter):
    """Wraps the real exporter: counts what was delivered, logs the first failure, pauses after failures."""

    def __init__(self, exporter: SpanExporter, where: str) -> None:
        self.exporter = exporter
        self.where = where
        self.delivered = 0
        self.failed = 0
        self.reason: str | None = None
        #: the backend failed (or an export is retrying) since the last delivery
        self.troubled = False
        self.given_up = False
        self._pause = 0.0
        self._until = 0.0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send ``spans`` unless giving up or paused after a failure; never raises."""
        if self.given_up or time.monotonic() < self._until:
            self.failed += len(spans)
            return SpanExportResult.FAILURE
        _inside.gate = self
        try:
            result = self.exporter.export(spans)
        except Exception as exc:
            self.reason = self.reason or why(exc)
            result = SpanExportResult.FAILURE
        finally:
            _inside.gate = None
        if result is SpanExportResult.SUCCESS:
            self.delivered += len(spans)
            self._pause = 0.0
            self.troubled = False
            return result
        self.failed += len(spans)
        self.troubled = True
        self._pause = min(_PAUSE_MAX, max(_PAUSE_MIN, self._pause * 2))
        self._until = time.monotonic() + self._pause
        warn_once(
            (id(self), "failed"),
            "chaoskit: exporting spans to %s failed (%s); the agent goes on, further failures are not "
            "logged, and every span is still kept locally%s",
            self.where,
            self.reason or "the exporter gave no reason",
            _where_local(),
        )
        return result

    def give_up(self) -> None:
        """Stop sending: abort the exporter's retries; batches still coming are dropped and counted. Once."""
        if self.given_up:
            return
        self.given_up = True
        # in a thread of its own, bounded too: an exporter whose shutdown blocks must not hold the agent
        _within(_GIVE_UP_S, self._shutdown_quietly, "chaoskit-export-give-up")

    def _shutdown_quietly(self) -> None:
        _inside.gate = self
        try:
            self.exporter.shutdown()
        finally:
            _inside.gate = None

    def shutdown(self) -> None:
        """Shut the real exporter down (once)."""
        self.give_up()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here."""
        return True


class BoundedExport(BatchSpanProcessor):
    """A batch span processor whose flush and shutdown wait at most the export bound (see the module)."""

    def __init__(self, exporter: SpanExporter, where: str, *, block: bool | None = None, **options: Any) -> None:
        self.gate = _Gate(exporter, where)
        #: a full queue makes the caller wait for room (at most the export bound) instead of dropping the span
        self.block = block if block is not None else os.environ.get(EXPORT_BLOCK_ENV, "").strip() == "1"
        super().__init__(self.gate, **options)
        self._queue = self._batch_processor._queue
        self._max_queue = self._queue.maxlen or 2048
        self._emit = self._batch_processor.emit
        self._awaken = self._batch_processor._worker_awaken
        #: spans handed to this processor, and those dropped because its queue was full
        self.handed = 0
        self.dropped = 0
        self._closed = False
        _live.add(self)

    def on_end(self, span: ReadableSpan) -> None:
        """Queue a finished span for export: one append, the sending is the background thread's."""
        ctx = span.context
        if ctx is None or not ctx.trace_flags.sampled:
            return
        self.handed += 1
        if len(self._queue) >= self._max_queue and not (self.block and self._room()):
            self.dropped += 1
            return
        self._emit(span)

    def _room(self) -> bool:
        """Wait (blocking mode) until the queue has room, at most the export bound; whether it has."""
        deadline = time.monotonic() + export_timeout()
        while len(self._queue) >= self._max_queue:
            if self._closed or self.gate.given_up or time.monotonic() >= deadline:
                return False
            self._awaken.set()
            time.sleep(0.001)
        return True

    def _troubled(self) -> bool:
        return self.gate.troubled

    @property
    def undelivered(self) -> int:
        """Spans handed over and not (yet) delivered."""
        return max(0, self.handed - self.gate.delivered)

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        """Send what is queued, waiting at most ``timeout_millis`` and the export bound, whichever is less."""
        if self._closed or self.gate.troubled:
            # a backend that is failing (or retrying) gets no wait: the export thread goes on without us
            return False
        bound = export_timeout()
        if timeout_millis is not None:
            bound = min(bound, max(0.0, timeout_millis / 1000))
        done = _within(bound, self._batch_processor.force_flush, "chaoskit-export-flush", self._troubled)
        if done is None and not self.gate.troubled:
            # no answer within the bound: from now on it is a failing backend (no more waiting, at exit either)
            self.gate.troubled = True
            self.gate.reason = self.gate.reason or f"no answer within {bound:g} s"
        return bool(done and done[0]) and self.undelivered == 0

    def shutdown(self) -> None:
        """Send what is queued within the export bound, then give up the rest, with one warning if any."""
        self.close(time.monotonic() + export_timeout())

    def close(self, deadline: float) -> None:
        """:meth:`shutdown` by ``deadline`` (a ``time.monotonic()`` value); once."""
        if self._closed:
            return
        self._closed = True
        if self.gate.troubled:
            # a backend that is failing gets no more of the bound: what is queued goes unsent, at once
            self.gate.give_up()
        # given up: nothing more is sent, so there is nothing to wait for
        left = 0.0 if self.gate.given_up else max(0.0, deadline - time.monotonic())
        finished = _within(
            left,
            lambda: self._batch_processor.shutdown(timeout_millis=int(left * 1000)),
            "chaoskit-export-shutdown",
            self._troubled,
        )
        if finished is None or self.gate.troubled:
            self.gate.give_up()
        missing = self.undelivered
        if missing:
            why_not = [self.gate.reason] if self.gate.reason else []
            if self.dropped:
                why_not.append(
                    f"{self.dropped} dropped by the full export queue (OTEL_BSP_MAX_QUEUE_SIZE, or "
                    f"{EXPORT_BLOCK_ENV}=1 to wait for room)"
                )
            if finished is None and not self.gate.reason:
                why_not.append("still being sent when the bound ran out")
            warn_once(
                (id(self), "undelivered"),
                "chaoskit: %d of %d spans were not delivered to %s (%s; the export bound is %g s: %s or "
                "configure(export_timeout=...))%s",
                missing,
                self.handed,
                self.gate.where,
                "; ".join(why_not) or "the export failed",
                export_timeout(),
                EXPORT_TIMEOUT_ENV,
                _where_local(),
            )


def _within(
    seconds: float, fn: Callable[[], Any], name: str, stop: Callable[[], bool] = lambda: False
) -> tuple[Any] | None:
    """Run ``fn`` in a daemon thread and wait at most ``seconds``, or until ``stop()`` is true: ``(its
    result,)``, or None if it did not end in time (it runs on; a daemon thread does not hold the process at
    exit)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(fn())
        except Exception as exc:
            log.debug("chaoskit: %s failed: %s", name, why(exc))
            box.append(False)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + seconds
    while thread.is_alive() and not stop():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        thread.join(min(left, _POLL_S))
    return (box[0],) if box else None


def _where_local() -> str:
    files = local_copies()
    if files:
        return "; every span is in the local copy " + ", ".join(files)
    return "; no local copy was asked for (--traces FILE or CHAOSKIT_TRACES_FILE keeps one)"


def shutdown_all(deadline: float) -> None:
    """Close every live :class:`BoundedExport` by ``deadline`` (at exit: one bound for all of them)."""
    for processor in list(_live):
        processor.close(deadline)
