"""Test helper: a stub of Jaeger v2's api_v3 HTTP gateway on 127.0.0.1, answering as Jaeger's own code does.

What it copies, from jaegertracing/jaeger ``cmd/jaeger/internal/extension/jaegerquery/internal/apiv3``
(``http_gateway.go``, ``query_parser.go``):
- ``GET /api/v3/traces`` needs ``query.start_time_min`` and ``query.start_time_max`` (RFC 3339), reads
  ``query.service_name`` and the search depth from ``query.search_depth`` or its older name
  ``query.num_traces`` (default 100); a bad parameter is ``400 {"error": {"httpCode": 400, "message":
  "malformed parameter ..."}}``;
- found traces: ``200`` ``application/json`` ``{"result": {"resourceSpans": [...]}}``, the resource spans of
  every trace one after the other (compact JSON; chunked when longer than Go's 2 KiB buffer);
- none: ``404 {"error": {"httpCode": 404, "message": "No traces found"}}`` written by ``http.Error``
  (``text/plain; charset=utf-8``, a newline after the JSON);
- any other path: Go's mux ``404 page not found``.
``answer`` replaces the whole answer (status, headers, body) for tampered or broken answers; ``stall`` makes
the stub hold the connection open until the test ends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

__all__ = ["JaegerStub", "jaeger_stub", "otlp_service"]

_GO_BUFFER = 2048


def otlp_service(doc: dict[str, Any]) -> str | None:
    """The ``service.name`` of the first resource of an OTLP-JSON document."""
    for rs in doc.get("resourceSpans") or ():
        for kv in (rs.get("resource") or {}).get("attributes") or ():
            if kv.get("key") == "service.name":
                value = kv["value"].get("stringValue")
                return value if isinstance(value, str) else None
    return None


def _starts(doc: dict[str, Any]) -> list[int]:
    return [
        int(sp["startTimeUnixNano"])
        for rs in doc.get("resourceSpans") or ()
        for ss in rs.get("scopeSpans") or ()
        for sp in ss.get("spans") or ()
    ]


@dataclass
class JaegerStub:
    """The stub's state: ``traces`` (OTLP-JSON documents, one per trace) and the ``queries`` it received."""

    url: str = ""
    traces: list[dict[str, Any]] = field(default_factory=list)
    queries: list[dict[str, list[str]]] = field(default_factory=list)
    #: (status, headers, body) to answer instead of Jaeger's own answer
    answer: tuple[int, dict[str, str], bytes] | None = None
    #: send this many bytes of the answer, then hold the connection open until the test ends
    stall_after: int | None = None
    #: send the answer one byte at a time, this many seconds apart
    trickle: float | None = None
    release: threading.Event = field(default_factory=threading.Event)

    def find(self, q: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        """Jaeger's answer to ``GET /api/v3/traces`` with the query ``q``."""

        def get(*names: str) -> str:
            return next((q[n][0] for n in names if q.get(n, [""])[0]), "")

        lo, hi = get("query.startTimeMin", "query.start_time_min"), get("query.startTimeMax", "query.start_time_max")
        if not lo or not hi:
            return _error(400, "query.startTimeMin and query.startTimeMax are required")
        try:
            t_min, t_max = _rfc3339(lo), _rfc3339(hi)
        except ValueError as exc:
            return _error(400, f"malformed parameter query.start_time_min: {exc}")
        depth = get("query.searchDepth", "query.search_depth") or get("query.num_traces") or "100"
        if not depth.lstrip("-").isdigit():
            return _error(400, f'malformed parameter query.num_traces: strconv.Atoi: parsing "{depth}": invalid syntax')
        service = get("query.serviceName", "query.service_name")
        found = [
            t
            for t in self.traces
            if (not service or otlp_service(t) == service) and any(t_min <= s <= t_max for s in _starts(t))
        ]
        found.sort(key=lambda t: max(_starts(t)), reverse=True)
        found = found[: int(depth)] if int(depth) > 0 else found
        if not found:
            return _error(404, "No traces found")
        combined = {"result": {"resourceSpans": [rs for t in found for rs in t["resourceSpans"]]}}
        return 200, {"Content-Type": "application/json"}, json.dumps(combined, separators=(",", ":")).encode()


def _rfc3339(text: str) -> int:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f'parsing time "{text}" as RFC 3339: missing the time zone')
    return int(t.timestamp()) * 10**9 + t.microsecond * 1000


def _error(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    """What Go's ``http.Error`` writes for api_v3's error object."""
    body = json.dumps({"error": {"httpCode": status, "message": message}}, separators=(",", ":")) + "\n"
    return status, {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}, body.encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: JaegerStub

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.stub.queries.append({"path": [url.path], **query})
        if self.stub.answer is not None:
            status, headers, body = self.stub.answer
        elif url.path == "/api/v3/traces":
            status, headers, body = self.stub.find(query)
        else:
            status, headers, body = 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n"
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        slow = self.stub.stall_after is not None or self.stub.trickle is not None
        chunked = len(body) > _GO_BUFFER and "Content-Length" not in headers and not slow
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.stub.stall_after is not None:
            self.wfile.write(body[: self.stub.stall_after])
            self.wfile.flush()
            self.stub.release.wait(30)
            return
        if self.stub.trickle is not None:
            for i in range(len(body)):
                if self.stub.release.is_set():
                    return
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(self.stub.trickle)
            return
        if chunked:
            for i in range(0, len(body), 64 * 1024):
                part = body[i : i + 64 * 1024]
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def jaeger_stub() -> Iterator[JaegerStub]:
    """Run a stub on a free port of 127.0.0.1 for the duration of a test (use as a fixture body)."""
    stub = JaegerStub()
    handler = type("Handler", (_Handler,), {"stub": stub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # a client that left
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
