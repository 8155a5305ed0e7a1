"""The trace model the checks read: episodes and their tool attempts, rebuilt from exported spans only.

Whatever the source (in-memory ``ReadableSpan``\\ s, OTLP-JSON, JSON Lines, Jaeger's api_v3 or UI JSON), the
same spans give the same :class:`Trace`: times are kept at microsecond precision (Jaeger's) and values are
normalised to what OTLP carries, so verdicts do not depend on where the trace was read from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import ChaoskitError

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
        """The real tool ran and did not reject the call itself (a success, or an injected after_write error)."""
        return self.executed and (self.outcome == "ok" or self.injected)

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
        """From OpenTelemetry SDK ``ReadableSpan`` objects (e.g. ``InMemorySpanExporter`` output)."""
        builder = TraceBuilder("<spans>")
        for span in spans:
            name = span.name or ""
            if not _interesting(name):
                continue
            ctx = span.get_span_context()
            if ctx is None:
                continue
            attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in (span.attributes or {}).items()}
            status = span.status
            error_message = None
            if "error.type" in attrs:
                for ev in span.events or ():
                    if ev.name == "exception" and ev.attributes and "exception.message" in ev.attributes:
                        error_message = str(ev.attributes["exception.message"])
                        break
                if error_message is None and status is not None:
                    error_message = status.description
            start = span.start_time or 0
            end = span.end_time or start
            builder.add(
                trace_id=f"{ctx.trace_id:032x}", span_id=f"{ctx.span_id:016x}", name=name,
                start_us=start // 1000, end_us=start // 1000 + (end - start) // 1000,
                attrs=attrs, error_message=error_message,
            )
        return builder.build()

    @classmethod
    def from_otlp_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From OTLP-JSON: a ``{"resourceSpans": ...}`` object, JSON Lines of them (Collector file exporter,
        chaoskit's writer) or Jaeger v2 api_v3's ``{"result": {"resourceSpans": ...}}``; a path, JSON text
        or an already-parsed object (or list of them)."""
        from . import _readers

        return _readers.read(source, "otlp")

    @classmethod
    def from_jaeger_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From Jaeger's UI JSON (``{"data": [{"traceID", "spans": [...], "processes"}]}``, or one trace)."""
        from . import _readers

        return _readers.read(source, "jaeger")

    @classmethod
    def load(cls, path: str | os.PathLike[str], format: str | None = None) -> Trace:
        """Read a file; ``format`` is ``"otlp"`` or ``"jaeger"``, sniffed from the content when None."""
        from . import _readers

        if format is not None and format not in _readers.FORMATS:
            raise TraceReadError(f"unknown trace format {format!r}; expected one of {', '.join(_readers.FORMATS)}",
                                 source=str(path))
        return _readers.read(Path(path), format)


def _attempt_order(a: AttemptRecord) -> tuple[float, int, str]:
    return (a.start_time, a.attempt, a.span_id)


_PREFIXES = ("execute_tool", "invoke_agent")


def _interesting(name: str) -> bool:
    # a cheap filter before decoding attributes: 1M foreign spans should cost a string compare each
    return name.startswith(_PREFIXES)


_FAULT_PREFIX = "chaoskit.fault."
_NOT_PARAMS = frozenset({"type", "index", "value", "injected", "skipped"})


def _json_or_raw(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        # capped attributes end in "…[+N chars]": keep the raw text rather than fail the read
        return text


def _as_list(value: Any) -> Any:
    # Jaeger (and other backends) flatten array attributes to a JSON string
    if isinstance(value, str) and value.startswith("["):
        decoded = _json_or_raw(value)
        return decoded if isinstance(decoded, list) else value
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass
class _EpisodeParts:
    root: dict[str, Any] | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)


class TraceBuilder:
    """Collects chaoskit spans from any reader and assembles the Trace; foreign spans are dropped early."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line: int | None = None
        self._episodes: dict[str | None, _EpisodeParts] = {}
        self._seen: set[tuple[str, str]] = set()
        # tool names, outcomes, trace and episode ids repeat across a million spans: keep one copy of each
        self._strings: dict[str, str] = {}

    def _err(self, message: str) -> TraceReadError:
        return TraceReadError(message, source=self.source, line=self.line)

    def add(
        self, *, trace_id: str, span_id: str, name: str, start_us: int, end_us: int,
        attrs: Mapping[str, Any], error_message: str | None,
    ) -> None:
        op = attrs.get("gen_ai.operation.name")
        if op == "execute_tool":
            if "chaoskit.attempt" not in attrs:
                return
        elif op == "invoke_agent":
            if "chaoskit.episode.id" not in attrs:
                return
        else:
            return
        trace_id = self._strings.setdefault(trace_id, trace_id)
        key = (trace_id, span_id)
        if key in self._seen:  # a collector retry or a backend listing the span twice
            return
        self._seen.add(key)
        if op == "execute_tool":
            record = self._attempt(trace_id, span_id, name, start_us, end_us, attrs, error_message)
            parts = self._episodes.get(record.episode_id)
            if parts is None:
                parts = self._episodes[record.episode_id] = _EpisodeParts()
            parts.attempts.append(record)
        else:
            eid = attrs["chaoskit.episode.id"]
            if not isinstance(eid, str):
                raise self._err(f"span {span_id}: expected chaoskit.episode.id to be a string, got {eid!r}")
            parts = self._episodes.get(eid)
            if parts is None:
                parts = self._episodes[eid] = _EpisodeParts()
            parts.root = {"trace_id": trace_id, "span_id": span_id, "start_us": start_us, "end_us": end_us,
                          "attrs": dict(attrs)}

    def _attempt(
        self, trace_id: str, span_id: str, name: str, start_us: int, end_us: int,
        a: Mapping[str, Any], error_message: str | None,
    ) -> AttemptRecord:
        n = a["chaoskit.attempt"]
        if isinstance(n, str) and n.isdigit():
            n = int(n)
        if not isinstance(n, int) or isinstance(n, bool):
            raise self._err(f"span {span_id}: expected chaoskit.attempt to be a whole number, got {n!r}")
        tool = a.get("gen_ai.tool.name")
        if not isinstance(tool, str):
            tool = name[len("execute_tool "):] if name.startswith("execute_tool ") else name
        fault_type = a.get("chaoskit.fault.type")
        if fault_type is not None and a.get("chaoskit.fault.skipped") == fault_type:
            # decided, then skipped by the entry point after the span started (attributes cannot be removed)
            fault_type = None
        params: dict[str, Any] = {}
        if fault_type is not None:
            for k, v in a.items():
                if k.startswith(_FAULT_PREFIX):
                    short = k[len(_FAULT_PREFIX):]
                    if short not in _NOT_PARAMS:
                        params[short] = v
            if "asks_for" in params:
                params["asks_for"] = _as_list(params["asks_for"])
        fault_index = a.get("chaoskit.fault.index") if fault_type is not None else None
        raw_value = a.get("chaoskit.fault.value")
        raw_args = a.get("chaoskit.args")
        outcome = a.get("chaoskit.outcome")
        error_type = a.get("error.type")
        if outcome is None:
            outcome = "error" if error_type is not None else "ok"
        eid = a.get("chaoskit.episode.id")
        share = self._strings.setdefault
        return AttemptRecord(
            tool=share(tool, tool),
            attempt=n,
            start_time=start_us / 1e6,
            end_time=end_us / 1e6,
            outcome=share(str(outcome), str(outcome)),
            error_type=share(error_type, error_type) if isinstance(error_type, str) else None,
            error_message=error_message if error_type is not None else None,
            fault_type=share(fault_type, fault_type) if isinstance(fault_type, str) else None,
            fault_index=fault_index if isinstance(fault_index, int) and not isinstance(fault_index, bool) else None,
            fault_params=params,
            injected=a.get("chaoskit.fault.injected") is True,
            injected_value=_json_or_raw(raw_value) if raw_value is not None else None,
            executed=a.get("chaoskit.tool.executed") is True,
            args_hash=_str_or_none(a.get("chaoskit.args.hash")),
            args=_json_or_raw(raw_args) if raw_args is not None else None,
            idempotency_key=_str_or_none(a.get("chaoskit.idempotency_key")),
            irreversible=a.get("chaoskit.tool.irreversible") is True,
            call_id=_str_or_none(a.get("gen_ai.tool.call.id")),
            span_id=span_id,
            trace_id=share(trace_id, trace_id),
            episode_id=share(eid, eid) if isinstance(eid, str) else None,
            fault_skipped=_str_or_none(a.get("chaoskit.fault.skipped")),
            result=_str_or_none(a.get("gen_ai.tool.call.result")),
            observed_status=_int_or_none(a.get("http.response.status_code")),
            observed_retry_after=_float_or_none(a.get("chaoskit.retry_after")),
            idempotent=a.get("chaoskit.tool.idempotent") is True,
            refused=a.get("chaoskit.tool.refused") is True,
        )

    def build(self) -> Trace:
        episodes: list[EpisodeRecord] = []
        for eid, parts in self._episodes.items():
            attempts = tuple(sorted(parts.attempts, key=_attempt_order))
            root = parts.root
            if root is not None:
                ra: dict[str, Any] = root["attrs"]
                name = ra.get("chaoskit.scenario") or ra.get("gen_ai.agent.name")
                episodes.append(EpisodeRecord(
                    id=eid, name=_str_or_none(name), output=_str_or_none(ra.get("chaoskit.episode.output")),
                    outcome=_str_or_none(ra.get("chaoskit.episode.outcome")),
                    error=_str_or_none(ra.get("chaoskit.episode.error")),
                    trace_id=root["trace_id"], span_id=root["span_id"],
                    start_time=root["start_us"] / 1e6, end_time=root["end_us"] / 1e6,
                    attributes=ra, attempts=attempts,
                ))
            else:
                episodes.append(EpisodeRecord(
                    id=eid, name=None, output=None, outcome=None, error=None,
                    trace_id=attempts[0].trace_id if attempts else None, span_id=None,
                    start_time=attempts[0].start_time if attempts else None,
                    end_time=max(a.end_time for a in attempts) if attempts else None,
                    attributes={}, attempts=attempts,
                ))
        episodes.sort(key=lambda e: (e.start_time if e.start_time is not None else float("inf"), e.id or ""))
        return Trace(episodes)


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float_or_none(v: Any) -> float | None:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
