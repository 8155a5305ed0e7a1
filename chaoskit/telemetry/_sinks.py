"""chaoskit's fan-out of finished spans to its own sinks, and the one-line, once-only warning every sink uses."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

__all__ = ["Tee", "log", "warn_once", "why"]

log = logging.getLogger("chaoskit")

_warned: set[Any] = set()


def warn_once(key: Any, message: str, *args: Any) -> None:
    """One line on the ``chaoskit`` logger, once per ``key``: a failing sink fails on every span, and the
    agent's output must not drown in it. Never a traceback: the message says what failed and why."""
    if key in _warned:
        return
    _warned.add(key)
    log.warning(message, *args)


def forget_warnings() -> None:
    """Warn again about what was already warned about (for tests: ``telemetry.reset()``)."""
    _warned.clear()


def why(exc: BaseException) -> str:
    """``Type: message`` of an exception, for a one-line warning."""
    return f"{type(exc).__name__}: {exc}"


class Tee(SpanProcessor):
    """Fans spans out to chaoskit's sinks; a failing sink is logged, never raised into the agent."""

    #: idle when a span starts if its sinks are (see :func:`chaoskit.telemetry._bulk.ready`)
    chaoskit_fanout = True

    def __init__(self) -> None:
        self.sinks: tuple[SpanProcessor, ...] = ()

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        """Hand a started span to every sink."""
        for sink in self.sinks:
            try:
                sink.on_start(span, parent_context=parent_context)
            except Exception as exc:
                _failed(sink, "start", exc)

    def on_end(self, span: ReadableSpan) -> None:
        """Hand a finished span to every sink."""
        for sink in self.sinks:
            try:
                sink.on_end(span)
            except Exception as exc:
                _failed(sink, "end", exc)

    def shutdown(self) -> None:
        """Shut every sink down."""
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush every sink; False when one failed or did not finish."""
        ok = True
        for sink in self.sinks:
            try:
                ok = bool(sink.force_flush(timeout_millis)) and ok
            except Exception as exc:
                _failed(sink, "flush", exc)
                ok = False
        return ok


_FAILED = {
    "start": "chaoskit: a span processor failed in on_start (%s: %s); ignored",
    "end": "chaoskit: a span processor failed in on_end (%s: %s); ignored",
    "flush": "chaoskit: flushing a span processor failed (%s: %s); ignored",
}


def _failed(sink: SpanProcessor, what: str, exc: Exception) -> None:
    """One warning per sink and step: the sink's failure never reaches the agent."""
    warn_once((id(sink), what), _FAILED[what], type(sink).__name__, why(exc))
