"""The one OTLP-JSON span encoder: finished spans as the ``{"resourceSpans": [...]}`` document, and as one line.

Hand-written rather than the official encoder (protobuf's ``encode_spans`` + ``MessageToDict``: 5x slower a
span, ``benchmarks/bench_otlp_encode.py``), which is its reference instead: ``tests/telemetry/test_otlp_encoder.py``
holds the bytes equal on every kind of span. The OTLP/JSON mapping: hex ids, 64-bit integers as strings, enums
as numbers, default values left out, keys in field-number order. On purpose, a string with a lone surrogate or
an integer beyond 64 bits (which the official encoder drops, logging a traceback) is kept: the local trace file
loses no evidence. A value OTLP has no form for is left out, with one warning.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from chaoskit.telemetry._sinks import warn_once

__all__ = ["otlp_line", "to_otlp_json"]

# SpanFlags: the context says whether the parent is remote, and whether it is
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200


class _Unencodable(TypeError):
    """A value OTLP has no place for: its attribute is left out."""


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value) if type(value) is int else str(int(value))}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"doubleValue": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if value is None:
        return {}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Sequence):
        values = [_value(v) for v in value]
        return {"arrayValue": {"values": values} if values else {}}
    if isinstance(value, Mapping):
        pairs = [_pair(str(k), v) for k, v in value.items()]
        return {"kvlistValue": {"values": pairs} if pairs else {}}
    raise _Unencodable(type(value).__name__)


def _pair(key: str, value: Any) -> dict[str, Any]:
    # proto3 leaves a field at its default out: an empty key is not written
    return {"key": key, "value": _value(value)} if key else {"value": _value(value)}


def _attributes(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, v in attrs.items():
        try:
            out.append(_pair(k, v))
        except _Unencodable as exc:
            warn_once(("otlp-value", str(exc)), "chaoskit: an attribute of type %s has no OTLP form; left out", exc)
    return out


def _flags(context: SpanContext | None) -> int:
    return _HAS_IS_REMOTE | _IS_REMOTE if context is not None and context.is_remote else _HAS_IS_REMOTE


def _put_attributes(out: dict[str, Any], attrs: Mapping[str, Any] | None, dropped: int) -> None:
    if attrs:
        encoded = _attributes(attrs)
        if encoded:
            out["attributes"] = encoded
    if dropped:
        out["droppedAttributesCount"] = dropped


def _events(span: ReadableSpan) -> list[dict[str, Any]]:
    events = []
    for event in span.events:
        e: dict[str, Any] = {}
        if event.timestamp:
            e["timeUnixNano"] = str(event.timestamp)
        if event.name:
            e["name"] = event.name
        _put_attributes(e, event.attributes, event.dropped_attributes)
        events.append(e)
    return events


def _links(span: ReadableSpan) -> list[dict[str, Any]]:
    links = []
    for link in span.links:
        ctx = link.context
        out: dict[str, Any] = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}"}
        _put_attributes(out, link.attributes, link.dropped_attributes)
        out["flags"] = _flags(ctx)
        links.append(out)
    return links


def _span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    trace_id, span_id = (ctx.trace_id, ctx.span_id) if ctx is not None else (0, 0)
    out: dict[str, Any] = {"traceId": f"{trace_id:032x}", "spanId": f"{span_id:016x}"}
    if ctx is not None and ctx.trace_state is not None:
        state = ",".join(f"{k}={v}" for k, v in ctx.trace_state.items())
        if state:
            out["traceState"] = state
    if span.parent is not None:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    if span.name:
        out["name"] = span.name
    out["kind"] = span.kind.value + 1
    if span.start_time:
        out["startTimeUnixNano"] = str(span.start_time)
    if span.end_time:
        out["endTimeUnixNano"] = str(span.end_time)
    _put_attributes(out, span.attributes, span.dropped_attributes)
    if span.events:
        out["events"] = _events(span)
    if span.dropped_events:
        out["droppedEventsCount"] = span.dropped_events
    if span.links:
        out["links"] = _links(span)
    if span.dropped_links:
        out["droppedLinksCount"] = span.dropped_links
    status: dict[str, Any] = {}
    if span.status.description:
        status["message"] = span.status.description
    if span.status.status_code.value:
        status["code"] = span.status.status_code.value
    out["status"] = status
    out["flags"] = _flags(span.parent)
    return out


def to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Spans as an OTLP-JSON ``{"resourceSpans": [...]}`` object with lowercase hex ids (the OTLP/JSON spec),
    grouped by resource and instrumentation scope (equal ones together) in first-seen order."""
    groups: dict[Any, dict[Any, list[dict[str, Any]]]] = {}
    #: the group of a (resource, scope) pair of objects: a resource's hash serializes its attributes, once here
    by_id: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope or None
        encoded = by_id.get((id(resource), id(scope)))
        if encoded is None:
            encoded = groups.setdefault(resource, {}).setdefault(scope, [])
            by_id[(id(resource), id(scope))] = encoded
        encoded.append(_span(span))
    return {"resourceSpans": [_resource_spans(r, scopes) for r, scopes in groups.items()]}


def _resource_spans(resource: Any, scopes: dict[Any, list[dict[str, Any]]]) -> dict[str, Any]:
    blocks = []
    for scope, encoded in scopes.items():
        head: dict[str, Any] = {}
        if scope is not None:
            if scope.name:
                head["name"] = scope.name
            if scope.version:
                head["version"] = scope.version
            _put_attributes(head, scope.attributes, 0)
        block: dict[str, Any] = {"scope": head, "spans": encoded}
        if scope is not None and scope.schema_url:
            block["schemaUrl"] = scope.schema_url
        blocks.append(block)
    head = {}
    _put_attributes(head, resource.attributes, 0)
    entry: dict[str, Any] = {"resource": head, "scopeSpans": blocks}
    if resource.schema_url:
        entry["schemaUrl"] = resource.schema_url
    return entry


def otlp_line(spans: Sequence[ReadableSpan]) -> str:
    """``spans`` as one OTLP-JSON Lines record (compact, no newline): what every span file holds per line."""
    return json.dumps(to_otlp_json(spans), separators=(",", ":"))
