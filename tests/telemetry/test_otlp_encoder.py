"""The one OTLP-JSON encoder writes, byte for byte, what the official OTel encoder (through protobuf) writes."""

from __future__ import annotations

import base64
import json
import logging
import math
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

import chaoskit
from chaoskit import telemetry


def _official(spans: list[ReadableSpan]) -> dict[str, Any]:
    """The reference: the OTLP exporters' own encoder, its protobuf message as JSON, the ids in hex."""
    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)

    def hex_ids(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v)
                for k, v in obj.items()
            }
        return [hex_ids(v) for v in obj] if isinstance(obj, list) else obj

    return dict(hex_ids(doc)) or {"resourceSpans": []}


def _compact(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


def _every_kind_of_span() -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    limits = SpanLimits(max_span_attributes=12, max_events=2, max_links=1, max_event_attributes=2)
    providers = [
        TracerProvider(resource=Resource({"service.name": "agent", "n": 1}, "https://schema/1"), span_limits=limits),
        TracerProvider(resource=Resource({}), span_limits=limits),
    ]
    for provider in providers:
        provider.add_span_processor(SimpleSpanProcessor(memory))
    plain = providers[0].get_tracer("chaoskit", "1.2")
    scoped = providers[0].get_tracer("other", None, "https://schema/scope", {"lib": "x", "tier": 2})
    remote = SpanContext(
        0x0AF7651916CD43DD8448EB211C80319C,
        0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(1),
        trace_state=TraceState([("vendor", "v1"), ("k", "2")]),
    )
    with plain.start_as_current_span("invoke_agent", context=trace.set_span_in_context(NonRecordingSpan(remote))):
        with plain.start_as_current_span("execute_tool refund", kind=SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "s": 'text ünïcode \n "quoted"',
                    "empty": "",
                    "i": -(2**63),
                    "zero": 0,
                    "b": False,
                    "f": 2.5,
                    "whole": 3.0,
                    "neg0": -0.0,
                    "nan": math.nan,
                    "inf": math.inf,
                    "ninf": -math.inf,
                    "list": ["a", "b"],
                    "dropped1": 1,
                    "dropped2": 2,
                }
            )
            span.set_attribute("ints", [1, 2, 3])  # over the limit: counted as dropped
            for n in range(3):
                span.add_event(f"chaoskit.fault.{n}", {"type": "http", "status": 500, "x": 1.5})
            span.add_event("", {})
            span.set_status(Status(StatusCode.ERROR, "injected: http 500"))
        with scoped.start_as_current_span("linked", kind=SpanKind.PRODUCER, links=[Link(remote, {"why": "retry"})]):
            pass
        with scoped.start_as_current_span("", kind=SpanKind.SERVER) as ok:
            ok.set_attribute("arr", [1.5, math.nan])
            ok.set_attribute("bools", [True, False])
            ok.set_attribute("empty.list", [])
            ok.set_status(Status(StatusCode.OK))
    other = providers[1].get_tracer("second")
    with other.start_as_current_span("consumer", kind=SpanKind.CONSUMER, links=[Link(remote), Link(remote)]):
        pass
    with plain.start_as_current_span("back on the first resource"):
        pass
    return list(memory.get_finished_spans())


def test_every_kind_of_span_encodes_as_the_official_encoder_does() -> None:
    spans = _every_kind_of_span()
    assert len(spans) == 6
    assert telemetry._otlpjson.otlp_line(spans) == _compact(_official(spans))
    # and each span alone, in a document of its own
    for span in spans:
        assert _compact(telemetry.to_otlp_json([span])) == _compact(_official([span]))


def test_grouping_by_resource_and_scope_follows_the_official_encoder() -> None:
    spans = _every_kind_of_span()
    doc = telemetry.to_otlp_json(spans)
    assert [len(rs["scopeSpans"]) for rs in doc["resourceSpans"]] == [2, 1]
    assert [s["name"] for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]] == [
        "execute_tool refund",
        "invoke_agent",
        "back on the first resource",
    ]
    assert telemetry.to_otlp_json([]) == {"resourceSpans": []} == _official([])


def test_the_spans_of_real_episodes_encode_as_the_official_encoder_does() -> None:
    @chaoskit.chaos(irreversible=True, idempotency_arg="key")
    def issue_refund(order: str, key: str) -> dict[str, Any]:
        return {"order": order, "refunded": True}

    plan = chaoskit.Plan.from_dict(
        {"seed": 1, "faults": [{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500}]}
    )
    with telemetry.capture() as cap:
        for n in range(3):
            with chaoskit.episode(f"refund {n}", plan, task="refund order 7"):
                with pytest.raises(chaoskit.ToolHTTPError):
                    issue_refund("7", key="k-1")
                issue_refund("7", key="k-1")
    spans = list(cap.spans)
    assert len(spans) == 9
    assert telemetry._otlpjson.otlp_line(spans) == _compact(_official(spans))


def _span_with(attributes: dict[str, Any]) -> ReadableSpan:
    ctx = SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(1))
    return ReadableSpan(name="s", context=ctx, attributes=attributes, start_time=1, end_time=2, resource=Resource({}))


def test_what_protobuf_cannot_hold_is_kept_not_dropped(caplog: pytest.LogCaptureFixture) -> None:
    # the official encoder drops these attributes (logging a traceback); the local trace file loses nothing
    span = _span_with({"bad.text": "a\udc80b", "huge": 2**64, "ok": "yes"})
    with caplog.at_level(logging.ERROR):
        official = _official([span])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert [a["key"] for a in official] == ["ok"]
    ours = telemetry.to_otlp_json([span])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert ours == [
        {"key": "bad.text", "value": {"stringValue": "a\udc80b"}},
        {"key": "huge", "value": {"intValue": str(2**64)}},
        {"key": "ok", "value": {"stringValue": "yes"}},
    ]
    line = telemetry._otlpjson.otlp_line([span])
    assert json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] == ours


def test_a_value_otlp_has_no_form_for_is_left_out_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    telemetry.reset()
    span = _span_with({"odd": object(), "also.odd": [object()], "kept": 7, "bytes": b"\x00\xff"})
    with caplog.at_level(logging.WARNING, logger="chaoskit"):
        doc = telemetry.to_otlp_json([span, span])
    attrs = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert attrs == [
        {"key": "kept", "value": {"intValue": "7"}},
        {"key": "bytes", "value": {"bytesValue": "AP8="}},
    ]
    assert _compact(doc) == _compact(_official([span, span]))
    warnings = [r.getMessage() for r in caplog.records if r.name == "chaoskit"]
    assert warnings == ["chaoskit: an attribute of type object has no OTLP form; left out"]
