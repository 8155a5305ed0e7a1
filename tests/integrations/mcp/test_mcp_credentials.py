"""The MCP proxy's Streamable HTTP front passes the agent's credentials to an HTTP upstream, and writes none down.

The upstream is a small Streamable HTTP MCP server (JSON answers) that records the headers of every POST; the
proxy runs as the command does (``--listen ... --upstream URL --traces``); the agent is the SDK's client with
an ``Authorization`` bearer token, an ``X-Api-Key`` and a cookie, and refreshes its token mid-session.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")
uvicorn = pytest.importorskip("uvicorn")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from chaoskit_mcp._upstream import is_credential  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

TOKEN, REFRESHED, API_KEY, COOKIE = "Bearer s3cret-t0ken", "Bearer r3freshed-t0ken", "k3y-v4lue", "sid=c00kie"


class RecordingServer:
    """A Streamable HTTP MCP server with one tool, ``echo``, answering in JSON; records each POST's headers."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":  # no standalone SSE stream, no session to delete
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.posts.append((request.get("method", "?"), headers))
        if "id" not in request:  # a notification
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        method, params = request["method"], request.get("params") or {}
        if method == "initialize":
            result: Any = {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "recording", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            result = {}
        data = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        extra = [(b"mcp-session-id", b"upstream-session")] if method == "initialize" else []
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": data})


@pytest.fixture
def upstream() -> Iterator[tuple[RecordingServer, str]]:
    app = RecordingServer()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield app, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _proxy(upstream: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = tmp_path / "url"
    argv = [sys.executable, "-m", "chaoskit_mcp", "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    argv += ["--traces", str(tmp_path / "spans.jsonl"), "--upstream", upstream]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (ready.exists() and ready.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, "the proxy did not listen"
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def test_the_agents_credentials_reach_the_upstream_unchanged_and_are_written_nowhere(
    upstream: tuple[RecordingServer, str], tmp_path: Path
) -> None:
    app, url = upstream
    proc, front = _proxy(url, tmp_path)
    try:

        async def agent() -> list[str]:
            headers = {"Authorization": TOKEN, "X-Api-Key": API_KEY, "Cookie": COOKIE}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
                async with streamable_http_client(front, http_client=client) as (r, w), ClientSession(r, w) as s:
                    await s.initialize()
                    first = await s.call_tool("echo", {"text": "one"})
                    client.headers["Authorization"] = REFRESHED  # the agent refreshed its token
                    second = await s.call_tool("echo", {"text": "two"})
            return [getattr(result.content[0], "text", "") for result in (first, second)]

        assert anyio.run(agent) == ["one", "two"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    calls = [h for method, h in app.posts if method == "tools/call"]
    assert len(calls) == 2
    assert calls[0]["authorization"] == TOKEN and calls[1]["authorization"] == REFRESHED
    for method, headers in app.posts:  # every message the proxy posted carried them, unchanged
        assert (headers.get("x-api-key"), headers.get("cookie")) == (API_KEY, COOKIE), method
        assert headers.get("mcp-session-id") in (None, "upstream-session")  # never the front's session
    spans = (tmp_path / "spans.jsonl").read_text()
    assert '"execute_tool echo"' in spans
    for secret in ("s3cret", "r3freshed", API_KEY, "c00kie"):
        assert secret not in spans and secret not in err.decode(errors="replace")


def test_which_headers_are_credentials() -> None:
    for name in ("Authorization", "Cookie", "X-Api-Key", "api-key", "X-Auth-Token", "X-Access-Token", "X-Goog-Key"):
        assert is_credential(name), name
    for name in ("mcp-session-id", "mcp-protocol-version", "content-type", "accept", "Proxy-Authorization", "host"):
        assert not is_credential(name), name
