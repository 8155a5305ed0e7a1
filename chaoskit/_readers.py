"""Readers for exported spans: OTLP-JSON (single object, JSON Lines, Jaeger api_v3) and Jaeger UI JSON.

Files are streamed line by line when they are JSON Lines, so a million-span file never sits in memory as
one parsed document; a pretty-printed file is one document and is parsed whole. Only spans named
``execute_tool …`` / ``invoke_agent …`` have their attributes decoded: foreign spans cost one string compare.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._trace import _PREFIXES, Trace, TraceBuilder, TraceReadError

__all__ = ["FORMATS", "otlp_to_jaeger", "read", "read_text"]

FORMATS = ("otlp", "jaeger")

#: tags Jaeger adds when it converts OTLP; they are not span attributes
_JAEGER_ADDED = frozenset({
    "otel.scope.name", "otel.scope.version", "otel.library.name", "otel.library.version", "span.kind",
    "otel.status_code", "otel.status_description", "error", "internal.span.format", "w3c.tracestate",
})

_EXPECT_OTLP = 'an OTLP-JSON object {"resourceSpans": [...]} (or Jaeger api_v3 {"result": {"resourceSpans": ...}})'
_EXPECT_JAEGER = 'Jaeger UI JSON {"data": [{"traceID": ..., "spans": [...]}]} (or one trace object)'


def read(source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any], fmt: str | None) -> Trace:
    with _no_gc():
        return _read(source, fmt)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Reading allocates millions of small containers that all stay alive; CPython's cyclic collector would
    rescan them again and again and make reading super-linear (1.5x slower per span at 100k spans). Nothing
    built here forms cycles, so the collector is paused for the read and restored after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read(source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any], fmt: str | None) -> Trace:
    if isinstance(source, Mapping):
        builder = TraceBuilder("<object>")
        _dispatch(source, fmt, builder)
        return builder.build()
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        return _read_file(Path(source), fmt)
    if isinstance(source, str):
        return _read_text(source, fmt, "<text>")
    builder = TraceBuilder("<object>")
    for i, doc in enumerate(source):
        builder.line = i + 1
        _dispatch(doc, fmt, builder)
    return builder.build()


def read_text(text: str, fmt: str | None, source: str) -> Trace:
    """JSON text holding one document, a list of documents, or several concatenated / one per line."""
    with _no_gc():
        return _read_text(text, fmt, source)


def _read_text(text: str, fmt: str | None, source: str) -> Trace:
    builder = TraceBuilder(source)
    for line, doc in _documents(text, source, 1):
        builder.line = line
        _dispatch_any(doc, fmt, builder)
    return builder.build()


def _read_file(path: Path, fmt: str | None) -> Trace:
    source = str(path)
    builder = TraceBuilder(source)
    try:
        fh = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise TraceReadError("file not found", source=source) from None
    except OSError as exc:
        raise TraceReadError(f"cannot open the file: {exc.strerror or exc}", source=source) from None
    with fh:
        try:
            lineno = 0
            first = ""
            for raw in fh:
                lineno += 1
                if raw.strip():
                    first = raw
                    break
            if not first:
                raise TraceReadError(f"the file is empty; expected {_expected(fmt)}", source=source)
            try:
                doc = json.loads(first)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                # pretty-printed (or a top-level list): one document spanning many lines, read whole
                for line, d in _documents(first + fh.read(), source, lineno):
                    builder.line = line
                    _dispatch_any(d, fmt, builder)
                return builder.build()
            builder.line = lineno
            _dispatch(doc, fmt, builder)
            for raw in fh:
                lineno += 1
                if not raw.strip():
                    continue
                builder.line = lineno
                try:
                    # without the newline a line cut inside a string reads "Unterminated string", not
                    # "Invalid control character"
                    doc = json.loads(raw.rstrip("\r\n"))
                except ValueError as exc:
                    raise TraceReadError(
                        f"expected one complete JSON object per line (JSON Lines of {_expected(fmt)}); "
                        f"this line is cut short or malformed ({_json_problem(exc)})",
                        source=source, line=lineno,
                    ) from None
                _dispatch_any(doc, fmt, builder)
        except UnicodeDecodeError as exc:
            raise TraceReadError(f"not UTF-8 text ({exc.reason}); expected {_expected(fmt)}",
                                 source=source) from None
    return builder.build()


def _expected(fmt: str | None) -> str:
    if fmt == "otlp":
        return _EXPECT_OTLP
    if fmt == "jaeger":
        return _EXPECT_JAEGER
    return "OTLP-JSON or Jaeger JSON"


def _json_problem(exc: ValueError) -> str:
    msg = getattr(exc, "msg", None) or str(exc)
    col = getattr(exc, "colno", None)
    if not col:
        return msg
    # json's own messages may already end in "at" ("Unterminated string starting at")
    return f"{msg} column {col}" if msg.endswith(" at") else f"{msg} at column {col}"


def _documents(text: str, source: str, first_line: int) -> Iterator[tuple[int, Any]]:
    """Each JSON document in ``text`` with the line it starts on (``first_line`` is the text's first line)."""
    decoder = json.JSONDecoder()
    pos = 0
    n = len(text)
    base = first_line - 1
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        line = base + text.count("\n", 0, pos) + 1
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise TraceReadError(
                f"expected a complete JSON document ({_json_problem(exc)}); "
                "the file may be cut short or not JSON",
                source=source, line=base + exc.lineno,
            ) from None
        yield line, doc


def _dispatch_any(doc: Any, fmt: str | None, builder: TraceBuilder) -> None:
    if isinstance(doc, list):
        if fmt != "otlp" and doc and isinstance(doc[0], dict) and "spans" in doc[0] and "traceID" in doc[0]:
            for trace in doc:
                _jaeger_trace(trace, builder)
            return
        for d in doc:
            _dispatch(d, fmt, builder)
        return
    _dispatch(doc, fmt, builder)


def _dispatch(doc: Any, fmt: str | None, builder: TraceBuilder) -> None:
    if not isinstance(doc, Mapping):
        raise builder._err(f"expected {_expected(fmt)}, got a JSON {type(doc).__name__}")
    if "error" in doc and "resourceSpans" not in doc and "result" not in doc and "data" not in doc:
        err = doc["error"]
        msg = err.get("message") if isinstance(err, Mapping) else err
        raise builder._err(f"the backend answered with an error instead of spans: {msg}")
    is_otlp = "resourceSpans" in doc or "result" in doc
    is_jaeger = "data" in doc or ("spans" in doc and "traceID" in doc)
    if fmt == "otlp" or (fmt is None and is_otlp):
        if not is_otlp:
            raise builder._err(f"expected {_EXPECT_OTLP}; found keys {sorted(doc)[:5]}")
        _otlp_doc(doc, builder)
    elif fmt == "jaeger" or (fmt is None and is_jaeger):
        if not is_jaeger:
            raise builder._err(f"expected {_EXPECT_JAEGER}; found keys {sorted(doc)[:5]}")
        _jaeger_doc(doc, builder)
    else:
        raise builder._err(f"expected {_expected(fmt)}; found keys {sorted(doc)[:5]}")


# --- OTLP-JSON ----------------------------------------------------------------------------------------

def _hex(v: Any, size: int) -> str:
    if not isinstance(v, str):
        return ""
    if len(v) == size:
        return v.lower()
    try:  # protobuf's default JSON mapping writes ids as base64
        return base64.b64decode(v).hex().rjust(size, "0")
    except ValueError:
        return v.lower()


def _otlp_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for kind, x in v.items():
        if kind == "stringValue":
            return x
        if kind == "intValue":
            return int(x)
        if kind == "boolValue":
            return bool(x)
        if kind == "doubleValue":
            return float(x)
        if kind == "arrayValue":
            return [_otlp_value(i) for i in (x or {}).get("values") or ()]
        if kind == "kvlistValue":
            return {kv.get("key"): _otlp_value(kv.get("value")) for kv in (x or {}).get("values") or ()}
        if kind == "bytesValue":
            return x
    return None


def _otlp_attrs(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if items:
        for kv in items:
            v = kv["value"]
            # most attributes are strings: skip the generic decoder for them
            s = v.get("stringValue", _MISSING)
            out[kv["key"]] = _otlp_value(v) if s is _MISSING else s
    return out


_MISSING: Any = object()


def _otlp_doc(doc: Mapping[str, Any], builder: TraceBuilder) -> None:
    result = doc.get("result")
    if isinstance(result, Mapping):
        doc = result
    rss = doc.get("resourceSpans")
    if rss is None:
        rss = []
    if not isinstance(rss, list):
        raise builder._err(f"expected resourceSpans to be a list, got {type(rss).__name__}")
    add = builder.add
    try:
        for rs in rss:
            for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
                for sp in ss.get("spans") or ():
                    name = sp.get("name") or ""
                    if not name.startswith(_PREFIXES):
                        continue
                    attrs = _otlp_attrs(sp.get("attributes"))
                    error_message = None
                    if "error.type" in attrs:
                        error_message = _otlp_exception_message(sp)
                    start = int(sp.get("startTimeUnixNano") or 0)
                    end = int(sp.get("endTimeUnixNano") or start)
                    add(trace_id=_hex(sp.get("traceId"), 32), span_id=_hex(sp.get("spanId"), 16), name=name,
                        start_us=start // 1000, end_us=start // 1000 + (end - start) // 1000,
                        attrs=attrs, error_message=error_message)
    except TraceReadError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise builder._err(
            f"expected OTLP-JSON resourceSpans[].scopeSpans[].spans[] with name, traceId, spanId, "
            f"startTimeUnixNano and attributes [{{key, value}}]; found a malformed entry ({type(exc).__name__}: {exc})"
        ) from None


def _otlp_exception_message(sp: Mapping[str, Any]) -> str | None:
    for ev in sp.get("events") or ():
        if ev.get("name") == "exception":
            msg = _otlp_attrs(ev.get("attributes")).get("exception.message")
            if msg is not None:
                return str(msg)
    status = sp.get("status") or {}
    msg = status.get("message")
    return str(msg) if msg else None


# --- Jaeger UI JSON -----------------------------------------------------------------------------------

def _jaeger_value(tag: Mapping[str, Any]) -> Any:
    v = tag.get("value")
    t = tag.get("type")
    if t == "int64":
        return int(v)  # type: ignore[arg-type]
    if t == "float64":
        return float(v)  # type: ignore[arg-type]
    if t == "bool":
        return v if isinstance(v, bool) else str(v).lower() == "true"
    return v


def _jaeger_tags(tags: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tags:
        for tag in tags:
            out[tag["key"]] = _jaeger_value(tag)
    return out


def _jaeger_doc(doc: Mapping[str, Any], builder: TraceBuilder) -> None:
    if "data" in doc:
        data = doc["data"]
        if data is None:
            return
        if not isinstance(data, list):
            raise builder._err(f"expected data to be a list of traces, got {type(data).__name__}")
        for trace in data:
            _jaeger_trace(trace, builder)
    else:
        _jaeger_trace(doc, builder)


def _jaeger_trace(trace: Any, builder: TraceBuilder) -> None:
    try:
        for sp in trace.get("spans") or ():
            name = sp.get("operationName") or ""
            if not name.startswith(_PREFIXES):
                continue
            attrs = {k: v for k, v in _jaeger_tags(sp.get("tags")).items() if k not in _JAEGER_ADDED}
            error_message = None
            if "error.type" in attrs:
                error_message = _jaeger_exception_message(sp)
            start = int(sp.get("startTime") or 0)
            duration = int(sp.get("duration") or 0)
            trace_id = str(sp.get("traceID") or trace.get("traceID") or "").lower().rjust(32, "0")
            builder.add(trace_id=trace_id, span_id=str(sp.get("spanID") or "").lower(), name=name,
                        start_us=start, end_us=start + duration, attrs=attrs, error_message=error_message)
    except TraceReadError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise builder._err(
            f"expected Jaeger spans with traceID, spanID, operationName, startTime (µs), duration and "
            f"tags [{{key, type, value}}]; found a malformed entry ({type(exc).__name__}: {exc})"
        ) from None


def _jaeger_exception_message(sp: Mapping[str, Any]) -> str | None:
    for log in sp.get("logs") or ():
        fields = _jaeger_tags(log.get("fields"))
        if fields.get("event") == "exception" and "exception.message" in fields:
            return str(fields["exception.message"])
    for tag in sp.get("tags") or ():
        if tag.get("key") == "otel.status_description":
            return str(tag.get("value"))
    return None


# --- OTLP-JSON -> Jaeger UI JSON ----------------------------------------------------------------------

_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _jaeger_tag(key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    for kind, x in value.items():
        if kind == "stringValue":
            return {"key": key, "type": "string", "value": x}
        if kind == "intValue":
            return {"key": key, "type": "int64", "value": int(x)}
        if kind == "doubleValue":
            return {"key": key, "type": "float64", "value": float(x)}
        if kind == "boolValue":
            return {"key": key, "type": "bool", "value": bool(x)}
        if kind == "bytesValue":
            return {"key": key, "type": "binary", "value": x}
        # Jaeger has no array or map tags: it stores them as their JSON text
        return {"key": key, "type": "string",
                "value": json.dumps(_otlp_value(value), separators=(",", ":"), ensure_ascii=False)}
    return {"key": key, "type": "string", "value": ""}


def otlp_to_jaeger(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Turn an OTLP-JSON ``{"resourceSpans": ...}`` object into Jaeger's UI JSON, as Jaeger's query service
    does (``otlp2jaeger-in.json`` → ``otlp2jaeger-out.json`` in Jaeger's tests): for testing readers and
    for feeding tools that only speak the UI format."""
    result = doc.get("result")
    if isinstance(result, Mapping):
        doc = result
    traces: dict[str, dict[str, Any]] = {}
    for rs in doc.get("resourceSpans") or ():
        resource = (rs.get("resource") or {}).get("attributes") or []
        service = "unknown_service"
        ptags = []
        for kv in resource:
            if kv["key"] == "service.name":
                service = _otlp_value(kv["value"])
            else:
                ptags.append(_jaeger_tag(kv["key"], kv["value"]))
        process = {"serviceName": service, "tags": ptags}
        for ss in rs.get("scopeSpans") or ():
            scope = ss.get("scope") or {}
            for sp in ss.get("spans") or ():
                tid = sp["traceId"]
                trace = traces.get(tid)
                if trace is None:
                    trace = traces[tid] = {"traceID": tid, "spans": [], "processes": {}, "warnings": None}
                pid = next((k for k, p in trace["processes"].items() if p == process), None)
                if pid is None:
                    pid = f"p{len(trace['processes']) + 1}"
                    trace["processes"][pid] = process
                trace["spans"].append(_jaeger_span(sp, scope, pid))
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}


def _jaeger_span(sp: Mapping[str, Any], scope: Mapping[str, Any], pid: str) -> dict[str, Any]:
    tags: list[dict[str, Any]] = []
    if scope.get("name"):
        tags.append({"key": "otel.scope.name", "type": "string", "value": scope["name"]})
    if scope.get("version"):
        tags.append({"key": "otel.scope.version", "type": "string", "value": scope["version"]})
    tags.extend(_jaeger_tag(kv["key"], kv.get("value") or {}) for kv in sp.get("attributes") or ())
    kind = _KINDS.get(int(sp.get("kind") or 0))
    if kind:
        tags.append({"key": "span.kind", "type": "string", "value": kind})
    status = sp.get("status") or {}
    code = int(status.get("code") or 0)
    if code == 2:
        tags.append({"key": "otel.status_code", "type": "string", "value": "ERROR"})
        tags.append({"key": "error", "type": "bool", "value": True})
    elif code == 1:
        tags.append({"key": "otel.status_code", "type": "string", "value": "OK"})
    if status.get("message"):
        tags.append({"key": "otel.status_description", "type": "string", "value": status["message"]})
    logs = []
    for ev in sp.get("events") or ():
        fields = [{"key": "event", "type": "string", "value": ev.get("name", "")}]
        fields.extend(_jaeger_tag(kv["key"], kv.get("value") or {}) for kv in ev.get("attributes") or ())
        logs.append({"timestamp": int(ev.get("timeUnixNano") or 0) // 1000, "fields": fields})
    start = int(sp.get("startTimeUnixNano") or 0)
    end = int(sp.get("endTimeUnixNano") or start)
    refs = []
    if sp.get("parentSpanId"):
        refs.append({"refType": "CHILD_OF", "traceID": sp["traceId"], "spanID": sp["parentSpanId"]})
    return {
        "traceID": sp["traceId"], "spanID": sp["spanId"], "operationName": sp.get("name", ""),
        "references": refs, "startTime": start // 1000, "duration": (end - start) // 1000,
        "tags": tags, "logs": logs, "processID": pid, "warnings": None,
    }
