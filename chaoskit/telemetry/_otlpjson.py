"""Spans as OTLP-JSON: the encoding, and the JSON Lines file writer (the OTel Collector's file format)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, cast

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from chaoskit.telemetry._sinks import warn_once, why

__all__ = ["JsonLinesSpanExporter", "to_otlp_json", "write_otlp_json"]

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
                why(exc),
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
