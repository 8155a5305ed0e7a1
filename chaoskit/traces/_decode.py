"""The one decoder of exported spans: OTLP-JSON (and Jaeger api_v3's answers) and Jaeger UI JSON into a TraceBuilder.

Every field that is used is checked for its type: a malformed entry raises a TraceReadError naming the JSON path
(``resourceSpans[0].scopeSpans[1].spans[3]``) or the span id, the field and what is allowed. The ids, times and
attribute values are decoded by one set of helpers (also used by the metrics' model steps). Lines of OTLP-JSON
Lines, and the entries of an api_v3 answer, first go through typed msgspec structs (:func:`read_line`), which hold
only the fields grading uses, so msgspec skips the rest (stack traces, resources) without building Python
objects for them. That fast path must give what the general walker gives: it accepts only lines it reads
exactly as :func:`dispatch` does and declines every other one before anything reaches the builder (a line that
is not UTF-8, not JSON, not the expected shape, a value holding two kinds where the walker would take the first
in written order, or holding a chaoskit span the walker would reject); the walker then reads the line again and
gives its usual message, so what is accepted and every message stay the same.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from chaoskit.semconv import (
    ERROR_TYPE,
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    FAULT_SUMMARY,
    JAEGER_ERROR,
    JAEGER_LOG_EVENT,
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
from chaoskit.traces._attributes import PREFIXES, boolean
from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._records import TraceReadError, show

__all__ = [
    "BadValue",
    "dispatch",
    "dispatch_any",
    "expected",
    "int_value",
    "jaeger_exception_message",
    "jaeger_id",
    "jaeger_value",
    "json_kind",
    "nanos",
    "otlp_attributes",
    "otlp_exception_message",
    "otlp_id",
    "otlp_spans",
    "otlp_value",
    "read_api_v3",
    "read_line",
]


# --- ids, times and values -------------------------------------------------------------------------------

_HEX = re.compile(r"[0-9a-fA-F]+")
_INT_TEXT = re.compile(r"-?[0-9]{1,20}")


def json_kind(v: Any) -> str:
    """What a JSON value is, for messages: object, list, string, boolean, number or null."""
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if v is None else names.get(type(v), type(v).__name__)


class BadValue(ValueError):
    """A value of the wrong type for its field; the message says what is allowed."""


def otlp_id(v: Any, size: int) -> str | None:
    """An OTLP id (``size`` hex digits, or base64 of ``size // 2`` bytes) as lower-case hex; None if invalid."""
    if not isinstance(v, str):
        return None
    if len(v) == size and _HEX.fullmatch(v):
        out = v.lower()
    else:
        try:  # protobuf's default JSON mapping writes ids as base64
            raw = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) * 2 != size:
            return None
        out = raw.hex()
    return out if out.strip("0") else None  # an all-zero id is OTel's "invalid"


def int_value(v: Any) -> int | None:
    """A whole number, also written as a digit string or a whole float; None otherwise."""
    if type(v) is str and v.isdigit() and v.isascii() and len(v) <= 20:
        return int(v)
    if isinstance(v, str) and _INT_TEXT.fullmatch(v):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def nanos(v: Any) -> int | None:
    """A time or duration: a whole number from 0 to 2**64; None otherwise."""
    n = int_value(v)
    return n if n is not None and 0 <= n < 2**64 else None


def otlp_value(v: Any) -> Any:
    """The value of an OTLP AnyValue; :class:`BadValue` when its content does not match its kind."""
    if v is None:
        return None
    if type(v) is not dict and not isinstance(v, Mapping):
        raise BadValue(f'expected an OTLP AnyValue such as {{"stringValue": ...}}, got {show(v)}')
    for kind, x in v.items():
        if kind in ("stringValue", "bytesValue"):
            if isinstance(x, str):
                return x
        elif kind == "intValue":
            n = int_value(x)
            if n is not None:
                return n
        elif kind == "boolValue":
            if isinstance(x, bool):
                return x
        elif kind == "doubleValue":
            with contextlib.suppress(TypeError, ValueError):
                if not isinstance(x, bool):
                    return float(x)
        elif kind in ("arrayValue", "kvlistValue"):
            items = x.get("values") if isinstance(x, Mapping) else None if x is None else x
            if items is None:
                return [] if kind == "arrayValue" else {}
            if isinstance(items, list):
                if kind == "arrayValue":
                    return [otlp_value(i) for i in items]
                if all(isinstance(kv, Mapping) and isinstance(kv.get("key"), str) for kv in items):
                    return {kv["key"]: otlp_value(kv.get("value")) for kv in items}
        else:
            continue  # a kind this reader does not know
        raise BadValue(f"expected {kind} to hold a {kind[:-5]} value, got {show(x)}")
    return None


def otlp_exception_message(sp: Mapping[str, Any]) -> str | None:
    """The message of an OTLP span's exception event, else its status message."""
    events = sp.get("events")
    for ev in events if isinstance(events, list) else ():
        if isinstance(ev, Mapping) and ev.get("name") == EXCEPTION_EVENT and isinstance(ev.get("attributes"), list):
            for kv in ev["attributes"]:
                if isinstance(kv, Mapping) and kv.get("key") == EXCEPTION_MESSAGE:
                    with contextlib.suppress(BadValue, RecursionError):
                        msg = otlp_value(kv.get("value"))
                        if msg is not None:
                            return str(msg)
    status = sp.get("status")
    msg = status.get("message") if isinstance(status, Mapping) else None
    return str(msg) if msg else None


def jaeger_id(v: Any, size: int) -> str | None:
    """A Jaeger id (up to ``size`` hex digits, padded to ``size``) as lower-case hex; None if invalid."""
    # Jaeger writes a 64-bit trace id as 16 hex digits: pad ids to their full size
    if not isinstance(v, str) or not 0 < len(v) <= size or not _HEX.fullmatch(v) or not v.strip("0"):
        return None
    return v.lower().rjust(size, "0")


def jaeger_value(tag: Mapping[str, Any]) -> Any:
    """The value of a Jaeger tag, checked against its ``type``; :class:`BadValue` if it does not match."""
    v = tag.get("value")
    t = tag.get("type")
    if t == "int64":
        n = int_value(v)
        if n is None:
            raise BadValue(f"expected a whole number for type int64, got {show(v)}")
        return n
    if t == "float64":
        try:
            if isinstance(v, bool) or v is None:
                raise ValueError
            return float(v)
        except (TypeError, ValueError):
            raise BadValue(f"expected a number for type float64, got {show(v)}") from None
    if t == "bool":
        b = boolean(v)
        if b is not None:
            return b
        raise BadValue(f"expected true or false for type bool, got {show(v)}")
    return v


def jaeger_exception_message(sp: Mapping[str, Any]) -> str | None:
    """The message of a Jaeger span's exception log, else its status description."""
    logs = sp.get("logs")
    for log in logs if isinstance(logs, list) else ():
        fields = log.get("fields") if isinstance(log, Mapping) else None
        items = fields if isinstance(fields, list) else ()
        got = {f.get("key"): f.get("value") for f in items if isinstance(f, Mapping)}
        if got.get(JAEGER_LOG_EVENT) == EXCEPTION_EVENT and got.get(EXCEPTION_MESSAGE) is not None:
            return str(got[EXCEPTION_MESSAGE])
    tags = sp.get("tags")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, Mapping) and tag.get("key") == OTEL_STATUS_DESCRIPTION:
            return str(tag.get("value"))
    return None


# --- documents ---------------------------------------------------------------------------------------

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


def otlp_attributes(items: Any, where: str, anchor: tuple[str, str] | None, builder: TraceBuilder) -> dict[str, Any]:
    """The attributes of an OTLP span (``where`` names it in errors), each value decoded and checked."""
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
    for scope, k, sp in otlp_spans(doc, builder):
        name = sp.get("name")
        if type(name) is str and name.startswith(PREFIXES):
            _otlp_span(sp, name, f"{scope}.spans[{k}]", builder)
        elif name == "initialize":
            builder.protocol_fault(_summary(sp.get("attributes")))


def otlp_spans(doc: Mapping[str, Any], builder: TraceBuilder) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """Each span object of an OTLP-JSON document (or of api_v3's ``{"result": ...}``), with the JSON path of its
    scope and its index there (``resourceSpans[0].scopeSpans[1]``, 3); every level is checked, and one of the
    wrong type is a ``builder.error`` naming its path. ``builder.spans_seen`` counts the spans met."""
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
                yield q, k, sp


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
    attrs = otlp_attributes(sp.get("attributes"), where, anchor, builder)
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


# --- the typed fast path (msgspec) ----------------------------------------------------------------------


class _Decline(Exception):
    """The line is not one this path reads exactly as the general reader does."""


# gc=False: the decoded structs form no cycles, and the collector need not track millions of them
class _Value(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    stringValue: str | UnsetType = UNSET
    boolValue: bool | UnsetType = UNSET
    intValue: str | int | UnsetType = UNSET
    doubleValue: float | UnsetType = UNSET
    bytesValue: str | UnsetType = UNSET
    arrayValue: _Array | UnsetType | None = UNSET
    kvlistValue: _KvList | UnsetType | None = UNSET


class _KeyValue(msgspec.Struct, gc=False):
    key: str
    value: _Value | None = None


class _Array(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    values: list[_Value | None] | None = None


class _KvList(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    values: list[_KeyValue] | None = None


class _Event(msgspec.Struct, gc=False):
    name: Any = None
    attributes: list[_KeyValue] | None = None


class _Status(msgspec.Struct, gc=False):
    message: str | None = None


class _Span(msgspec.Struct, gc=False):
    name: str | None = None
    traceId: Any = None
    spanId: Any = None
    startTimeUnixNano: Any = None
    endTimeUnixNano: Any = None
    attributes: list[_KeyValue] | None = None
    events: list[_Event] | None = None
    status: _Status | None = None


class _Scope(msgspec.Struct, gc=False):
    spans: list[_Span] | None = None


class _Resource(msgspec.Struct, gc=False):
    scopeSpans: list[_Scope] | UnsetType | None = UNSET
    instrumentationLibrarySpans: list[_Scope] | UnsetType | None = UNSET


class _Document(msgspec.Struct, gc=False):
    resourceSpans: list[_Resource] | UnsetType | None = UNSET
    result: msgspec.Raw | UnsetType = UNSET


_decode = msgspec.json.Decoder(_Document).decode


class _ApiV3Result(msgspec.Struct, gc=False):
    resourceSpans: list[msgspec.Raw]


class _ApiV3(msgspec.Struct, gc=False):
    """Jaeger api_v3's answer, its ``resourceSpans`` entries left as text to be read one at a time."""

    result: _ApiV3Result
    # a document holding these as well is not only an answer: the whole-document reader says what it is
    error: msgspec.Raw | UnsetType = UNSET
    resourceSpans: msgspec.Raw | UnsetType = UNSET


_decode_api_v3 = msgspec.json.Decoder(_ApiV3).decode


def read_api_v3(text: str, builder: TraceBuilder) -> bool:
    """Read Jaeger api_v3's answer ``{"result": {"resourceSpans": [...]}}`` into ``builder`` one entry at a time
    (each through :func:`read_line`, else :func:`dispatch`), so that the whole parsed answer never sits in
    memory; False, having added nothing, when ``text`` is not exactly such an object (the caller then reads it
    whole, and the general reader names what is wrong). An entry that cannot be read raises; the caller reads
    the answer again whole, for a message naming its JSON path (``result.resourceSpans[3]``)."""
    try:
        answer = _decode_api_v3(text)
    except (msgspec.DecodeError, RecursionError):
        return False
    if answer.error is not UNSET or answer.resourceSpans is not UNSET:
        return False
    # (each entry is a view on ``text``: no copy of the answer is made)
    for entry in answer.result.resourceSpans:
        raw = bytes(entry)
        if not read_line(b'{"resourceSpans":[' + raw + b"]}", builder):
            dispatch({"resourceSpans": [json.loads(raw)]}, "otlp", builder)
    return True


#: what ``TraceBuilder.add`` takes, made for every chaoskit span of a line before any of them is added
_Prepared = tuple[str, str, tuple[str, str], str, str, str, int, int, dict[str, Any], "str | None"]


def read_line(raw: bytes, builder: TraceBuilder) -> bool:
    """Read one JSON Lines line of OTLP-JSON into ``builder`` and return True; or return False, having added
    nothing, when the general reader must read it (see the module's docstring)."""
    # msgspec skips the fields it does not use without checking their text as UTF-8, or their whole numbers
    # against Python's limit on digits, both of which the general reader refuses
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if _long_digits(raw):
        return False
    try:
        doc = _decode(raw)
        if doc.result is not UNSET or doc.resourceSpans is UNSET:
            return False
        seen, prepared = _prepare(doc, builder)
    except (msgspec.DecodeError, RecursionError, _Decline):
        return False
    del doc
    builder.spans_seen += seen
    add = builder.add
    for kind, where, anchor, tid, sid, name, start_us, end_us, attrs, error_message in prepared:
        add(
            kind=kind,
            where=where,
            anchor=anchor,
            trace_id=tid,
            span_id=sid,
            name=name,
            start_us=start_us,
            end_us=end_us,
            attrs=attrs,
            error_message=error_message,
        )
    return True


def _long_digits(raw: bytes) -> bool:
    """True when ``raw`` may hold a whole number of more digits than Python converts (4,300 by default): such a
    run of digits covers at least one of these blocks of half that length entirely."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return False
    block = (limit + 1) // 2
    # (a block's first byte first: most blocks start elsewhere than in a number, and are not copied)
    return any(48 <= raw[i] <= 57 and raw[i : i + block].isdigit() for i in range(0, len(raw) - block + 1, block))


def _prepare(doc: _Document, builder: TraceBuilder) -> tuple[int, list[_Prepared]]:
    seen = 0
    out: list[_Prepared] = []
    for rs in doc.resourceSpans or ():
        scopes = rs.scopeSpans if rs.scopeSpans is not UNSET else rs.instrumentationLibrarySpans
        for ss in scopes or ():
            spans = ss.spans or ()
            seen += len(spans)
            for sp in spans:
                name = sp.name
                if name is not None and name.startswith(PREFIXES):
                    one = _span(sp, name, builder)
                    if one is not None:
                        out.append(one)
                elif name == "initialize":
                    builder.protocol_fault(_attributes(sp.attributes).get(FAULT_SUMMARY))
    return seen, out


def _span(sp: _Span, name: str, builder: TraceBuilder) -> _Prepared | None:
    """The arguments of ``builder.add`` for a span named like chaoskit's; None for a span to ignore."""
    attrs = _attributes(sp.attributes)
    raw_sid = sp.spanId
    sid = otlp_id(raw_sid, 16)
    where = f"span {sid} ({name})"
    anchor = ("spanId", raw_sid)
    try:
        kind = builder.kind(name, attrs, where, anchor)
    except TraceReadError:
        raise _Decline from None  # an earlier span of the line may fail first: the general reader says which
    if kind is None:
        return None
    if sid is None:
        raise _Decline
    tid = otlp_id(sp.traceId, 32)
    start, end = nanos(sp.startTimeUnixNano), nanos(sp.endTimeUnixNano)
    if tid is None or not start or not end or end < start:
        raise _Decline
    message = _exception_message(sp) if ERROR_TYPE in attrs else None
    start_us = start // 1000
    return (kind, where, anchor, tid, sid, name, start_us, start_us + (end - start) // 1000, attrs, message)


def _attributes(items: list[_KeyValue] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items or ():
        v = kv.value
        if v is None:
            # the walker then reads every value of the span with otlp_value, which takes the first of several
            # kinds in written order
            raise _Decline
        # a string value is taken whatever else the value object holds, as the walker's own fast path does
        s = v.stringValue
        out[kv.key] = s if s is not UNSET else _value(v)
    return out


def _value(v: _Value | None) -> Any:
    """What ``otlp_value`` makes of a value object holding at most one kind; _Decline for several."""
    if v is None:
        return None
    s, b, n, d, raw, arr, kvl = (
        v.stringValue,
        v.boolValue,
        v.intValue,
        v.doubleValue,
        v.bytesValue,
        v.arrayValue,
        v.kvlistValue,
    )
    kinds = (
        (s is not UNSET)
        + (b is not UNSET)
        + (n is not UNSET)
        + (d is not UNSET)
        + (raw is not UNSET)
        + (arr is not UNSET)
        + (kvl is not UNSET)
    )
    if kinds != 1:
        if kinds:
            raise _Decline  # otlp_value takes the first kind in written order, which a struct does not keep
        return None
    if s is not UNSET:
        return s
    if b is not UNSET:
        return b
    if n is not UNSET:
        if isinstance(n, str):
            whole = int(n) if n.isdigit() and n.isascii() and len(n) <= 20 else int_value(n)
        else:
            # orjson reads a whole number past 64 bits as a float, msgspec as an int: the general reader says
            whole = n if -(2**63) <= n < 2**64 else None
        if whole is None:
            raise _Decline
        return whole
    if d is not UNSET:
        return float(d)
    if raw is not UNSET:
        return raw
    if arr is not UNSET:
        return [_value(i) for i in arr.values or ()] if arr is not None else []
    if kvl is not UNSET and kvl is not None:
        return {kv.key: _value(kv.value) for kv in kvl.values or ()}
    return {}


def _exception_message(sp: _Span) -> str | None:
    """As ``otlp_exception_message``: the message of the span's exception event, else its status message."""
    for ev in sp.events or ():
        if ev.name == EXCEPTION_EVENT and ev.attributes is not None:
            for kv in ev.attributes:
                if kv.key == EXCEPTION_MESSAGE:
                    msg = _value(kv.value)
                    if msg is not None:
                        return str(msg)
    msg = sp.status.message if sp.status is not None else None
    return str(msg) if msg else None
