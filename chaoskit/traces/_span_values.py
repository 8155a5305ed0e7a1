"""Decode the ids, times and attribute values of OTLP-JSON and Jaeger JSON spans, each checked for its type."""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from collections.abc import Mapping
from typing import Any

from chaoskit.semconv import EXCEPTION_EVENT, EXCEPTION_MESSAGE, JAEGER_LOG_EVENT, OTEL_STATUS_DESCRIPTION
from chaoskit.traces._records import show

__all__ = [
    "BadValue",
    "int_value",
    "jaeger_exception_message",
    "jaeger_id",
    "jaeger_value",
    "json_kind",
    "nanos",
    "otlp_exception_message",
    "otlp_id",
    "otlp_value",
]

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
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
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
