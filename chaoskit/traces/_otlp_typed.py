"""Read a line of OTLP-JSON Lines through typed msgspec structs, or decline it so the general reader reads it.

The structs hold only the fields grading uses, so msgspec skips the rest (stack traces, resources) without
building Python objects for them, and the attribute values arrive already typed. The result must equal what
``_formats`` makes of the same line, so this path accepts only lines it reads exactly as ``_formats`` does and
declines every other one, before anything reaches the builder: a line that is not UTF-8, not JSON, not the
expected shape (an unknown value kind, a value holding two kinds where ``_formats`` would take the first in
written order), or holding a chaoskit span ``_formats`` would reject. The general reader then reads the line
again and gives its usual message, so what is accepted and every message stay the same.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from chaoskit.semconv import ERROR_TYPE, EXCEPTION_EVENT, EXCEPTION_MESSAGE, FAULT_SUMMARY
from chaoskit.traces._attributes import PREFIXES
from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._records import TraceReadError
from chaoskit.traces._span_values import int_value, nanos, otlp_id

__all__ = ["read_line"]


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
            # _formats then reads every value of the span with otlp_value, which takes the first of several
            # kinds in written order
            raise _Decline
        # a string value is taken whatever else the value object holds, as _formats' fast path does
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
