"""Where chaoskit's spans go: the user's provider or a private one, in-memory capture, OTLP, JSON Lines.

chaoskit never calls ``trace.set_tracer_provider``. When the application has installed an SDK
``TracerProvider`` globally, chaoskit's spans go through it (with its resource, sampler and exporters) and
chaoskit adds one processor of its own to it, so that :func:`capture` and the file writer see them too.
Otherwise chaoskit uses a private provider whose spans reach only chaoskit's own sinks.

Environment, read when chaoskit first creates its tracer:
- ``CHAOSKIT_TRACES_FILE=path``: append every span as OTLP-JSON Lines (the OTel Collector file format). A path
  that cannot be written (a directory, a missing or read-only directory) is warned about once, in one line on
  the ``chaoskit`` logger, and the agent runs on without the file.
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (+ ``*_HEADERS`` etc.): with the
  private provider, export over OTLP: HTTP (``http/protobuf``) by default, gRPC when
  ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL`` is ``grpc``. With your own
  provider, your exporters already do this.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeGuard, cast

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import chaoskit.semconv as sc
from chaoskit._version import __version__
from chaoskit.telemetry import _bulk, _otlp

__all__ = [
    "JsonLinesSpanExporter",
    "SpanCapture",
    "add_processor",
    "bulk_tracer",
    "capture",
    "export_otlp",
    "flush",
    "get_tracer",
    "remove_processor",
    "reset",
    "set_trace_builder",
    "to_otlp_json",
    "write_jsonl",
    "write_otlp_json",
]

log = logging.getLogger("chaoskit")
SCOPE_NAME = "chaoskit"


def warn_once(key: Any, message: str, *args: Any) -> None:
    """One line on the ``chaoskit`` logger, once per ``key``: a failing sink fails on every span, and the
    agent's output must not drown in it. Never a traceback: the message says what failed and why."""
    if key in _warned:
        return
    _warned.add(key)
    log.warning(message, *args)


_warned: set[Any] = set()


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Tee(SpanProcessor):
    """Fans spans out to chaoskit's sinks; a failing sink is logged, never raised into the agent."""

    #: idle when a span starts if its sinks are (see :func:`chaoskit.telemetry._bulk.ready`)
    chaoskit_fanout = True

    def __init__(self) -> None:
        self.sinks: tuple[SpanProcessor, ...] = ()

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        for sink in self.sinks:
            try:
                sink.on_start(span, parent_context=parent_context)
            except Exception as exc:
                warn_once(
                    (id(sink), "start"),
                    "chaoskit: a span processor failed in on_start (%s: %s); ignored",
                    type(sink).__name__,
                    _why(exc),
                )

    def on_end(self, span: ReadableSpan) -> None:
        for sink in self.sinks:
            try:
                sink.on_end(span)
            except Exception as exc:
                warn_once(
                    (id(sink), "end"),
                    "chaoskit: a span processor failed in on_end (%s: %s); ignored",
                    type(sink).__name__,
                    _why(exc),
                )

    def shutdown(self) -> None:
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        ok = True
        for sink in self.sinks:
            try:
                ok = bool(sink.force_flush(timeout_millis)) and ok
            except Exception as exc:
                warn_once(
                    (id(sink), "flush"),
                    "chaoskit: flushing a span processor failed (%s: %s); ignored",
                    type(sink).__name__,
                    _why(exc),
                )
                ok = False
        return ok


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tee = _Tee()
        self.private: TracerProvider | None = None
        self.attached: weakref.WeakSet[Any] = weakref.WeakSet()
        self.cached: tuple[Any, trace.Tracer] | None = None
        self.env_done = False


_state = _State()


def _private_provider() -> TracerProvider:
    with _state.lock:
        if _state.private is None:
            resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "chaoskit")})
            provider = TracerProvider(resource=resource)
            provider.add_span_processor(_state.tee)
            if _otlp_env():
                # on the private provider only: once the application installs its own provider, its exporters
                # send chaoskit's spans, and a second OTLP sink here would send every span twice
                try:
                    provider.add_span_processor(BatchSpanProcessor(_otlp.exporter_from_env()))
                except Exception as exc:
                    warn_once(
                        "otlp-env",
                        "chaoskit: could not set up OTLP export from OTEL_EXPORTER_OTLP_* (%s); spans stay local",
                        _why(exc),
                    )
            _state.private = provider
        return _state.private


def _otlp_env() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def get_tracer() -> trace.Tracer:
    """chaoskit's tracer: from the global SDK provider when the application set one, else a private one."""
    provider = trace.get_tracer_provider()
    cached = _state.cached
    if cached is not None and cached[0] is provider:
        return cached[1]
    with _state.lock:
        if not _state.env_done:
            _state.env_done = True
            _configure_from_env()
        if _is_sdk(provider):
            if provider not in _state.attached:
                provider.add_span_processor(_state.tee)
                _state.attached.add(provider)
            source = provider
        else:
            source = _private_provider()
        tracer = source.get_tracer(SCOPE_NAME, __version__)
        _state.cached = (provider, tracer)
        return tracer


def bulk_tracer() -> Any:
    """chaoskit's tracer when its spans may take their attributes in bulk (``_bulk.ready``), else None.

    For the hot path: the application's provider, once set, is read where the API keeps it (what
    ``trace.get_tracer_provider()`` then returns), without that function's two calls."""
    provider = getattr(trace, "_TRACER_PROVIDER", None) or trace.get_tracer_provider()
    cached = _state.cached
    tracer = cached[1] if cached is not None and cached[0] is provider else get_tracer()
    return tracer if _bulk.ready(tracer, _state.tee.sinks) else None


def _is_sdk(provider: Any) -> TypeGuard[TracerProvider]:
    return isinstance(provider, TracerProvider)


def add_processor(processor: SpanProcessor) -> SpanProcessor:
    """Send chaoskit's spans (and any others of the provider chaoskit uses) to ``processor`` as well."""
    with _state.lock:
        _state.tee.sinks = (*_state.tee.sinks, processor)
    return processor


def remove_processor(processor: SpanProcessor, *, shutdown: bool = True) -> None:
    """Stop sending spans to ``processor`` (flushing and shutting it down unless ``shutdown=False``)."""
    with _state.lock:
        _state.tee.sinks = tuple(s for s in _state.tee.sinks if s is not processor)
    if shutdown:
        with contextlib.suppress(Exception):
            processor.force_flush()
            processor.shutdown()


def flush(timeout_millis: int = 30000) -> bool:
    """Push every pending span to its sink. Call it before reporting; the runner does."""
    # the private provider holds the tee and, from the environment, an OTLP exporter: flushing it covers both
    target: SpanProcessor | TracerProvider = _state.private or _state.tee
    try:
        return bool(target.force_flush(timeout_millis))
    except Exception as exc:
        warn_once("flush", "chaoskit: flushing spans failed (%s); ignored", _why(exc))
        return False


def reset() -> None:
    """Drop every sink and cached tracer (for tests). The application's provider is left as it was."""
    with _state.lock:
        old = _state.tee.sinks
        _state.tee.sinks = ()
        _state.cached = None
        _state.env_done = True
        _warned.clear()
    for sink in old:
        with contextlib.suppress(Exception):
            sink.shutdown()


class SpanCapture:
    """Spans finished while a :func:`capture` block is open, in end order."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.processor = SimpleSpanProcessor(self.exporter)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """The spans that ended since the capture started (or was cleared)."""
        return self.exporter.get_finished_spans()

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
        self.exporter.clear()

    def to_otlp_json(self) -> dict[str, Any]:
        """The captured spans as one OTLP-JSON document (``resourceSpans``), as a Collector would export them."""
        return to_otlp_json(self.spans)

    def trace(self) -> Any:
        """The captured spans as a :class:`chaoskit.Trace` (episodes, attempts) for the checks.

        Built by the reader the grading layer registers (:func:`set_trace_builder`, done when ``chaoskit`` is
        imported): this layer sits below the readers and never imports them.
        """
        if _trace_builder is None:
            raise RuntimeError(
                "no trace reader is registered; import chaoskit (or use chaoskit.testing."
                "capture_spans()) to read captured spans as a Trace"
            )
        return _trace_builder(self.spans)


_trace_builder: Callable[[Sequence[ReadableSpan]], Any] | None = None


def set_trace_builder(builder: Callable[[Sequence[ReadableSpan]], Any]) -> None:
    """Register the function that reads finished spans as a ``chaoskit.Trace`` (for :meth:`SpanCapture.trace`)."""
    global _trace_builder
    _trace_builder = builder


@contextlib.contextmanager
def capture(into: SpanCapture | None = None) -> Iterator[SpanCapture]:
    """Collect spans in memory while the block runs (tests, the runner); ``into`` is the capture to fill."""
    get_tracer()
    cap = into if into is not None else SpanCapture()
    add_processor(cap.processor)
    try:
        yield cap
    finally:
        remove_processor(cap.processor, shutdown=False)


def export_otlp(
    endpoint: str | None = None, *, headers: dict[str, str] | None = None, timeout: float | None = None
) -> SpanProcessor:
    """Export over OTLP/HTTP in batches; unset arguments come from the standard ``OTEL_EXPORTER_OTLP_*``."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    return add_processor(BatchSpanProcessor(exporter))


def write_jsonl(path: str | os.PathLike[str]) -> SpanProcessor:
    """Append spans to ``path`` as OTLP-JSON Lines, one ``{"resourceSpans": [...]}`` per batch.

    The file is opened at the first batch; a path that cannot be written is warned about once (one line) and
    the spans are dropped, never raised into the agent.
    """
    return _add_jsonl(JsonLinesSpanExporter(path))


def _add_jsonl(exporter: JsonLinesSpanExporter) -> SpanProcessor:
    return add_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))


def _configure_from_env() -> None:
    path = os.environ.get("CHAOSKIT_TRACES_FILE")
    if path:
        exporter = JsonLinesSpanExporter(path)
        try:
            exporter.open()  # now, so that a bad path is one warning here instead of one per batch later
        except OSError as exc:
            # a tracing setting must never stop the agent: say so once and run without the file
            warn_once(
                "traces-file",
                "chaoskit: CHAOSKIT_TRACES_FILE=%s cannot be written (%s); expected the path "
                "of a file in a writable directory. Spans are not written to a file; the agent goes on",
                path,
                _why(exc),
            )
        else:
            _add_jsonl(exporter)
    atexit.register(flush)


# --- OTLP-JSON ----------------------------------------------------------------------------------------

_HEX_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(obj: Any) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in _HEX_KEYS and isinstance(v, str):
                out[k] = base64.b64decode(v).hex()
            else:
                out[k] = _hex_ids(v)
        return out
    if isinstance(obj, list):
        return [_hex_ids(v) for v in obj]
    return obj


def to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Spans as an OTLP-JSON ``{"resourceSpans": [...]}`` object with lowercase hex ids (the OTLP/JSON spec)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    if not spans:
        return {"resourceSpans": []}
    message = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return cast(dict[str, Any], _hex_ids(message))


class JsonLinesSpanExporter(SpanExporter):
    """Append OTLP-JSON lines to a file; failures are logged and reported as FAILURE, never raised."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None

    def open(self) -> None:
        """Open the file now (making its directory); raises OSError when it cannot be written."""
        with self._lock:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append ``spans`` to the file as one OTLP-JSON line; a write error is warned about once, never raised."""
        try:
            line = json.dumps(to_otlp_json(spans), separators=(",", ":"))
            self.open()
            with self._lock:
                assert self._fh is not None
                self._fh.write(line + "\n")
                self._fh.flush()
            return SpanExportResult.SUCCESS
        except Exception as exc:
            warn_once(
                (id(self), "export"),
                "chaoskit: writing spans to %s failed (%s); the agent goes on",
                self.path,
                _why(exc),
            )
            return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing to do: every export writes and flushes its line."""
        return True

    def shutdown(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fh is not None:
                with contextlib.suppress(Exception):
                    self._fh.close()
                self._fh = None


def write_otlp_json(spans: Iterable[ReadableSpan], path: str | os.PathLike[str]) -> Path:
    """Write ``spans`` to ``path`` as one OTLP-JSON Lines record (handy in tests and reports)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(to_otlp_json(list(spans)), separators=(",", ":")) + "\n")
    return out
