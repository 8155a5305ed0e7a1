"""``chaoskit.telemetry.SpanFileWriter`` (the proxies' ``--traces``) writes what ``to_otlp_json`` writes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

import chaoskit
from chaoskit import telemetry


def _spans_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _run(path: Path) -> list[Any]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    writer = telemetry.SpanFileWriter(str(path))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(writer)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent", kind=SpanKind.INTERNAL) as root:
        root.set_attribute("chaoskit.episode.id", "ep-1")
        with tracer.start_as_current_span("execute_tool issue_refund", kind=SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.tool.name": "issue_refund",
                    "chaoskit.attempt": 2,
                    "chaoskit.outcome": "error",
                    "chaoskit.tool.executed": True,
                    "chaoskit.fault.retry_after_s": 2.5,
                    "odd.float": math.inf,
                    "odd.list": ["a", "b"],
                    "odd.ints": [1, 2, 3],
                }
            )
            span.add_event("chaoskit.fault", {"type": "http", "status": 500})
            span.set_status(Status(StatusCode.ERROR, "injected: http 500"))
        other = tracer.start_span("linked", links=[Link(root.get_span_context(), {"why": "retry"})])
        other.end()
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_the_file_holds_the_same_spans_as_to_otlp_json(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    spans = _run(path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    written = sorted((s for doc in lines for s in _spans_of(doc)), key=lambda s: s["spanId"])
    expected = sorted(_spans_of(telemetry.to_otlp_json(spans)), key=lambda s: s["spanId"])
    assert len(written) == 3
    assert written == expected


def test_chaoskit_reads_the_file_of_a_real_episode_back(tmp_path: Path) -> None:
    @chaoskit.chaos(irreversible=True, idempotency_arg="key")
    def issue_refund(order: str, key: str) -> str:
        return f"refunded {order}"

    plan = chaoskit.Plan.from_dict(
        {"seed": 1, "faults": [{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500}]}
    )
    path = tmp_path / "spans.jsonl"
    writer = telemetry.SpanFileWriter(str(path))
    with telemetry.capture() as cap:
        with chaoskit.episode("refund", plan, task="refund order 7"):
            with pytest.raises(chaoskit.ToolHTTPError):
                issue_refund("7", key="k-1")
            issue_refund("7", key="k-1")
    for span in cap.spans:
        writer.on_end(span)
    writer.shutdown()
    trace = chaoskit.Trace.load(path)
    assert [(a.tool, a.attempt, a.fault_type) for a in trace.episodes[0].attempts] == [
        ("issue_refund", 1, "http"),
        ("issue_refund", 2, None),
    ]
    assert trace.episodes[0].name == "refund"


def test_a_path_that_cannot_be_written_fails_at_start(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(OSError):
        telemetry.SpanFileWriter(str(tmp_path / "dir.jsonl"))


def test_at_once_the_span_is_in_the_file_when_end_returns(tmp_path: Path) -> None:
    # the MCP proxy writes a call's span before it answers: no thread, no flush, the line is there at end()
    path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    writer = telemetry.SpanFileWriter(str(path), at_once=True)
    provider.add_span_processor(writer)
    tracer = provider.get_tracer("test")
    for n in range(3):
        tracer.start_span(f"execute_tool t{n}").end()
        names = [s["name"] for line in path.read_text().splitlines() for s in _spans_of(json.loads(line))]
        assert names == [f"execute_tool t{i}" for i in range(n + 1)]
    writer.shutdown()
    assert len(path.read_text().splitlines()) == 3
