"""Where chaoskit's spans go: the user's provider or a private one, in-memory capture, OTLP, JSON Lines.

chaoskit never calls ``trace.set_tracer_provider``. When the application has installed an SDK
``TracerProvider`` globally, chaoskit's spans go through it (with its resource, sampler and exporters) and
chaoskit adds one processor of its own to it, so that :func:`capture` and the file writer see them too.
Otherwise chaoskit uses a private provider whose spans reach only chaoskit's own sinks; its resource is the
one the standard variables describe (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), with
``service.name`` ``chaoskit`` only when they name no service.

Environment, read when chaoskit first creates its tracer:
- ``CHAOSKIT_TRACES_FILE=path``: append every span as OTLP-JSON Lines (the OTel Collector file format), never
  dropping one (a burst of spans waits for the writer rather than being lost). A path
  that cannot be written (a directory, a missing or read-only directory) is warned about once, in one line on
  the ``chaoskit`` logger, and the agent runs on without the file.
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (+ ``*_HEADERS`` etc.): with the
  private provider, export over OTLP: HTTP (``http/protobuf``) by default, gRPC when
  ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL`` is ``grpc``, in batches off the
  tool calls' path (:mod:`chaoskit.telemetry._export`). With your own provider, your exporters already do this.
- ``CHAOSKIT_EXPORT_TIMEOUT=seconds``: how long a flush and the shutdown at exit wait for the backend (5 by
  default; ``configure(export_timeout=...)`` wins), whatever ``OTEL_EXPORTER_OTLP_TIMEOUT`` says.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any, TypeGuard

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from chaoskit._version import __version__
from chaoskit.telemetry import _bulk, _otlp
from chaoskit.telemetry._capture import SpanCapture, set_trace_builder, snapshot
from chaoskit.telemetry._export import (
    BoundedExport,
    export_timeout,
    note_local_copy,
    set_export_timeout,
    shutdown_all,
)
from chaoskit.telemetry._filewriter import JsonLinesSpanExporter, SpanFileWriter, write_otlp_json
from chaoskit.telemetry._otlpjson import to_otlp_json
from chaoskit.telemetry._sinks import Tee, forget_warnings, warn_once, why

__all__ = [
    "JsonLinesSpanExporter",
    "SpanCapture",
    "SpanFileWriter",
    "add_processor",
    "bulk_tracer",
    "capture",
    "export_otlp",
    "export_timeout",
    "flush",
    "get_tracer",
    "note_local_copy",
    "remove_processor",
    "reset",
    "set_export_timeout",
    "set_trace_builder",
    "snapshot",
    "to_otlp_json",
    "warn_once",
    "write_jsonl",
    "write_otlp_json",
]

SCOPE_NAME = "chaoskit"


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tee = Tee()
        self.private: TracerProvider | None = None
        self.attached: weakref.WeakSet[Any] = weakref.WeakSet()
        self.cached: tuple[Any, trace.Tracer] | None = None
        self.env_done = False
        self.exit_hooked = False


_state = _State()


def _private_provider() -> TracerProvider:
    with _state.lock:
        if _state.private is None:
            # chaoskit shuts it down at exit itself, within the export bound (_at_exit)
            provider = TracerProvider(resource=_otlp.resource_from_env(), shutdown_on_exit=False)
            provider.add_span_processor(_state.tee)
            if _otlp_env():
                # on the private provider only: once the application installs its own provider, its exporters
                # send chaoskit's spans, and a second OTLP sink here would send every span twice
                try:
                    exporter, where = _otlp.exporter_from_env()
                    provider.add_span_processor(BoundedExport(exporter, where))
                except Exception as exc:
                    warn_once(
                        "otlp-env",
                        "chaoskit: could not set up OTLP export from OTEL_EXPORTER_OTLP_* (%s); spans stay local",
                        why(exc),
                    )
            _state.private = provider
            _hook_exit()
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
    """Push every pending span to its sink. Call it before reporting; the runner does.

    Local sinks are flushed first; an OTLP export waits at most the export bound (:func:`export_timeout`)."""
    # the private provider holds the tee and, from the environment, an OTLP exporter: flushing it covers both
    target: SpanProcessor | TracerProvider = _state.private or _state.tee
    try:
        return bool(target.force_flush(timeout_millis))
    except Exception as exc:
        warn_once("flush", "chaoskit: flushing spans failed (%s); ignored", why(exc))
        return False


def reset() -> None:
    """Drop every sink and cached tracer (for tests). The application's provider is left as it was."""
    with _state.lock:
        old = _state.tee.sinks
        _state.tee.sinks = ()
        _state.cached = None
        _state.env_done = True
        forget_warnings()
    for sink in old:
        with contextlib.suppress(Exception):
            sink.shutdown()


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
    endpoint: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    block: bool | None = None,
) -> SpanProcessor:
    """Export over OTLP/HTTP in batches; unset arguments come from the standard ``OTEL_EXPORTER_OTLP_*``.

    As the export set up from the environment: off the tool calls' path, failures logged once, flush and
    shutdown bounded by :func:`export_timeout`. A full queue drops spans (counted, and said at exit) unless
    ``block`` (default: ``CHAOSKIT_EXPORT_BLOCK=1``) makes the tool call wait for room, for load tests."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    with _state.lock:
        _hook_exit()
    where = getattr(exporter, "_endpoint", None) or endpoint or "OTLP"
    return add_processor(BoundedExport(exporter, where, block=block))


def write_jsonl(path: str | os.PathLike[str]) -> SpanProcessor:
    """Append every span to ``path`` as OTLP-JSON Lines, one ``{"resourceSpans": [...]}`` per line.

    No span is dropped, at any rate (:class:`SpanFileWriter`). The file is opened at the first span; a path that
    cannot be written is warned about once (one line) and the spans are dropped, never raised into the agent.
    """
    return _add_jsonl(SpanFileWriter(os.fspath(path), lazy=True))


def _add_jsonl(writer: SpanFileWriter) -> SpanProcessor:
    note_local_copy(writer.path)
    return add_processor(writer)


def _configure_from_env() -> None:
    path = os.environ.get("CHAOSKIT_TRACES_FILE")
    if path:
        try:
            # opened now, so that a bad path is one warning here instead of one per span later
            writer = SpanFileWriter(path)
        except OSError as exc:
            # a tracing setting must never stop the agent: say so once and run without the file
            warn_once(
                "traces-file",
                "chaoskit: CHAOSKIT_TRACES_FILE=%s cannot be written (%s); expected the path "
                "of a file in a writable directory. Spans are not written to a file; the agent goes on",
                path,
                why(exc),
            )
        else:
            _add_jsonl(writer)
    _hook_exit()


def _hook_exit() -> None:
    # under _state.lock
    if not _state.exit_hooked:
        _state.exit_hooked = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    """At exit: the local sinks first (every span to its file), then every export within one bound."""
    deadline = time.monotonic() + export_timeout()
    with contextlib.suppress(Exception):
        _state.tee.force_flush(int(export_timeout() * 1000))
    shutdown_all(deadline)
    private = _state.private
    if private is not None:
        with contextlib.suppress(Exception):
            private.shutdown()
