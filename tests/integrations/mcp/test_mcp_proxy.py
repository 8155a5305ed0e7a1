"""chaoskit mcp-proxy over stdio: a real MCP server (official SDK) behind the proxy, the SDK's stdio client in front."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from chaoskit import Trace
from chaoskit.cli import main as chaoskit_main

SERVER = textwrap.dedent(
    '''
    import os, subprocess, sys
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations
    from pydantic import BaseModel

    class Hits(BaseModel):
        hits: list[str]

    app = MCPServer("test-server", instructions="a server for the proxy tests")
    if os.environ.get("TEST_PIDFILE"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["TEST_PIDFILE"], "w") as fh:
            fh.write(f"{os.getpid()} {child.pid}")

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def search(query: str) -> Hits:
        """Search the catalogue."""
        return Hits(hits=[f"{query}-1", f"{query}-2", f"{query}-3"])

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @app.tool(annotations=ToolAnnotations(destructiveHint=True))
    def write(key: str) -> str:
        """Write a record."""
        return f"wrote {key}"

    @app.tool()
    def crash() -> str:
        """Exit the server at once."""
        os._exit(3)

    @app.resource("test://readme")
    def readme() -> str:
        """The readme."""
        return "read me"

    @app.prompt()
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello {name}"

    if __name__ == "__main__":
        app.run()
    '''
)


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    path = tmp_path / "server.py"
    path.write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(path)]


def write_plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def proxy(server: list[str], plan: Path | None, traces: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "chaoskit_mcp", *(["--plan", str(plan)] if plan else []), "--traces", str(traces), *extra]
    return StdioServerParameters(command=sys.executable, args=[*args, "--", *server], env=dict(os.environ))


def spans(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    if span["name"].startswith("tools/call "):
                        continue  # the CLIENT span toward the server, not an attempt (tests/integrations/mcp/test_mcp_client_span.py)
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}
                    out.append({"name": span["name"], **attrs})
    return sorted(out, key=lambda s: int(s.get("chaoskit.attempt", 0)))  # initialize's span has no attempt


async def test_tools_resources_and_prompts_are_mirrored(server: list[str], tmp_path: Path) -> None:
    async def listing(params: StdioServerParameters) -> dict[str, Any]:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            init = await s.initialize()
            return {
                "instructions": init.instructions,
                "capabilities": init.capabilities.model_dump(),
                "tools": [t.model_dump() for t in (await s.list_tools()).tools],
                "resources": [x.model_dump() for x in (await s.list_resources()).resources],
                "prompts": [p.model_dump() for p in (await s.list_prompts()).prompts],
                "readme": (await s.read_resource("test://readme")).model_dump(),
                "prompt": (await s.get_prompt("greet", {"name": "Ada"})).model_dump(),
            }

    direct = await listing(StdioServerParameters(command=server[0], args=server[1:]))
    proxied = await listing(proxy(server, None, tmp_path / "spans.jsonl"))
    assert proxied == direct
    assert {t["name"] for t in proxied["tools"]} == {"search", "echo", "write", "crash"}
    search = next(t for t in proxied["tools"] if t["name"] == "search")
    assert "query" in search["input_schema"]["properties"]  # schemas and annotations pass through untouched
    assert search["annotations"]["read_only_hint"] is True


async def test_faults_fire_at_the_planned_call_and_errors_are_results(server: list[str], tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        """
        seed: 3
        faults:
          - {type: error, tool: search, on_call: [2], error: "backend reset"}
          - {type: timeout, tool: search, on_call: [3], after_s: 0.01}
          - {type: empty, tool: search, on_call: [4]}
          - {type: rate_limit, tool: echo, on_call: [1], retry_after: 2}
        """,
    )
    traces = tmp_path / "spans.jsonl"
    async with stdio_client(proxy(server, plan, traces)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        results = [await s.call_tool("search", {"query": "q"}) for _ in range(5)]
        echo = [await s.call_tool("echo", {"text": "hi"}) for _ in range(2)]
    assert [r.is_error for r in results] == [False, True, True, False, False]
    assert results[0].structured_content == {"hits": ["q-1", "q-2", "q-3"]}
    assert "backend reset" in results[1].content[0].text
    assert "Timeout" in results[2].content[0].text
    assert results[3].structured_content == {"hits": []}  # the data fault rewrote the content
    assert json.loads(results[3].content[0].text) == {"hits": []}
    assert results[4].structured_content == results[0].structured_content
    assert echo[0].is_error and "Retry-After: 2s" in echo[0].content[0].text
    assert not echo[1].is_error and echo[1].content[0].text == "hi"

    got = [s for s in spans(traces) if s["gen_ai.tool.name"] == "search"]
    assert [s.get("chaoskit.fault.type") for s in got] == [None, "error", "timeout", "empty", None]
    assert [s["chaoskit.outcome"] for s in got] == ["ok", "error", "error", "ok", "ok"]
    assert all(s["mcp.method.name"] == "tools/call" and s["name"] == "execute_tool search" for s in got)
    assert len({s["jsonrpc.request.id"] for s in got}) == 5
    assert got[1]["error.type"] == "ConnectionResetError"
    assert got[0]["chaoskit.tool.idempotent"] is True  # readOnlyHint


async def test_spans_are_graded_by_chaoskit_check(server: list[str], tmp_path: Path, capsys: Any) -> None:
    plan = write_plan(tmp_path, "faults:\n  - {type: http, tool: write, calls: 1-4, status: 503}\n")
    traces = tmp_path / "spans.jsonl"
    async with stdio_client(proxy(server, plan, traces, "--irreversible", "write")) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            answers = [await s.call_tool("write", {"key": "k1"}) for _ in range(5)]
    assert [a.is_error for a in answers] == [True, True, True, True, False]
    trace = Trace.load(traces)
    assert [a.outcome for a in trace.attempts] == ["error"] * 4 + ["ok"]
    assert chaoskit_main(["check", str(traces)]) == 1  # five identical calls in a row: a retry storm
    out = capsys.readouterr().out
    assert "no_retry_storm" in out and "FAIL" in out


async def test_protocol_faults(server: list[str], tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        """
        faults:
          - {type: list_changed, tool: search, on_call: [1], drop: [write]}
          - {type: malformed_result, tool: echo, on_call: [1]}
          - {type: tool_disappears, tool: search, on_call: [3]}
          - {type: slow_initialize, delay_s: 0.05}
        """,
    )
    notices: list[Any] = []

    async def on_message(message: Any) -> None:
        notices.append(message)

    errlog = (tmp_path / "stderr.txt").open("w")
    params = proxy(server, plan, tmp_path / "spans.jsonl")
    async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w, message_handler=on_message) as s:
        init = await s.initialize()
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is True
        assert "write" in {t.name for t in (await s.list_tools()).tools}
        first = await s.call_tool("search", {"query": "a"})
        assert not first.is_error
        with pytest.raises(Exception):  # noqa: B017 - the SDK rejects a result that breaks the schema
            await s.call_tool("echo", {"text": "x"})
        assert (await s.call_tool("echo", {"text": "y"})).content[0].text == "y"
        assert not (await s.call_tool("search", {"query": "b"})).is_error
        with pytest.raises(MCPError) as gone:
            await s.call_tool("search", {"query": "c"})
        assert gone.value.error.code == -32602 and "search" in gone.value.error.message
        with pytest.raises(MCPError):
            await s.call_tool("search", {"query": "d"})  # still gone
        names = {t.name for t in (await s.list_tools()).tools}
        assert "search" not in names and "write" not in names and "echo" in names
    errlog.close()
    assert any("ToolListChanged" in type(getattr(n, "root", n)).__name__ for n in notices)
    assert "slow_initialize" in (tmp_path / "stderr.txt").read_text()
    by_type = [s.get("chaoskit.fault.type") for s in spans(tmp_path / "spans.jsonl")]
    assert by_type.count("tool_disappears") == 2 and "list_changed" in by_type and "malformed_result" in by_type
    # the fired slow_initialize is in the trace too, on a span of its own
    assert [
        s["name"] for s in spans(tmp_path / "spans.jsonl") if s.get("chaoskit.fault.type") == "slow_initialize"
    ] == ["initialize"]


async def test_an_upstream_crash_is_an_error_result_and_the_proxy_keeps_answering(
    server: list[str], tmp_path: Path
) -> None:
    traces = tmp_path / "spans.jsonl"
    async with stdio_client(proxy(server, None, traces)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        crashed = await s.call_tool("crash", {})
        assert crashed.is_error
        assert "exited with status 3 (crashed)" in crashed.content[0].text
        after = await s.call_tool("echo", {"text": "still there?"})
        assert after.is_error and "crashed" in after.content[0].text
        with pytest.raises(MCPError):
            await s.list_tools()  # no result shape but a JSON-RPC error for a listing
        await s.send_ping()
    attempts = Trace.load(traces).attempts
    assert [(a.tool, a.outcome, a.executed) for a in attempts] == [("crash", "error", True), ("echo", "error", False)]
