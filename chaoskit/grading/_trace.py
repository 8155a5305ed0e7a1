"""The trace model the checks read: episodes and their tool attempts, rebuilt from exported spans only.

Whatever the source (in-memory ``ReadableSpan``\\ s, OTLP-JSON, JSON Lines, Jaeger's api_v3 or UI JSON), the
same spans give the same :class:`Trace`: times are kept at microsecond precision (Jaeger's) and values are
normalised to what OTLP carries, so verdicts do not depend on where the trace was read from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError

__all__ = ["AttemptRecord", "EpisodeRecord", "Trace", "TraceReadError"]


class TraceReadError(ChaoskitError, ValueError):
    """A trace file or object could not be read: names the file, the line (where known) and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = source or "<trace>"
        if line is not None:
            where = f"{where}, line {line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One tool attempt as read from its ``execute_tool`` span. Times are epoch seconds (µs precision)."""

    tool: str
    attempt: int
    start_time: float
    end_time: float
    outcome: str
    error_type: str | None
    error_message: str | None
    fault_type: str | None
    fault_index: int | None
    fault_params: dict[str, Any]
    injected: bool
    injected_value: Any
    executed: bool
    args_hash: str | None
    args: Any
    idempotency_key: str | None
    irreversible: bool
    call_id: str | None
    span_id: str
    trace_id: str
    episode_id: str | None
    #: a fault type the entry point could not inject (``chaoskit.fault.skipped``)
    fault_skipped: str | None = None
    #: the tool's result text when ``configure(record_results=True)`` put it on the span
    result: str | None = None
    #: status and Retry-After of any HTTP error the caller saw, injected or real
    observed_status: int | None = None
    observed_retry_after: float | None = None
    #: the tool was declared ``idempotent=True`` (``chaoskit.tool.idempotent``): repeating it is harmless
    idempotent: bool = False
    #: the tool itself refused the call by returning an error value (``chaoskit.tool.refused``), not raising
    refused: bool = False

    @property
    def clean_success(self) -> bool:
        """The tool answered and no fault altered what the caller got (latency only delays)."""
        return self.outcome == "ok" and (self.fault_type is None or self.fault_type == "latency")

    @property
    def may_have_written(self) -> bool:
        """The real tool ran and did not reject the call itself: a success, an injected after_write error, or a call
        cancelled while the tool ran (``asyncio.wait_for`` cancelling a payment mid-write may have charged the card)."""
        if not self.executed or self.refused:
            return False
        return self.outcome in ("ok", "cancelled") or self.injected

    @property
    def retry_after(self) -> float | None:
        value = self.fault_params.get("retry_after")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return self.observed_retry_after if self.outcome == "error" else None

    @property
    def http_status(self) -> int | None:
        value = self.fault_params.get("http.status")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return self.observed_status if self.outcome == "error" else None

    def describe_fault(self) -> str:
        """A few words for messages: ``an HTTP 500 (after_write)``, ``a timeout``, ``no fault``."""
        t = self.fault_type
        status = self.http_status
        if t is None and status is None:
            return "no fault"
        if status is not None:
            text = f"an HTTP {status}"
            if self.fault_params.get("after_write"):
                text += " (after_write)"
            ra = self.retry_after
            if ra is not None:
                text += f" (Retry-After {ra:g}s)"
            return text
        if t is None:
            return "no fault"
        return {"timeout": "a timeout", "error": f"an injected {self.fault_params.get('exception', 'error')}",
                "empty": "an empty result", "garbage": "garbage data", "partial": "a partial result",
                "schema_drift": "a schema drift", "prompt_injection": "a prompt injection",
                "latency": "added latency"}.get(t, f"a {t} fault")


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One episode (``invoke_agent`` root span) and its attempts in time order.

    ``id`` is None for attempts made outside any episode; fields the root span would give are None when
    the root span is missing from the export (e.g. a file cut short).
    """

    id: str | None
    name: str | None
    output: str | None
    outcome: str | None
    error: str | None
    trace_id: str | None
    span_id: str | None
    start_time: float | None
    end_time: float | None
    attributes: dict[str, Any]
    attempts: tuple[AttemptRecord, ...]

    def tools(self) -> list[str]:
        """Tool names in order of first attempt."""
        return list(dict.fromkeys(a.tool for a in self.attempts))

    def attempts_of(self, tool: str) -> list[AttemptRecord]:
        return [a for a in self.attempts if a.tool == tool]


class Trace:
    """Episodes read from exported spans. Build one with ``Trace.from_spans`` / ``from_otlp_json`` /
    ``from_jaeger_json`` / ``load``; ``trace.split()`` gives one Trace per episode."""

    __slots__ = ("_attempts", "episodes")

    def __init__(self, episodes: Iterable[EpisodeRecord] = ()) -> None:
        self.episodes: list[EpisodeRecord] = list(episodes)
        self._attempts: list[AttemptRecord] | None = None

    @property
    def attempts(self) -> list[AttemptRecord]:
        """Every attempt of every episode, in start-time order."""
        if self._attempts is None:
            self._attempts = sorted((a for e in self.episodes for a in e.attempts), key=_attempt_order)
        return self._attempts

    def split(self) -> list[Trace]:
        return [Trace([e]) for e in self.episodes]

    def episode(self, episode_id: str | None) -> EpisodeRecord:
        for e in self.episodes:
            if e.id == episode_id:
                return e
        raise KeyError(episode_id)

    def __len__(self) -> int:
        return len(self.episodes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.episodes == other.episodes

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Trace({len(self.episodes)} episode(s), {sum(len(e.attempts) for e in self.episodes)} attempt(s))"

    # -- builders ------------------------------------------------------------------------------------

    @classmethod
    def from_spans(cls, spans: Iterable[Any]) -> Trace:
        """From OpenTelemetry SDK ``ReadableSpan`` objects (e.g. ``InMemorySpanExporter`` output).

        Raises :class:`TraceReadError` when a chaoskit span cannot be graded (see :meth:`load`)."""
        import chaoskit.grading._readers as _readers

        return _readers.read_sdk_spans(spans)

    @classmethod
    def from_otlp_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From OTLP-JSON: a ``{"resourceSpans": ...}`` object, JSON Lines of them (Collector file exporter,
        chaoskit's writer) or Jaeger v2 api_v3's ``{"result": {"resourceSpans": ...}}``; a path, JSON text
        (``str`` or UTF-8 ``bytes``) or an already-parsed object (or list of them)."""
        import chaoskit.grading._readers as _readers

        return _readers.read(source, "otlp")

    @classmethod
    def from_jaeger_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From Jaeger's UI JSON (``{"data": [{"traceID", "spans": [...], "processes"}]}``, or one trace)."""
        import chaoskit.grading._readers as _readers

        return _readers.read(source, "jaeger")

    @classmethod
    def load(cls, path: str | os.PathLike[str], format: str | None = None) -> Trace:
        """Read a file; ``format`` is ``"otlp"`` or ``"jaeger"``, sniffed from the content when None.

        A file that holds no chaoskit span gives an empty Trace (``len(trace) == 0``; ``chaoskit check``
        reports it as "nothing to grade"). A file that cannot be read, or a chaoskit span that cannot be graded
        (no ids or times, an end before its start, a tool span without ``chaoskit.attempt``, a chaoskit
        attribute of the wrong type, a span id used twice with different content, an episode missing some of
        its attempts), raises :class:`TraceReadError` naming the file, the line and the span.
        """
        import chaoskit.grading._readers as _readers

        if format is not None and format not in _readers.FORMATS:
            raise TraceReadError(f"unknown trace format {format!r}; expected one of {', '.join(_readers.FORMATS)}",
                                 source=str(path) if isinstance(path, str | os.PathLike) else "<python>")
        if not isinstance(path, str | os.PathLike) or not str(path).strip():
            raise TraceReadError(f"expected the path of a trace file, got {path!r}", source="<python>")
        return _readers.read(Path(path), format)


def _attempt_order(a: AttemptRecord) -> tuple[float, int, str]:
    return (a.start_time, a.attempt, a.span_id)


