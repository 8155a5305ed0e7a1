"""Servers nobody on this project wrote, behind `chaoskit mcp-proxy`, with the mcp SDK's own clients: npm's
@modelcontextprotocol/server-everything (Node.js) and PyPI's mcp-server-time (Python), over stdio and Streamable
HTTP. Runs on mcp 2.x here and on mcp 1.x in tests/integrations/mcp/test_mcp_sdk1.py; every step has a timeout and no process is
left behind (checked by PID)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

import anyio
from _mcp_real import TOKEN_VAR, assert_all_gone, everything_server, pids_with, time_server
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from chaoskit import Trace

STEP_S = 60


@pytest.fixture
def token() -> Iterator[str]:
    """A mark in the environment of every process a test starts; at the end, none of them may be alive."""
    value = uuid.uuid4().hex
    yield value
    assert_all_gone(pids_with(value))


def env(token: str) -> dict[str, str]:
    return {**os.environ, TOKEN_VAR: token}


def proxied(server: list[str], token: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "chaoskit_mcp", *args, "--", *server], env=env(token)
    )


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json")


async def listing(params: StdioServerParameters) -> dict[str, Any]:
    with anyio.fail_after(STEP_S):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            init = await s.initialize()
            return {
                "server": dump(init)["serverInfo"]["name"],
                "instructions": init.instructions,
                "tools": [dump(t) for t in (await s.list_tools()).tools],
                "resources": [dump(x) for x in (await s.list_resources()).resources],
                "prompts": [dump(p) for p in (await s.list_prompts()).prompts],
                "echo": dump(await s.call_tool("echo", {"message": "hello"})),
            }


async def test_server_everything_is_mirrored_through_the_proxy(tmp_path: Path, token: str) -> None:
    server = everything_server()
    direct = await listing(StdioServerParameters(command=server[0], args=server[1:], env=env(token)))
    through = await listing(proxied(server, token, "--traces", str(tmp_path / "spans.jsonl")))
    assert through == direct
    assert direct["echo"]["content"][0]["text"] == "Echo: hello"
    assert {"echo", "get-sum"} <= {t["name"] for t in direct["tools"]} and direct["resources"] and direct["prompts"]
    (attempt,) = Trace.load(tmp_path / "spans.jsonl").attempts
    assert (attempt.tool, attempt.outcome, attempt.executed) == ("echo", "ok", True)


SERVERS = {
    "time": (time_server, "get_current_time", {"timezone": "Europe/Paris"}, "Europe/Paris"),
    "everything": (everything_server, "get-sum", {"a": 2, "b": 3}, "5"),
}


@pytest.mark.parametrize("name", list(SERVERS))
async def test_a_fault_on_call_2_of_a_real_server(name: str, tmp_path: Path, token: str) -> None:
    start, tool, args, expect = SERVERS[name]
    server = start()
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"faults:\n  - {{type: http, tool: {tool}, on_call: 2, status: 503}}\n", encoding="utf-8")
    traces = tmp_path / "spans.jsonl"
    with anyio.fail_after(STEP_S):
        async with stdio_client(proxied(server, token, "--plan", str(plan), "--traces", str(traces))) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                results = [dump(await s.call_tool(tool, args)) for _ in range(3)]
    assert [bool(r.get("isError")) for r in results] == [False, True, False]
    assert expect in results[0]["content"][0]["text"] and "503" in results[1]["content"][0]["text"]
    attempts = Trace.load(traces).attempts
    assert [(a.attempt, a.fault_type, a.outcome) for a in attempts] == [
        (1, None, "ok"),
        (2, "http", "error"),
        (3, None, "ok"),
    ]


def _start_front(args: list[str], tmp_path: Path, token: str, name: str) -> tuple[subprocess.Popen[bytes], str]:
    ready = tmp_path / f"{name}.url"
    argv = [sys.executable, "-m", "chaoskit_mcp", "--listen", "127.0.0.1:0", "--ready-file", str(ready), *args]
    proc = subprocess.Popen(argv, env=env(token), stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + STEP_S
    while not (ready.exists() and ready.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the proxy {name} did not listen (exit status {proc.poll()})")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def test_server_everything_over_streamable_http_through_two_proxies(tmp_path: Path, token: str) -> None:
    """Streamable HTTP on both sides: an outer proxy (the plan) whose upstream is an inner proxy's URL, in front of
    server-everything over stdio; SIGTERM stops both, and their server."""
    server = everything_server()
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n  - {type: error, tool: echo, on_call: 2}\n", encoding="utf-8")
    procs = []
    try:
        inner, inner_url = _start_front(["--", *server], tmp_path, token, "inner")
        procs.append(inner)
        traces = tmp_path / "outer.jsonl"
        outer, url = _start_front(
            ["--plan", str(plan), "--traces", str(traces), "--upstream", inner_url], tmp_path, token, "outer"
        )
        procs.append(outer)

        async def session() -> list[Any]:
            with anyio.fail_after(STEP_S):
                async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    return [dump(await s.call_tool("echo", {"message": str(i)})) for i in range(3)]

        results = anyio.run(session)
        assert [bool(r.get("isError")) for r in results] == [False, True, False]
        assert results[2]["content"][0]["text"] == "Echo: 2"
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
    attempts = Trace.load(traces).attempts
    assert [a.outcome for a in attempts] == ["ok", "error", "ok"]
    assert all(json.loads(line) for line in traces.read_text().splitlines())
