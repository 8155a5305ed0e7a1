"""Test helper: a stub Arize Phoenix on 127.0.0.1 that answers its REST API as Phoenix 20.26 does.

``GET /v1/projects`` and ``GET /v1/projects/{name}/spans/otlpv1?limit=N&cursor=C&start_time=T`` answer as
``phoenix/server/api/routers/v1/spans.py`` does: spans newest-inserted first, ``next_cursor`` the base64 Global
ID (``Span:<rowid>``) of the first span of the next page, snake_case OTLP fields with every unset one ``null``,
times as ``int(datetime.timestamp() * 1e9)`` of a microsecond datetime (so a few hundred ns off), and an unknown
project as ``404 Project with name X not found`` in plain text. Any other path gets the UI's HTML page with
200, as Phoenix's single-page app fallback does. :func:`otlp_to_phoenix` turns chaoskit's OTLP-JSON into
the spans Phoenix stores.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["PhoenixStub", "otlp_to_phoenix"]

_VALUE_FIELDS = ("array_value", "bool_value", "bytes_value", "double_value", "int_value", "kvlist_value")
_KINDS = {0: "SPAN_KIND_UNSPECIFIED", 1: "SPAN_KIND_INTERNAL", 2: "SPAN_KIND_SERVER", 3: "SPAN_KIND_CLIENT"}


def _phoenix_time(nanos: Any) -> int:
    """What Phoenix gives back for a time it was sent: stored as a datetime, read out through a float."""
    stored = datetime.fromtimestamp(int(nanos) / 1e9, tz=UTC)
    return int(stored.timestamp() * 1_000_000_000)


def _any_value(v: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys((*_VALUE_FIELDS, "string_value"))
    for kind, x in v.items():
        if kind == "stringValue":
            out["string_value"] = x
        elif kind == "intValue":
            out["int_value"] = int(x)
        elif kind == "boolValue":
            out["bool_value"] = x
        elif kind == "doubleValue":
            out["double_value"] = x
        elif kind == "arrayValue":
            out["array_value"] = {"values": [_any_value(i) for i in (x or {}).get("values") or ()]}
    return out


def _attrs(items: Iterable[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [{"key": kv["key"], "value": _any_value(kv["value"])} for kv in items or ()]


def otlp_to_phoenix(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every span of these OTLP-JSON documents as Phoenix stores and answers it, in insertion order."""
    out: list[dict[str, Any]] = []
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs.get("scopeSpans") or ():
                for sp in ss.get("spans") or ():
                    status = sp.get("status") or {}
                    events = [
                        {
                            "attributes": _attrs(e.get("attributes")),
                            "dropped_attributes_count": None,
                            "name": e["name"],
                            "time_unix_nano": _phoenix_time(e["timeUnixNano"]),
                        }
                        for e in sp.get("events") or ()
                    ]
                    out.append(
                        {
                            "attributes": _attrs(sp.get("attributes")),
                            "dropped_attributes_count": None,
                            "dropped_events_count": None,
                            "dropped_links_count": None,
                            "end_time_unix_nano": _phoenix_time(sp["endTimeUnixNano"]),
                            "events": events or None,
                            "flags": None,
                            "kind": _KINDS.get(sp.get("kind", 1), "SPAN_KIND_INTERNAL"),
                            "links": None,
                            "name": sp["name"],
                            "parent_span_id": sp.get("parentSpanId") or None,
                            "span_id": sp["spanId"],
                            "start_time_unix_nano": _phoenix_time(sp["startTimeUnixNano"]),
                            "status": {"code": status.get("code", 0), "message": status.get("message") or None},
                            "trace_id": sp["traceId"],
                            "trace_state": None,
                        }
                    )
    return out


def _global_id(rowid: int) -> str:
    return base64.b64encode(f"Span:{rowid}".encode()).decode()


class PhoenixStub:
    """A stub Phoenix serving ``projects`` (name -> spans in insertion order); a context manager.

    ``page_cap`` caps a page below the ``limit`` asked for (Phoenix caps at 1000), to exercise paging.
    ``mode`` changes every answer: ``"hang"`` (never answers until the stub stops), ``"html"`` (the UI page
    for every path), ``"401"``, ``"stuck_cursor"`` (a page of spans that always names the same cursor).
    ``requests`` records (path, query, headers) of every request.
    """

    def __init__(self, projects: dict[str, list[dict[str, Any]]], *, page_cap: int = 1000, mode: str = "") -> None:
        self.projects = projects
        self.page_cap = page_cap
        self.mode = mode
        self.requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = []
        #: span annotations received (``POST /v1/span_annotations``), by (name, span_id, identifier) as Phoenix
        self.annotations: dict[tuple[str, str, str], dict[str, Any]] = {}
        #: span ids the annotation endpoint says it does not hold (Phoenix inserts spans some time after reading)
        self.not_held: set[str] = set()
        self.release = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stub.handle(self)

            def do_POST(self) -> None:
                stub.annotate(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> PhoenixStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    # -- answers -------------------------------------------------------------------------------------

    def _send(self, h: BaseHTTPRequestHandler, code: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        h.send_response(code)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(h.path)
        query = urllib.parse.parse_qs(parts.query)
        self.requests.append((parts.path, query, dict(h.headers)))
        if self.mode == "hang":
            self.release.wait(30)
            return
        if self.mode == "401":
            self._send(h, 401, "Invalid token", "text/plain; charset=utf-8")
            return
        segments = [urllib.parse.unquote(s) for s in parts.path.split("/")]
        if self.mode != "html" and parts.path == "/v1/projects":
            data = [{"name": n, "description": None, "id": _global_id(i)} for i, n in enumerate(self.projects)]
            self._send(h, 200, json.dumps({"data": data, "next_cursor": None}))
        elif self.mode != "html" and len(segments) == 6 and segments[1:3] == ["v1", "projects"]:
            if segments[4:] != ["spans", "otlpv1"]:
                self._send(h, 404, json.dumps({"detail": "Not Found"}))
            elif segments[3] not in self.projects:
                self._send(h, 404, f"Project with name {segments[3]} not found", "text/plain; charset=utf-8")
            else:
                self._spans(h, self.projects[segments[3]], query)
        else:
            self._send(h, 200, "<!DOCTYPE html>\n<html><head><title>Phoenix</title></head></html>", "text/html")

    def annotate(self, h: BaseHTTPRequestHandler) -> None:
        """``POST /v1/span_annotations``, as Phoenix 20's handler answers it with ``sync=true``: 404 naming the
        span ids it does not hold (and nothing stored), 400 for the reserved name ``note``, else one upsert per
        annotation, unique by name, span and identifier."""
        parts = urllib.parse.urlsplit(h.path)
        query = urllib.parse.parse_qs(parts.query)
        self.requests.append((parts.path, query, dict(h.headers)))
        body = json.loads(h.rfile.read(int(h.headers.get("content-length") or 0)) or b"{}")
        if parts.path != "/v1/span_annotations":
            self._send(h, 404, json.dumps({"detail": "Not Found"}))
            return
        data = body.get("data") or []
        if any(d.get("name") == "note" for d in data):
            self._send(h, 400, json.dumps({"detail": "The name 'note' is reserved for trace and span notes."}))
            return
        held = {s["span_id"] for spans in self.projects.values() for s in spans} - self.not_held
        missing = sorted({d["span_id"] for d in data} - held)
        if missing:
            self._send(h, 404, json.dumps({"detail": f"Spans with IDs {', '.join(missing)} do not exist."}))
            return
        ids = []
        for d in data:
            key = (d["name"], d["span_id"], d.get("identifier", ""))
            self.annotations[key] = d
            ids.append(base64.b64encode(f"SpanAnnotation:{list(self.annotations).index(key) + 1}".encode()).decode())
        self._send(h, 200, json.dumps({"data": [{"id": i} for i in ids] if query.get("sync") == ["true"] else []}))

    def _spans(self, h: BaseHTTPRequestHandler, spans: list[dict[str, Any]], query: dict[str, list[str]]) -> None:
        limit = int(query.get("limit", ["100"])[0])
        if not 0 < limit <= 1000:
            self._send(h, 422, json.dumps({"detail": "limit: must be > 0 and <= 1000"}))
            return
        limit = min(limit, self.page_cap)
        rows = list(self._rows(spans, query))
        if "cursor" in query:
            rowid = int(base64.b64decode(query["cursor"][0]).decode().split(":")[1])
            rows = [(i, s) for i, s in rows if i <= rowid]
        page, extra = rows[:limit], rows[limit : limit + 1]
        cursor = _global_id(extra[0][0]) if extra else None
        if self.mode == "stuck_cursor":
            cursor = _global_id(len(spans))
        self._send(h, 200, json.dumps({"data": [s for _, s in page], "next_cursor": cursor}))

    @staticmethod
    def _rows(spans: list[dict[str, Any]], query: dict[str, list[str]]) -> Iterator[tuple[int, dict[str, Any]]]:
        since = datetime.fromisoformat(query["start_time"][0]) if "start_time" in query else None
        for rowid in range(len(spans), 0, -1):  # newest inserted first, as Phoenix orders them
            span = spans[rowid - 1]
            if since is None or span["start_time_unix_nano"] >= since.timestamp() * 1e9:
                yield rowid, span
