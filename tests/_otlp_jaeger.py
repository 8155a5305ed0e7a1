"""Test helper: OTLP-JSON to Jaeger UI JSON, as Jaeger's query service converts it, to feed the Jaeger reader."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["otlp_to_jaeger"]


def _otlp_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for kind, x in v.items():
        if kind in ("stringValue", "bytesValue"):
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
        return {
            "key": key,
            "type": "string",
            "value": json.dumps(_otlp_value(value), separators=(",", ":"), ensure_ascii=False),
        }
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
        process = {"serviceName": service, "tags": sorted(ptags, key=lambda t: t["key"])}
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
        # Jaeger v2's query service sorts log fields by key, `event` first (as recorded in tests/data/jaeger)
        fields.sort(key=lambda f: (f["key"] != "event", f["key"]))
        logs.append({"timestamp": int(ev.get("timeUnixNano") or 0) // 1000, "fields": fields})
    start = int(sp.get("startTimeUnixNano") or 0)
    end = int(sp.get("endTimeUnixNano") or start)
    refs = []
    if sp.get("parentSpanId"):
        refs.append({"refType": "CHILD_OF", "traceID": sp["traceId"], "spanID": sp["parentSpanId"]})
    return {
        "traceID": sp["traceId"],
        "spanID": sp["spanId"],
        "operationName": sp.get("name", ""),
        "references": refs,
        "startTime": start // 1000,
        "duration": (end - start) // 1000,
        "tags": sorted(tags, key=lambda t: t["key"]),  # sorted by key, as Jaeger v2 answers
        "logs": logs,
        "processID": pid,
        "warnings": None,
    }
