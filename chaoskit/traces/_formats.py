"""Walk OTLP-JSON and Jaeger UI JSON documents, and hand each span named like chaoskit's to the TraceBuilder.

Every field that is used is checked for its type: a malformed entry raises a TraceReadError naming the JSON path
(``resourceSpans[0].scopeSpans[1].spans[3]``) or the span id, the field and what is allowed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from chaoskit.semconv import (
    ERROR_TYPE,
    FAULT_SUMMARY,
    JAEGER_ERROR,
    JAEGER_SPAN_FORMAT,
    JAEGER_SPAN_KIND,
    JAEGER_TRACESTATE,
    OTEL_LIBRARY_NAME,
    OTEL_LIBRARY_VERSION,
    OTEL_SCOPE_NAME,
    OTEL_SCOPE_VERSION,
    OTEL_STATUS_CODE,
    OTEL_STATUS_DESCRIPTION,
)
from chaoskit.traces._attributes import PREFIXES
from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._records import show
from chaoskit.traces._span_values import (
    BadValue,
    jaeger_exception_message,
    jaeger_id,
    jaeger_value,
    json_kind,
    nanos,
    otlp_exception_message,
    otlp_id,
    otlp_value,
)

__all__ = ["dispatch", "dispatch_any", "expected"]

#: tags Jaeger adds when it converts OTLP; they are not span attributes
_JAEGER_ADDED = frozenset(
    {
        OTEL_SCOPE_NAME,
        OTEL_SCOPE_VERSION,
        OTEL_LIBRARY_NAME,
        OTEL_LIBRARY_VERSION,
        JAEGER_SPAN_KIND,
        OTEL_STATUS_CODE,
        OTEL_STATUS_DESCRIPTION,
        JAEGER_ERROR,
        JAEGER_SPAN_FORMAT,
        JAEGER_TRACESTATE,
    }
)

_EXPECT_OTLP = 'an OTLP-JSON object {"resourceSpans": [...]} (or Jaeger api_v3 {"result": {"resourceSpans": ...}})'
_EXPECT_JAEGER = 'Jaeger UI JSON {"data": [{"traceID": ..., "spans": [...]}]} (or one trace object)'


def expected(fmt: str | None) -> str:
    """What a document of format ``fmt`` (None: either) looks like, for error messages."""
    if fmt == "otlp":
        return _EXPECT_OTLP
    if fmt == "jaeger":
        return _EXPECT_JAEGER
    return "OTLP-JSON or Jaeger JSON"


def dispatch_any(doc: Any, fmt: str | None, builder: TraceBuilder) -> None:
    """Read one parsed document, or a list of them (a list of Jaeger trace objects is one UI document)."""
    if isinstance(doc, list):
        if fmt != "otlp" and doc and isinstance(doc[0], dict) and "spans" in doc[0] and "traceID" in doc[0]:
            for i, trace in enumerate(doc):
                _jaeger_trace(trace, f"[{i}]", builder)
            return
        for d in doc:
            dispatch(d, fmt, builder)
        return
    dispatch(doc, fmt, builder)


def dispatch(doc: Any, fmt: str | None, builder: TraceBuilder) -> None:
    """Read one parsed document of format ``fmt``, sniffed from its keys when None, into ``builder``."""
    if not isinstance(doc, Mapping):
        raise builder.error(f"expected {expected(fmt)}, got a JSON {json_kind(doc)}")
    if "error" in doc and "resourceSpans" not in doc and "result" not in doc and "data" not in doc:
        err = doc["error"]
        msg = err.get("message") if isinstance(err, Mapping) else err
        raise builder.error(f"the backend answered with an error instead of spans: {show(msg, 200)}")
    is_otlp = "resourceSpans" in doc or "result" in doc
    is_jaeger = "data" in doc or "traceID" in doc
    keys = ", ".join(show(k, 40) for k in list(doc)[:5]) or "none (an empty object)"
    if fmt == "otlp" or (fmt is None and is_otlp):
        if not is_otlp:
            raise builder.error(f"expected {_EXPECT_OTLP}; found keys {keys}")
        _otlp_doc(doc, builder)
    elif fmt == "jaeger" or (fmt is None and is_jaeger):
        if not is_jaeger:
            raise builder.error(f"expected {_EXPECT_JAEGER}; found keys {keys}")
        _jaeger_doc(doc, builder)
    else:
        raise builder.error(f"expected {expected(fmt)}; found keys {keys}")


def _list(v: Any, path: str, what: str, builder: TraceBuilder) -> Sequence[Any]:
    if v is None:
        return ()  # protobuf's JSON mapping leaves empty lists out
    if not isinstance(v, list):
        raise builder.error(f"{path}: expected a list of {what}, got a {json_kind(v)}")
    return v


# --- OTLP-JSON ----------------------------------------------------------------------------------------


def _otlp_attrs(items: Any, where: str, anchor: tuple[str, str] | None, builder: TraceBuilder) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        # the fast path, for every attribute of every chaoskit span; anything unusual takes the checked one,
        # which says what is wrong
        for kv in items:
            key = kv["key"]
            v = kv["value"]
            if type(key) is not str:
                raise TypeError
            # most attributes are strings, then flags and counts: skip the generic decoder for them (a value
            # object with one kind only, so that the decoder's order among several kinds cannot matter)
            s = v.get("stringValue")
            if type(s) is str:
                out[key] = s
                continue
            if len(v) == 1:
                b = v.get("boolValue")
                if type(b) is bool:
                    out[key] = b
                    continue
                n = v.get("intValue")
                if type(n) is str and n.isdigit() and n.isascii() and len(n) <= 20:
                    out[key] = int(n)
                    continue
            out[key] = otlp_value(v)
        return out
    except (AttributeError, KeyError, TypeError, BadValue):
        return _otlp_attrs_checked(items, where, anchor, builder)


def _otlp_attrs_checked(
    items: Any, where: str, anchor: tuple[str, str] | None, builder: TraceBuilder
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in _list(items, f"{where}: attributes", "{key, value} objects", builder):
        key = kv.get("key") if isinstance(kv, Mapping) else None
        if not isinstance(key, str):
            raise builder.error(
                f'{where}: expected each attribute to be {{"key": string, "value": {{...}}}}, got {show(kv)}', anchor
            )
        try:
            out[key] = otlp_value(kv.get("value"))
        except BadValue as exc:
            raise builder.error(f"{where}: attribute {key}: {exc}", anchor) from None
    return out


def _otlp_doc(doc: Mapping[str, Any], builder: TraceBuilder) -> None:
    path = ""
    if "result" in doc:
        result = doc["result"]
        if not isinstance(result, Mapping):
            raise builder.error(
                f"result: expected an object holding resourceSpans (Jaeger api_v3), got a {json_kind(result)}"
            )
        doc, path = result, "result."
    for i, rs in enumerate(_list(doc.get("resourceSpans"), f"{path}resourceSpans", "objects", builder)):
        p = f"{path}resourceSpans[{i}]"
        if not isinstance(rs, Mapping):
            raise builder.error(f"{p}: expected an object with scopeSpans, got a {json_kind(rs)}")
        key = "scopeSpans" if "scopeSpans" in rs else "instrumentationLibrarySpans"
        for j, ss in enumerate(_list(rs.get(key), f"{p}.{key}", "objects", builder)):
            q = f"{p}.{key}[{j}]"
            if not isinstance(ss, Mapping):
                raise builder.error(f"{q}: expected an object with spans, got a {json_kind(ss)}")
            spans = _list(ss.get("spans"), f"{q}.spans", "span objects", builder)
            builder.spans_seen += len(spans)
            for k, sp in enumerate(spans):
                if type(sp) is not dict and not isinstance(sp, Mapping):
                    raise builder.error(f"{q}.spans[{k}]: expected a span object, got a {json_kind(sp)}")
                name = sp.get("name")
                if type(name) is str and name.startswith(PREFIXES):
                    _otlp_span(sp, name, f"{q}.spans[{k}]", builder)
                elif name == "initialize":
                    builder.protocol_fault(_summary(sp.get("attributes")))


def _summary(items: Any) -> Any:
    # the fault summary on the MCP proxy's initialize span (a slow_initialize), read leniently: only a note
    for kv in items if isinstance(items, list) else ():
        if isinstance(kv, Mapping) and kv.get("key") == FAULT_SUMMARY:
            with contextlib.suppress(BadValue):
                return otlp_value(kv.get("value"))
    return None


def _otlp_span(sp: Mapping[str, Any], name: str, path: str, builder: TraceBuilder) -> None:
    raw_sid = sp.get("spanId")
    sid = otlp_id(raw_sid, 16)
    where = f"span {sid} ({name})" if sid else f"{path} ({name})"
    anchor = ("spanId", raw_sid) if isinstance(raw_sid, str) else None
    attrs = _otlp_attrs(sp.get("attributes"), where, anchor, builder)
    kind = builder.kind(name, attrs, where, anchor)
    if kind is None:
        return
    if sid is None:
        raise builder.error(
            f"{where}: expected spanId to be 16 hex digits (or base64 of 8 bytes), not all zero; got {show(raw_sid)}",
            anchor,
        )
    tid = otlp_id(sp.get("traceId"), 32)
    if tid is None:
        raise builder.error(
            f"{where}: expected traceId to be 32 hex digits (or base64 of 16 bytes), not all "
            f"zero; got {show(sp.get('traceId'))}",
            anchor,
        )
    start, end = nanos(sp.get("startTimeUnixNano")), nanos(sp.get("endTimeUnixNano"))
    for field, value in (("startTimeUnixNano", start), ("endTimeUnixNano", end)):
        if not value:
            raise builder.error(
                f"{where}: expected {field}, a time in nanoseconds since the epoch (a whole "
                f"number > 0, as a string or a number), got {show(sp.get(field))}",
                anchor,
            )
    assert start is not None and end is not None
    if end < start:
        raise builder.error(
            f"{where}: the span ends before it starts (endTimeUnixNano {end} < startTimeUnixNano {start})", anchor
        )
    builder.add(
        kind=kind,
        where=where,
        anchor=anchor,
        trace_id=tid,
        span_id=sid,
        name=name,
        start_us=start // 1000,
        end_us=start // 1000 + (end - start) // 1000,
        attrs=attrs,
        error_message=otlp_exception_message(sp) if ERROR_TYPE in attrs else None,
    )


# --- Jaeger UI JSON -----------------------------------------------------------------------------------


def _jaeger_tags(tags: Any, where: str, anchor: tuple[str, str] | None, builder: TraceBuilder) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in _list(tags, f"{where}: tags", "{key, type, value} objects", builder):
        key = tag.get("key") if isinstance(tag, Mapping) else None
        if not isinstance(key, str):
            raise builder.error(
                f'{where}: expected each tag to be {{"key": string, "type": ..., "value": ...}}, got {show(tag)}',
                anchor,
            )
        try:
            out[key] = jaeger_value(tag)
        except BadValue as exc:
            raise builder.error(f"{where}: tag {key}: {exc}", anchor) from None
    return out


def _jaeger_doc(doc: Mapping[str, Any], builder: TraceBuilder) -> None:
    if "data" not in doc:
        _jaeger_trace(doc, "the trace", builder)
        return
    for i, trace in enumerate(_list(doc["data"], "data", "trace objects", builder)):
        _jaeger_trace(trace, f"data[{i}]", builder)


def _jaeger_trace(trace: Any, path: str, builder: TraceBuilder) -> None:
    if not isinstance(trace, Mapping):
        raise builder.error(
            f'{path}: expected a trace object {{"traceID": ..., "spans": [...]}}, got a {json_kind(trace)}'
        )
    if trace.get("spans") is None:
        builder.notes.append(f'Jaeger trace {show(trace.get("traceID"))} has no "spans" list')
        return
    spans = _list(trace["spans"], f"{path}.spans", "span objects", builder)
    builder.spans_seen += len(spans)
    for k, sp in enumerate(spans):
        if not isinstance(sp, Mapping):
            raise builder.error(f"{path}.spans[{k}]: expected a span object, got a {json_kind(sp)}")
        name = sp.get("operationName")
        if isinstance(name, str) and name.startswith(PREFIXES):
            _jaeger_span(sp, name, trace, f"{path}.spans[{k}]", builder)


def _jaeger_span(sp: Mapping[str, Any], name: str, trace: Mapping[str, Any], path: str, builder: TraceBuilder) -> None:
    raw_sid = sp.get("spanID")
    sid = jaeger_id(raw_sid, 16)
    where = f"span {sid} ({name})" if sid else f"{path} ({name})"
    anchor = ("spanID", raw_sid) if isinstance(raw_sid, str) else None
    attrs = {k: v for k, v in _jaeger_tags(sp.get("tags"), where, anchor, builder).items() if k not in _JAEGER_ADDED}
    kind = builder.kind(name, attrs, where, anchor)
    if kind is None:
        return
    if sid is None:
        raise builder.error(
            f"{where}: expected spanID to be up to 16 hex digits, not all zero; got {show(raw_sid)}", anchor
        )
    raw_tid = sp.get("traceID", trace.get("traceID"))
    tid = jaeger_id(raw_tid, 32)
    if tid is None:
        raise builder.error(
            f"{where}: expected traceID to be up to 32 hex digits, not all zero; got {show(raw_tid)}", anchor
        )
    start, duration = nanos(sp.get("startTime")), sp.get("duration")
    micros = nanos(duration)
    if not start:
        raise builder.error(
            f"{where}: expected startTime, the start in microseconds since the epoch (a whole "
            f"number > 0), got {show(sp.get('startTime'))}",
            anchor,
        )
    if isinstance(duration, int) and not isinstance(duration, bool) and duration < 0:
        raise builder.error(f"{where}: the span ends before it starts (duration {duration} µs)", anchor)
    if micros is None:
        raise builder.error(
            f"{where}: expected duration, in microseconds (a whole number >= 0), got {show(duration)}", anchor
        )
    builder.add(
        kind=kind,
        where=where,
        anchor=anchor,
        trace_id=tid,
        span_id=sid,
        name=name,
        start_us=start,
        end_us=start + micros,
        attrs=attrs,
        error_message=jaeger_exception_message(sp) if ERROR_TYPE in attrs else None,
    )
