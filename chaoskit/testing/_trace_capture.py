"""Span captures for tests: all spans, or only the spans of one test even when tests run in parallel threads.

``telemetry.capture()`` sees every span of the process. :class:`OwnCapture` keeps only the spans that belong
to the code that opened it: a span belongs to it when it ended in a context where the capture was open (the
thread or asyncio task that opened it, and tasks and ``asyncio.to_thread`` calls started from there, which
copy the context), or when it belongs to a trace whose root span did, or to a trace it was told to follow
(:meth:`OwnCapture.follow`, e.g. an episode's trace id). Both are built on the one capture,
:class:`chaoskit.telemetry.SpanCapture`; the filter is applied when the spans are read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.sdk.trace import ReadableSpan

import chaoskit.telemetry as telemetry
from chaoskit.telemetry import SpanCapture
from chaoskit.traces._trace import Trace

__all__ = ["OwnCapture", "TraceCapture", "capture_spans", "own_capture"]

#: the captures open in the current context (a tuple, so that nested captures all see their spans)
_OPEN: ContextVar[tuple[object, ...]] = ContextVar("chaoskit_open_captures", default=())


class TraceCapture(SpanCapture):
    """A :class:`~chaoskit.telemetry.SpanCapture` whose :meth:`trace` is typed (it reads the spans directly)."""

    def trace(self) -> Trace:
        """The captured spans as a :class:`chaoskit.Trace` (episodes, attempts) for the checks."""
        return Trace.from_spans(self.spans)


class OwnCapture(TraceCapture):
    """The spans of one test only: see the module docstring for which spans belong to it.

    Use :func:`own_capture` (or ``capture_spans(own=True)``) to open one; ``.spans``, ``.attempt_spans(tool)``
    and ``.trace()`` read only this test's spans."""

    def __init__(self) -> None:
        super().__init__()
        self._token = object()
        #: every ended span, with whether it ended in a context where this capture was open
        self._records: list[tuple[ReadableSpan, bool]] = []
        self._followed: set[int] = set()

    def on_end(self, span: ReadableSpan) -> None:
        """Record the span and whether it ended where the capture is open (the filter is applied on reading)."""
        mine = self._token in _OPEN.get()
        with self._lock:
            self._records.append((span, mine))

    def shutdown(self) -> None:
        """Nothing to release."""
        return None

    def follow(self, trace_id: str | int | None) -> None:
        """Also keep every span of the trace ``trace_id`` (32 hex digits or the int), wherever it ended."""
        if trace_id is None:
            return
        self._followed.add(int(trace_id, 16) if isinstance(trace_id, str) else trace_id)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """This capture's spans, in end order."""
        with self._lock:
            records = list(self._records)
        traces = set(self._followed)
        traces.update(s.context.trace_id for s, mine in records if mine and s.parent is None and s.context)
        return tuple(s for s, mine in records if mine or (s.context is not None and s.context.trace_id in traces))

    def spans_of_trace(self, trace_id: str | int) -> tuple[ReadableSpan, ...]:
        """The captured spans of one trace (of this test or not), in end order."""
        wanted = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        with self._lock:
            records = list(self._records)
        return tuple(s for s, _ in records if s.context is not None and s.context.trace_id == wanted)

    def clear(self) -> None:
        """Forget the spans captured so far."""
        with self._lock:
            self._records.clear()

    @contextmanager
    def opened(self) -> Iterator[OwnCapture]:
        """Mark the current context as this capture's while the block runs (``own_capture`` does it)."""
        token = _OPEN.set((*_OPEN.get(), self._token))
        try:
            yield self
        finally:
            try:
                _OPEN.reset(token)
            except ValueError:  # closed in another context than it was opened in: leave that one clean
                _OPEN.set(tuple(t for t in _OPEN.get() if t is not self._token))


@contextmanager
def own_capture() -> Iterator[OwnCapture]:
    """Capture the spans of the code in the block only (not of other threads' tests): see :class:`OwnCapture`."""
    cap = OwnCapture()
    with telemetry.capture(cap), cap.opened():
        yield cap


@contextmanager
def capture_spans(*, own: bool = False) -> Iterator[TraceCapture]:
    """Capture every span finished in the block (``cap.spans``, ``cap.attempt_spans(tool)``, ``cap.trace()``).

    With ``own=True``, only the spans of the code in the block (see :class:`OwnCapture`): tests running at the
    same time in other threads do not show up."""
    if own:
        with own_capture() as mine:
            yield mine
        return
    cap = TraceCapture()
    with telemetry.capture(cap):
        yield cap
