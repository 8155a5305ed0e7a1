"""Spans as OTLP-JSON, the same document ``chaoskit.telemetry.to_otlp_json`` makes, without protobuf.

The proxy writes a span as each call ends; through protobuf that costs about a millisecond a span, which on a
busy proxy competes with the event loop for the interpreter. This builds the same dict directly (the JSON
mapping of OTLP: hex ids, 64-bit integers as strings, default values left out); a test holds it equal to
``to_otlp_json`` on every kind of span the proxy writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

__all__ = ["encode"]

# SpanFlags: the context says whether the parent is remote, and whether it is
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200


def _double(value: float) -> Any:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _value(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _double(value)}
    if isinstance(value, bytes):
        raise TypeError("bytes attribute")  # not written by chaoskit; the caller falls back to protobuf
    if isinstance(value, Sequence):
        values = [_value(v) for v in value]
        return {"arrayValue": {"values": values} if values else {}}
    if isinstance(value, Mapping):
        pairs = [{"key": str(k), "value": _value(v)} for k, v in value.items()]
        return {"kvlistValue": {"values": pairs} if pairs else {}}
    raise TypeError(f"attribute of type {type(value).__name__}")


def _attributes(attrs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()]


def _flags(parent: SpanContext | None) -> int:
    return _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)


def _span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None
    out: dict[str, Any] = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}"}
    state = ",".join(f"{k}={v}" for k, v in ctx.trace_state.items()) if ctx.trace_state is not None else ""
    if state:
        out["traceState"] = state
    if span.parent is not None and span.parent.span_id:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    out["name"] = span.name
    out["kind"] = span.kind.value + 1
    out["startTimeUnixNano"] = str(span.start_time)
    out["endTimeUnixNano"] = str(span.end_time)
    if span.attributes:
        out["attributes"] = _attributes(span.attributes)
    if span.dropped_attributes:
        out["droppedAttributesCount"] = span.dropped_attributes
    if span.events:
        events = []
        for event in span.events:
            e: dict[str, Any] = {"timeUnixNano": str(event.timestamp), "name": event.name}
            if event.attributes:
                e["attributes"] = _attributes(event.attributes)
            if event.dropped_attributes:
                e["droppedAttributesCount"] = event.dropped_attributes
            events.append(e)
        out["events"] = events
    if span.dropped_events:
        out["droppedEventsCount"] = span.dropped_events
    if span.links:
        raise TypeError("span links")  # the proxy's spans have none; the caller falls back to protobuf
    status: dict[str, Any] = {}
    if span.status.description:
        status["message"] = span.status.description
    if span.status.status_code.value:
        status["code"] = span.status.status_code.value
    out["status"] = status
    out["flags"] = _flags(span.parent)
    return out


def encode(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """``{"resourceSpans": [...]}`` for ``spans``, grouped by resource and scope in first-seen order.

    Raises TypeError for what it does not encode (bytes attributes, links); the caller then uses protobuf.
    """
    groups: dict[Any, dict[Any, list[dict[str, Any]]]] = {}
    scopes: dict[Any, Any] = {}
    for span in spans:
        scope = span.instrumentation_scope
        key = (scope.name, scope.version, scope.schema_url) if scope is not None else None
        scopes[key] = scope
        groups.setdefault(span.resource, {}).setdefault(key, []).append(_span(span))
    resource_spans = []
    for resource, by_scope in groups.items():
        scope_spans = []
        for key, encoded in by_scope.items():
            scope = scopes[key]
            block: dict[str, Any] = {"scope": {}}
            if scope is not None:
                if scope.name:
                    block["scope"]["name"] = scope.name
                if scope.version:
                    block["scope"]["version"] = scope.version
                if scope.attributes:
                    block["scope"]["attributes"] = _attributes(scope.attributes)
                if scope.schema_url:
                    block["schemaUrl"] = scope.schema_url
            block["spans"] = encoded
            scope_spans.append(block)
        entry: dict[str, Any] = {"resource": {}}
        if resource.attributes:
            entry["resource"]["attributes"] = _attributes(resource.attributes)
        entry["scopeSpans"] = scope_spans
        if resource.schema_url:
            entry["schemaUrl"] = resource.schema_url
        resource_spans.append(entry)
    return {"resourceSpans": resource_spans}
