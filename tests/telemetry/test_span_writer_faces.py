"""The one span writer and the one span capture, through each of their faces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import chaoskit
from chaoskit import telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.testing import capture_spans, own_capture


def _spans(n: int = 3) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent") as root:
        root.set_attribute("chaoskit.episode.id", "ep-1")
        for i in range(n - 1):
            with tracer.start_as_current_span(f"execute_tool t{i}") as span:
                span.set_attribute("chaoskit.attempt", i + 1)
    return list(memory.get_finished_spans())


def _spans_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_every_face_of_the_writer_writes_the_same_line(tmp_path: Path) -> None:
    spans = _spans()
    expected = json.dumps(telemetry.to_otlp_json(spans), separators=(",", ":"))
    exporter = telemetry.JsonLinesSpanExporter(tmp_path / "exporter.jsonl")
    exporter.export(spans)
    exporter.shutdown()
    telemetry.write_otlp_json(spans, tmp_path / "written.jsonl")
    sink = TraceSink(tmp_path / "traces.jsonl")
    sink.write_spans(spans)
    sink.close()
    for name in ("exporter", "written", "traces"):
        assert _lines(tmp_path / f"{name}.jsonl") == [expected], name
    writer = telemetry.SpanFileWriter(str(tmp_path / "writer.jsonl"), at_once=True)
    for span in spans:
        writer.on_end(span)
    writer.shutdown()
    per_span = [json.dumps(telemetry.to_otlp_json([s]), separators=(",", ":")) for s in spans]
    assert _lines(tmp_path / "writer.jsonl") == per_span


def test_traces_starts_its_file_anew_and_appending_faces_append(tmp_path: Path) -> None:
    spans = _spans()
    path = tmp_path / "out.jsonl"
    path.write_text("old line\n", encoding="utf-8")
    telemetry.write_otlp_json(spans, path)
    assert len(_lines(path)) == 2 and _lines(path)[0] == "old line"
    sink = TraceSink(path)
    sink.write_lines(["", '{"resourceSpans":[]}\n', "  "])
    sink.write_spans([])
    assert _lines(path) == ['{"resourceSpans":[]}']  # started anew, blank lines and empty batches skipped
    sink.close()
    sink.write_spans(spans)
    assert _lines(path) == ['{"resourceSpans":[]}']  # nothing after close


def test_traces_without_a_path_writes_nothing_and_a_bad_path_names_the_flag(tmp_path: Path) -> None:
    sink = TraceSink(None)
    sink.write_spans(_spans())
    sink.write_lines(["{}"])
    sink.close()
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(ChaoskitError, match=r"--traces .*dir\.jsonl: cannot write"):
        TraceSink(tmp_path / "dir.jsonl")


def test_the_exporter_reports_a_failed_write_and_writes_again_after_shutdown(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    (tmp_path / "dir.jsonl").mkdir()
    bad = telemetry.JsonLinesSpanExporter(tmp_path / "dir.jsonl")
    assert bad.export(_spans()) is SpanExportResult.FAILURE
    good = telemetry.JsonLinesSpanExporter(tmp_path / "ok.jsonl")
    assert good.export(_spans(1)) is SpanExportResult.SUCCESS
    good.shutdown()
    assert good.export(_spans(2)) is SpanExportResult.SUCCESS
    assert len(_lines(tmp_path / "ok.jsonl")) == 2


@chaoskit.chaos
def _lookup(order: str) -> str:
    return order


def test_a_capture_of_any_kind_keeps_the_engine_on_its_bulk_path() -> None:
    # the captures do nothing when a span starts: a processor that does would cost every tool call its bulk path
    telemetry.get_tracer()
    with capture_spans() as cap:
        assert telemetry.bulk_tracer() is not None
        with own_capture() as mine, chaoskit.episode("e"):
            assert telemetry.bulk_tracer() is not None
            _lookup("7")
    assert [len(c.attempt_spans("_lookup")) for c in (cap, mine)] == [1, 1]
    collector = telemetry.add_processor(SpanCollector(keep_other=True))
    try:
        assert telemetry.bulk_tracer() is None  # it reads the episode's root span at its start
    finally:
        telemetry.remove_processor(collector, shutdown=False)


def test_the_local_trace_file_keeps_the_engine_on_its_bulk_path(tmp_path: Path) -> None:
    # the file writer does nothing when a span starts either: CHAOSKIT_TRACES_FILE costs a tool call no bulk path
    telemetry.get_tracer()
    writer = telemetry.write_jsonl(tmp_path / "spans.jsonl")
    try:
        assert telemetry.bulk_tracer() is not None
        with chaoskit.episode("e"):
            _lookup("7")
        telemetry.flush()
    finally:
        telemetry.remove_processor(writer)
    names = [s["name"] for line in _lines(tmp_path / "spans.jsonl") for s in _spans_of(json.loads(line))]
    assert sorted(names) == ["execute_tool _lookup", "invoke_agent e"]


def test_the_runner_s_collector_buckets_the_one_capture_s_spans_by_episode() -> None:
    collector = SpanCollector(keep_other=True)
    with telemetry.capture(collector):
        with chaoskit.episode("first") as first:
            _lookup("1")
        with chaoskit.episode("second") as second:
            _lookup("2")
        _lookup("outside")
    got: dict[str, Any] = {k: sorted(s.name for s in collector.pop(k)) for k in (first.id, second.id)}
    assert got == {
        first.id: ["execute_tool _lookup", "invoke_agent first"],
        second.id: ["execute_tool _lookup", "invoke_agent second"],
    }
    assert [s.name for s in collector.other] == ["execute_tool _lookup"]
    assert collector.by_key == {}


def test_a_capture_keeps_nothing_after_its_shutdown() -> None:
    with telemetry.capture() as cap:
        _lookup("1")
        cap.processor.shutdown()
        _lookup("2")
    assert len(cap.spans) == 1
    cap.clear()
    assert cap.spans == ()
