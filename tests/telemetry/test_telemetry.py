"""Where spans go: the user's provider, a private one, JSON Lines files, OTLP; TRACEPARENT joins a trace."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import chaoskit
from chaoskit import Plan, chaos, telemetry


@chaos
def search(q: str) -> list[str]:
    return [q]


def run_py(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_jsonl_writer_writes_otlp_json_with_hex_ids(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    telemetry.write_jsonl(out)
    with chaoskit.episode("file", plan=Plan(faults=[{"type": "error", "tool": "search", "on_call": 1}])):
        with pytest.raises(ConnectionResetError):
            search("a")
        search("b")
    assert telemetry.flush()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    spans = [s for r in records for rs in r["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == 3
    for s in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", s["spanId"])
    names = sorted(s["name"] for s in spans)
    assert names == ["execute_tool search", "execute_tool search", "invoke_agent file"]
    first = next(s for s in spans if s["name"] == "execute_tool search")
    keys = {a["key"] for a in first["attributes"]}
    assert {"gen_ai.tool.name", "chaoskit.attempt", "chaoskit.outcome"} <= keys


def test_user_global_provider_is_used_not_replaced(tmp_path: Path) -> None:
    code = """
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import chaoskit
    from chaoskit import chaos, telemetry

    mine = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "my-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(mine))
    trace.set_tracer_provider(provider)

    @chaos
    def search(q): return q

    with telemetry.capture() as cap:
        with provider.get_tracer("app").start_as_current_span("app-root") as root:
            search("x")
    assert trace.get_tracer_provider() is provider
    span = [s for s in mine.get_finished_spans() if s.name == "execute_tool search"][0]
    assert span.resource.attributes["service.name"] == "my-agent"
    assert span.parent.span_id == root.get_span_context().span_id
    assert [s.name for s in cap.spans] == ["execute_tool search", "app-root"]
    print("OK")
    """
    proc = run_py(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"


def test_traces_file_env_and_traceparent_join_the_parent_trace(tmp_path: Path) -> None:
    out = tmp_path / "child.jsonl"
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = "00f067aa0ba902b7"
    code = """
    import chaoskit
    from chaoskit import chaos

    @chaos
    def search(q): return q

    with chaoskit.episode("child") as ep:
        search("x")
        ep.finish("done")
    """
    proc = run_py(code, CHAOSKIT_TRACES_FILE=str(out), TRACEPARENT=f"00-{trace_id}-{parent}-01")
    assert proc.returncode == 0, proc.stderr
    spans = [
        s
        for line in out.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert {s["traceId"] for s in spans} == {trace_id}
    root = next(s for s in spans if s["name"] == "invoke_agent child")
    assert root["parentSpanId"] == parent


def test_otlp_export_to_an_unreachable_endpoint_never_breaks_the_agent() -> None:
    code = """
    import chaoskit
    from chaoskit import chaos, telemetry

    @chaos
    def search(q): return q

    with chaoskit.episode("x"):
        assert search("a") == "a"
    telemetry.flush(timeout_millis=3000)
    print("OK")
    """
    # port 9 on loopback: nothing listens, the connection is refused at once
    proc = run_py(code, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_EXPORTER_OTLP_TIMEOUT="1")
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout
