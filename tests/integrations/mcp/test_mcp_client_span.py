"""The proxy's ``tools/call {tool}`` CLIENT span toward the upstream (the OpenTelemetry MCP conventions): a child of
the ``execute_tool`` attempt span, with the MCP attributes, whose W3C trace context reaches a real SDK server in
``params._meta``, so that the server's own span is its child; none for a call the proxy answers itself; and a
trace holding these spans grades exactly as one without them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit
from chaoskit import Trace, telemetry
from chaoskit.grading.checks import DEFAULT_CHECKS, run_checks

SERVER = Path(__file__).resolve().parents[2] / "_mcp_meta_server.py"
STEP_S = 60
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
TRACESTATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"


def _spans(path: Path) -> list[dict[str, Any]]:
    """The OTLP-JSON spans of a proxy's --traces file, with their attributes as a flat dict."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", ()):
            for ss in rs.get("scopeSpans", ()):
                for span in ss.get("spans", ()):
                    attrs = {kv["key"]: next(iter(kv["value"].values()), None) for kv in span.get("attributes", ())}
                    out.append({**span, "attrs": attrs})
    return sorted(out, key=lambda s: int(s["startTimeUnixNano"]))


def _server_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _text(result: Any) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)


async def _calls(session: ClientSession, meta: dict[str, Any] | None) -> dict[str, Any]:
    init = await session.initialize()
    first = await session.call_tool("whoami", {}, meta=meta)
    second = await session.call_tool("whoami", {}, meta=meta)
    broken = await session.call_tool("broken", {}, meta=meta)
    return {
        "version": init.protocol_version if hasattr(init, "protocol_version") else init.protocolVersion,
        "whoami": [first, second],
        "broken": broken,
    }


def _proxy_args(tmp_path: Path, plan: str | None) -> list[str]:
    args = ["-m", "chaoskit_mcp", "--traces", str(tmp_path / "proxy.jsonl"), "--run-dir", str(tmp_path / "run")]
    if plan is not None:
        (tmp_path / "plan.yaml").write_text(plan, encoding="utf-8")
        args += ["--plan", str(tmp_path / "plan.yaml")]
    return args


def _stdio(tmp_path: Path, plan: str | None, meta: dict[str, Any] | None, **extra: str) -> dict[str, Any]:
    env = {**os.environ, "SERVER_SPANS": str(tmp_path / "server.jsonl"), **extra}
    env.pop("TRACEPARENT", None)
    argv = [*_proxy_args(tmp_path, plan), "--", sys.executable, str(SERVER)]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)

    async def go() -> dict[str, Any]:
        with anyio.fail_after(STEP_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                return await _calls(s, meta)

    return anyio.run(go)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The server over Streamable HTTP on 127.0.0.1 (stopped by its PID at the end)."""
    port = _free_port()
    env = {**os.environ, "SERVER_SPANS": str(tmp_path / "server.jsonl")}
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port)], env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + STEP_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the SDK server did not listen: {(tmp_path / 'server.log').read_text()[-2000:]}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)
        log.close()


def _client_spans(spans: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == f"tools/call {tool}"]


def _attempts(spans: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == f"execute_tool {tool}"]


def test_the_client_span_carries_the_mcp_attributes_and_its_context_reaches_the_server(tmp_path: Path) -> None:
    got = _stdio(tmp_path, None, {"traceparent": TRACEPARENT, "tracestate": TRACESTATE, "keep": "me"})
    spans = _spans(tmp_path / "proxy.jsonl")
    attempts, clients = _attempts(spans, "whoami"), _client_spans(spans, "whoami")
    assert len(attempts) == 2 and len(clients) == 2
    for attempt, client, result in zip(attempts, clients, got["whoami"], strict=True):
        # the attempt hangs under the client's span, the CLIENT span under the attempt, in the client's trace
        assert attempt["traceId"] == client["traceId"] == TRACE_ID
        assert attempt["parentSpanId"] == CLIENT_SPAN
        assert client["parentSpanId"] == attempt["spanId"]
        assert client["kind"] == 3  # SPAN_KIND_CLIENT
        received = json.loads(_text(result))["meta"]
        # the server got the CLIENT span's context (not the client's), the tracestate, and the client's own keys
        assert received["traceparent"] == f"00-{TRACE_ID}-{client['spanId']}-01"
        assert received["tracestate"] == TRACESTATE
        assert received["keep"] == "me"
        a = client["attrs"]
        assert a["mcp.method.name"] == "tools/call" and a["gen_ai.tool.name"] == "whoami"
        assert a["network.transport"] == "pipe" and a["mcp.protocol.version"] == got["version"]
        assert a["jsonrpc.request.id"] == attempt["attrs"]["jsonrpc.request.id"]
        assert "server.address" not in a and "mcp.session.id" not in a  # stdio: no address, no session id
        assert "error.type" not in a and not (client.get("status") or {}).get("code")
        # not a tool attempt: no chaoskit.* attribute, no gen_ai.operation.name
        assert "gen_ai.operation.name" not in a and not [k for k in a if k.startswith("chaoskit.")]
    # the server's own span (the SDK's, from _meta) is the CLIENT span's child
    tool_spans = [s for s in _server_spans(tmp_path / "server.jsonl") if s["name"] == "tools/call whoami"]
    assert {(s["context"]["trace_id"], s["parent_id"]) for s in tool_spans} == {
        (f"0x{TRACE_ID}", f"0x{c['spanId']}") for c in clients
    }


def test_with_chaoskit_tracing_off_the_request_goes_as_the_client_sent_it(tmp_path: Path) -> None:
    got = _stdio(tmp_path, None, {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}, CHAOSKIT_TRACE="0")
    received = json.loads(_text(got["whoami"][0]))["meta"]
    assert (received["traceparent"], received["tracestate"]) == (TRACEPARENT, TRACESTATE)
    path = tmp_path / "proxy.jsonl"
    assert not path.exists() or not _client_spans(_spans(path), "whoami")


def test_a_tool_error_is_tool_error_on_the_client_span(tmp_path: Path) -> None:
    got = _stdio(tmp_path, None, None)
    assert got["broken"].isError if hasattr(got["broken"], "isError") else got["broken"].is_error
    (client,) = _client_spans(_spans(tmp_path / "proxy.jsonl"), "broken")
    assert client["attrs"]["error.type"] == "tool_error"
    assert client["status"]["code"] == 2  # STATUS_CODE_ERROR


def test_a_json_rpc_error_is_its_code_on_the_client_span(tmp_path: Path) -> None:
    env = {**os.environ}
    env.pop("TRACEPARENT", None)
    argv = [*_proxy_args(tmp_path, None), "--", sys.executable, str(SERVER)]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)

    async def go() -> Any:
        with anyio.fail_after(STEP_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                try:
                    return await s.call_tool("refuse", {})
                except Exception as exc:  # the SDK raises the JSON-RPC error
                    return exc

    error = anyio.run(go)
    assert error.error.code == -32602, error
    (client,) = _client_spans(_spans(tmp_path / "proxy.jsonl"), "refuse")
    assert client["attrs"]["error.type"] == client["attrs"]["rpc.response.status_code"] == "-32602"
    assert client["status"] == {"code": 2, "message": "refused on purpose"}


def test_a_call_the_client_cancels_once_sent_ends_its_client_span_as_cancelled(tmp_path: Path) -> None:
    env = {**os.environ}
    env.pop("TRACEPARENT", None)
    argv = [*_proxy_args(tmp_path, None), "--", sys.executable, str(SERVER)]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)

    async def go() -> None:
        with anyio.fail_after(STEP_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                with anyio.move_on_after(2):  # the SDK sends notifications/cancelled as it gives up
                    await s.call_tool("slow", {})
                await s.call_tool("whoami", {})  # the session goes on

    anyio.run(go)
    spans = _spans(tmp_path / "proxy.jsonl")
    (attempt,) = _attempts(spans, "slow")
    (client,) = _client_spans(spans, "slow")
    assert attempt["attrs"]["chaoskit.outcome"] == "cancelled" and client["parentSpanId"] == attempt["spanId"]
    assert client["attrs"]["error.type"] == "CancelledError"
    assert client["status"] == {"code": 2, "message": "cancelled before the server answered"}
    assert len(_client_spans(spans, "whoami")) == 1


def test_a_fault_the_proxy_answers_itself_has_no_client_span(tmp_path: Path) -> None:
    """Nothing was sent upstream for an injected error: there is an attempt span, and no CLIENT span."""
    got = _stdio(tmp_path, "faults:\n  - {type: error, tool: whoami, on_call: 1}\n", None)
    first, second = got["whoami"]
    assert "injected" in _text(first).lower() or "error" in _text(first).lower()
    spans = _spans(tmp_path / "proxy.jsonl")
    attempts, clients = _attempts(spans, "whoami"), _client_spans(spans, "whoami")
    assert len(attempts) == 2 and attempts[0]["attrs"]["chaoskit.fault.injected"] is True
    (client,) = clients
    assert client["parentSpanId"] == attempts[1]["spanId"]
    received = json.loads(_text(second))["meta"]["traceparent"]
    assert received.split("-")[1:3] == [client["traceId"], client["spanId"]]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def test_over_http_the_client_span_names_the_server_and_its_session(tmp_path: Path, http_server: str) -> None:
    """Streamable HTTP on both sides: the CLIENT span names the upstream's host and port and the session id the
    upstream gave the proxy (not the one the proxy gave its client, which the attempt span holds)."""
    ready = tmp_path / "proxy.url"
    argv = [sys.executable, *_proxy_args(tmp_path, None), "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    proc = subprocess.Popen([*argv, "--upstream", http_server], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + STEP_S
        while not (ready.exists() and ready.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the proxy did not listen (exit status {proc.poll()})")
            time.sleep(0.05)

        async def go() -> dict[str, Any]:
            with anyio.fail_after(STEP_S):
                async with streamable_http_client(ready.read_text().strip()) as streams:
                    async with ClientSession(streams[0], streams[1]) as s:
                        return await _calls(s, {"traceparent": TRACEPARENT})

        got = anyio.run(go)
    finally:
        _stop(proc)
    spans = _spans(tmp_path / "proxy.jsonl")
    attempts, clients = _attempts(spans, "whoami"), _client_spans(spans, "whoami")
    assert len(clients) == 2
    port = int(http_server.rsplit(":", 1)[1].split("/")[0])
    for attempt, client, result in zip(attempts, clients, got["whoami"], strict=True):
        reported = json.loads(_text(result))
        a = client["attrs"]
        assert a["network.transport"] == "tcp" and a["network.protocol.name"] == "http"
        assert a["server.address"] == "127.0.0.1" and int(a["server.port"]) == port
        assert reported["session"] and a["mcp.session.id"] == reported["session"]
        assert attempt["attrs"]["mcp.session.id"] != reported["session"]  # the proxy's own session with its client
        assert reported["meta"]["traceparent"] == f"00-{TRACE_ID}-{client['spanId']}-01"
    tool_spans = [s for s in _server_spans(tmp_path / "server.jsonl") if s["name"] == "tools/call whoami"]
    assert sorted(s["parent_id"] for s in tool_spans) == sorted(f"0x{c['spanId']}" for c in clients)


@pytest.mark.parametrize("plan", [None, "faults:\n  - {type: error, tool: whoami, on_call: 1}\n"])
def test_a_trace_with_client_spans_grades_as_one_without_them(tmp_path: Path, plan: str | None) -> None:
    """An episode whose tools are proxied, graded from its file with the CLIENT spans and from the same file with
    them taken out: the same attempts, the same verdicts and scores (library and ``chaoskit check``)."""
    writer = telemetry.SpanFileWriter(str(tmp_path / "proxy.jsonl"))
    telemetry.add_processor(writer)
    try:
        with chaoskit.episode("meta") as ep:
            carrier: dict[str, str] = {}
            TraceContextTextMapPropagator().inject(carrier)  # what the agent hands its MCP server
            _stdio(tmp_path, plan, {"traceparent": carrier["traceparent"]})
            ep.finish("Done: whoami answered twice.")
    finally:
        telemetry.flush()
        telemetry.remove_processor(writer)
    path = tmp_path / "proxy.jsonl"
    (tmp_path / "without").mkdir()
    without = tmp_path / "without" / "proxy.jsonl"  # the same name: the CLI's answer names the file
    lines = []
    removed = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", ()):
            for ss in rs.get("scopeSpans", ()):
                kept = [s for s in ss.get("spans", ()) if not s["name"].startswith("tools/call ")]
                removed += len(ss.get("spans", ())) - len(kept)
                ss["spans"] = kept
        lines.append(json.dumps(doc))
    without.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert removed >= 2  # the file did hold CLIENT spans
    graded = []
    for source in (path, without):
        trace = Trace.load(source)
        results = run_checks(trace, list(DEFAULT_CHECKS))
        graded.append(
            (
                [(a.tool, a.outcome, a.span_id, a.error_type) for a in trace.attempts],
                [(r.name, r.passed, r.evidence) for r in results],
            )
        )
    assert graded[0] == graded[1]
    assert [t for t, *_ in graded[0][0]] == ["whoami", "whoami", "broken"]
    (episode,) = Trace.load(path).episodes
    assert [a.tool for a in episode.attempts] == ["whoami", "whoami", "broken"]
    cli = [
        subprocess.run(
            [sys.executable, "-m", "chaoskit", "check", source.name, "--json"],
            cwd=source.parent,
            capture_output=True,
            text=True,
            timeout=STEP_S,
        )
        for source in (path, without)
    ]
    assert cli[0].returncode == cli[1].returncode and cli[0].returncode in (0, 1)
    assert cli[0].stdout == cli[1].stdout
    (shown,) = json.loads(cli[0].stdout)["episodes"]
    assert shown["attempts"] == 3 and shown["checks"]
