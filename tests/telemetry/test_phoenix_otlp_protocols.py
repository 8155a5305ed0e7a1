"""OTLP over gRPC or HTTP, chosen by the standard variables only, as backends such as Phoenix take both.

``OTEL_EXPORTER_OTLP_PROTOCOL=grpc`` (or ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, which wins) makes chaoskit's
own exporter speak gRPC; ``http/protobuf`` is the default. The receivers are small OTLP endpoints on 127.0.0.1
(a gRPC TraceService, an HTTP handler), started and stopped by the fixtures. The live round trip with a real
Phoenix is ``tests/traces/test_phoenix_backend.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

SCRIPT = textwrap.dedent(
    """
    import chaoskit
    from chaoskit import Plan, chaos

    @chaos
    def lookup(order_id):
        return {"status": "shipped"}

    plan = Plan(faults=[{"type": "timeout", "tool": "lookup", "on_call": 1, "after_s": 0.01}])
    with chaoskit.episode("over-the-wire", plan=plan) as ep:
        try:
            lookup("4832")
        except chaoskit.ToolTimeout:
            pass
        lookup("4832")
        ep.finish("shipped")
    """
)
NAMES = ["execute_tool lookup", "execute_tool lookup", "invoke_agent over-the-wire"]


class _Received:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.lock = threading.Lock()

    def add(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        with self.lock:
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    self.names += [s.name for s in ss.spans]


@pytest.fixture
def grpc_receiver() -> Iterator[tuple[str, _Received]]:
    got = _Received()

    class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> Any:
            got.add(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", got
    finally:
        server.stop(grace=None)


@pytest.fixture
def http_receiver() -> Iterator[tuple[str, _Received]]:
    got = _Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            got.add(request)
            payload = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def _run(**otel: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    env.update(otel, OTEL_EXPORTER_OTLP_TIMEOUT="5")
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)


def test_grpc_protocol_exports_over_grpc(grpc_receiver: tuple[str, _Received]) -> None:
    endpoint, got = grpc_receiver
    proc = _run(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert proc.returncode == 0, proc.stderr
    assert sorted(got.names) == NAMES, proc.stderr


def test_the_traces_protocol_wins_over_the_general_one(grpc_receiver: tuple[str, _Received]) -> None:
    endpoint, got = grpc_receiver
    proc = _run(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="GRPC",
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(got.names) == NAMES, proc.stderr


@pytest.mark.parametrize("protocol", [None, "http/protobuf"])
def test_http_protobuf_is_the_default(http_receiver: tuple[str, _Received], protocol: str | None) -> None:
    endpoint, got = http_receiver
    extra = {} if protocol is None else {"OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    proc = _run(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, **extra)
    assert proc.returncode == 0, proc.stderr
    assert sorted(got.names) == NAMES, proc.stderr


def test_an_unknown_protocol_is_warned_about_and_http_is_used(http_receiver: tuple[str, _Received]) -> None:
    endpoint, got = http_receiver
    proc = _run(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="http/json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(got.names) == NAMES
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is not an OTLP protocol chaoskit can export with" in proc.stderr
