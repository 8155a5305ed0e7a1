"""The local span file never drops a span: 50,000 ``@chaos`` calls at full speed in one episode all reach it, with
or without an OTLP export beside it; the export's own bounded queue says how many it dropped and names the
complete local copy, and its blocking mode drops none."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
import sys
import chaoskit
from chaoskit import Plan, chaos

@chaos
def echo(n: int) -> int:
    return n

calls = int(sys.argv[1])
with chaoskit.episode("burst", plan=Plan(faults=[{"type": "error", "tool": "echo", "on_call": 3}])):
    for n in range(calls):
        try:
            echo(n)
        except ConnectionResetError:
            pass
print("agent done")
"""


def _run_agent(calls: int, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(AGENT), str(calls)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), **env},
    )


def _span_ids(path: Path) -> list[str]:
    ids: list[str] = []
    for line in path.read_bytes().splitlines():
        doc = orjson.loads(line)
        ids.extend(s["spanId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"])
    return ids


@contextmanager
def collector(delay_s: float) -> Iterator[tuple[str, list[int]]]:
    """An OTLP/HTTP receiver on 127.0.0.1 that counts the spans it gets, answering each batch after ``delay_s``."""
    received: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest.FromString(body)
            threading.Event().wait(delay_s)
            received.append(sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_fifty_thousand_spans_at_full_speed_all_reach_the_local_file(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    done = _run_agent(50_000, CHAOSKIT_TRACES_FILE=str(out))
    assert done.returncode == 0, done.stderr
    ids = _span_ids(out)
    # 50,000 attempts and the episode's root span, each once
    assert len(ids) == 50_001
    assert len(set(ids)) == 50_001
    assert "dropping" not in done.stderr.lower(), done.stderr


def test_a_dropping_export_names_its_loss_and_the_complete_local_copy(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    with collector(delay_s=0.05) as (endpoint, received):
        done = _run_agent(
            5_000,
            CHAOSKIT_TRACES_FILE=str(out),
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_BSP_MAX_QUEUE_SIZE="64",
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE="32",
        )
    assert done.returncode == 0, done.stderr
    assert len(set(_span_ids(out))) == 5_001
    lost = 5_001 - sum(received)
    assert lost > 0, "the tiny export queue was expected to overflow"
    warning = [line for line in done.stderr.splitlines() if "were not delivered" in line]
    assert len(warning) == 1, done.stderr
    assert f"{lost} of 5001 spans were not delivered" in warning[0]
    assert "dropped by the full export queue" in warning[0] and "CHAOSKIT_EXPORT_BLOCK=1" in warning[0]
    assert f"every span is in the local copy {out}" in warning[0]


def test_the_blocking_export_mode_delivers_every_span(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    with collector(delay_s=0.005) as (endpoint, received):
        done = _run_agent(
            5_000,
            CHAOSKIT_TRACES_FILE=str(out),
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_BSP_MAX_QUEUE_SIZE="64",
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE="32",
            CHAOSKIT_EXPORT_BLOCK="1",
            CHAOSKIT_EXPORT_TIMEOUT="30",
        )
    assert done.returncode == 0, done.stderr
    assert sum(received) == 5_001
    assert len(set(_span_ids(out))) == 5_001
    assert "were not delivered" not in done.stderr
