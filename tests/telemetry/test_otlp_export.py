"""OTLP/HTTP export configured only by the standard environment variables reaches a real receiver.

The receiver is a small OTLP/HTTP endpoint on 127.0.0.1 that decodes the protobuf request, started and
stopped by the fixture.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []

    def spans(self) -> list[tuple[str, dict[str, object]]]:
        out = []
        for req in self.requests:
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        attrs = {a.key: _value(a.value) for a in s.attributes}
                        out.append((s.name, attrs))
        return out


def _value(v: object) -> object:
    kind = v.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(v, kind) if kind else None


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receiver]]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            rec.requests.append(req)
            rec.paths.append(self.path)
            rec.headers.append(dict(self.headers))
            payload = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", rec
    finally:
        server.shutdown()
        server.server_close()


def test_env_configured_otlp_export_delivers_every_span(receiver: tuple[str, Receiver]) -> None:
    endpoint, rec = receiver
    code = textwrap.dedent(
        """
        import chaoskit
        from chaoskit import Plan, chaos

        @chaos(irreversible=True)
        def refund(order_id, api_key=""):
            return {"ok": True}

        plan = Plan(faults=[{"type": "http", "tool": "refund", "on_call": 1, "status": 503, "retry_after": 1}])
        with chaoskit.episode("exported", plan=plan) as ep:
            try:
                refund("4832", api_key="sk-secret")
            except chaoskit.ToolHTTPError:
                pass
            refund("4832", api_key="sk-secret")
            ep.finish("refunded")
        """
    )
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": "x-team=agents",
        "OTEL_SERVICE_NAME": "support-agent",
    }
    env.pop("CHAOSKIT_TRACES_FILE", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # spans were flushed at exit, without the script calling flush()
    assert rec.paths and set(rec.paths) == {"/v1/traces"}
    assert all(h.get("x-team") == "agents" for h in rec.headers)
    service = {
        a.value.string_value
        for r in rec.requests
        for rs in r.resource_spans
        for a in rs.resource.attributes
        if a.key == "service.name"
    }
    assert service == {"support-agent"}
    spans = rec.spans()
    names = sorted(n for n, _ in spans)
    assert names == ["execute_tool refund", "execute_tool refund", "invoke_agent exported"]
    attempts = sorted((a for n, a in spans if n == "execute_tool refund"), key=lambda a: a["chaoskit.attempt"])
    assert attempts[0]["chaoskit.fault.http.status"] == 503 and attempts[0]["chaoskit.outcome"] == "error"
    assert attempts[1]["chaoskit.outcome"] == "ok"
    assert all("sk-secret" not in str(a["chaoskit.args"]) for a in attempts)
