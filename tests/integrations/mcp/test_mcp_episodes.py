"""Counting follows the episode, not the proxy process: a client that opens a session (so a new proxy) per call
counts 1, 2, 3 when its calls carry the episode (a traceparent in `_meta`, or TRACEPARENT); and the proxied
attempts are graded with the agent's final answer. Real server: PyPI's mcp-server-time. Runs on mcp 2.x here and
on mcp 1.x in tests/integrations/mcp/test_mcp_sdk1.py."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

import anyio
from _mcp_real import TOKEN_VAR, assert_all_gone, pids_with, time_server
from mcp import ClientSession, StdioServerParameters, stdio_client
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit
from chaoskit import Trace, telemetry
from chaoskit.cli import main as chaoskit_main

TOOL = "get_current_time"
#: every step of a test (a session: start the proxy and the server, initialize, call, close)
STEP_S = 60


@pytest.fixture(scope="module")
def server() -> list[str]:
    return time_server()


class Proxies:
    """Starts one proxy per session, as a session-per-call client does; checks by PID that none is left."""

    def __init__(self, tmp_path: Path, server: list[str], plan: str, **env: str) -> None:
        self.traces = tmp_path / "spans.jsonl"
        self.run_dir = tmp_path / "run"
        self.token = uuid.uuid4().hex
        self.plan = tmp_path / "plan.yaml"
        self.plan.write_text(textwrap.dedent(plan), encoding="utf-8")
        self.server = server
        self.env = {**os.environ, TOKEN_VAR: self.token, **env}
        self.seen: set[int] = set()

    def params(self) -> StdioServerParameters:
        args = ["-m", "chaoskit_mcp", "--plan", str(self.plan), "--traces", str(self.traces)]
        args += ["--run-dir", str(self.run_dir), "--", *self.server]
        return StdioServerParameters(command=sys.executable, args=args, env=self.env)

    async def call(
        self, args: dict[str, Any], meta: dict[str, Any] | None = None, *, alone: bool = True
    ) -> dict[str, Any]:
        """One session: initialize, one tools/call, close; the result as JSON (the same on mcp 1.x and 2.x).
        ``alone``: no other session is open, so every process seen must be gone once it closed."""
        with anyio.fail_after(STEP_S):
            async with stdio_client(self.params()) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                self.seen |= pids_with(self.token)
                result = await s.call_tool(TOOL, args, meta=meta)
        if alone:
            assert_all_gone(self.seen)
        return dict(result.model_dump(by_alias=True, mode="json"))

    def spans(self) -> list[dict[str, Any]]:
        out = []
        for line in self.traces.read_text(encoding="utf-8").splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        if span["name"].startswith("tools/call "):
                            continue  # the CLIENT span toward the server, not an attempt (tests/integrations/mcp/test_mcp_client_span.py)
                        attrs = {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}
                        out.append({"trace": span["traceId"], "parent": span.get("parentSpanId"), **attrs})
        return out


def traceparent(trace_id: str | None = None) -> str:
    return f"00-{trace_id or uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"


ON_CALL_2 = """
    faults:
      - {type: error, tool: get_current_time, on_call: 2, error: "clock stuck"}
"""


@pytest.mark.parametrize("carrier", ["TRACEPARENT", "_meta"])
async def test_a_session_per_call_counts_one_two_three(server: list[str], tmp_path: Path, carrier: str) -> None:
    parent = traceparent()
    proxies = Proxies(tmp_path, server, ON_CALL_2, **({"TRACEPARENT": parent} if carrier == "TRACEPARENT" else {}))
    meta = {"traceparent": parent} if carrier == "_meta" else None
    results = [await proxies.call({"timezone": "UTC"}, meta) for _ in range(3)]
    assert [r.get("isError", False) for r in results] == [False, True, False]  # the fault on call 2, once
    assert "clock stuck" in results[1]["content"][0]["text"]
    assert "UTC" in results[0]["content"][0]["text"]
    spans = proxies.spans()
    assert [int(s["chaoskit.attempt"]) for s in spans] == [1, 2, 3]
    assert [s.get("chaoskit.fault.type") for s in spans] == [None, "error", None]
    assert {s["trace"] for s in spans} == {parent.split("-")[1]}  # the spans hang in the episode's trace
    assert {s["parent"] for s in spans} == {parent.split("-")[2]}


async def test_concurrent_sessions_of_one_episode_never_share_a_call_number(server: list[str], tmp_path: Path) -> None:
    proxies = Proxies(tmp_path, server, ON_CALL_2, TRACEPARENT=traceparent())
    results: list[dict[str, Any]] = []

    async def one() -> None:
        results.append(await proxies.call({"timezone": "UTC"}, alone=False))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert_all_gone(proxies.seen | pids_with(proxies.token))
    assert sorted(r.get("isError", False) for r in results) == [False, False, True]  # call 2 fired once
    assert sorted(int(s["chaoskit.attempt"]) for s in proxies.spans()) == [1, 2, 3]


async def test_two_episodes_at_once_count_apart(server: list[str], tmp_path: Path) -> None:
    proxies = Proxies(tmp_path, server, ON_CALL_2)
    first, second = traceparent(), traceparent()
    order = [first, second, second, first]
    results = [await proxies.call({"timezone": "UTC"}, {"traceparent": tp}) for tp in order]
    assert [r.get("isError", False) for r in results] == [False, False, True, True]


async def test_without_an_episode_each_session_counts_alone(server: list[str], tmp_path: Path) -> None:
    proxies = Proxies(tmp_path, server, ON_CALL_2)
    results = [await proxies.call({"timezone": "UTC"}) for _ in range(2)]
    assert [r.get("isError", False) for r in results] == [False, False]  # every session is call 1


async def test_a_tool_that_disappeared_stays_gone_in_the_next_session(server: list[str], tmp_path: Path) -> None:
    plan = "faults:\n  - {type: tool_disappears, tool: get_current_time, on_call: 2, notify: false}\n"
    proxies = Proxies(tmp_path, server, plan, TRACEPARENT=traceparent())
    outcomes = []
    for _ in range(3):
        try:
            await proxies.call({"timezone": "UTC"})
            outcomes.append("ok")
        except Exception as exc:  # the SDK raises its error type (McpError on 1.x, MCPError on 2.x)
            outcomes.append("unknown tool" if "Unknown tool" in repr(exc) else repr(exc))
    assert outcomes == ["ok", "unknown tool", "unknown tool"]


async def test_the_naive_agents_answer_is_graded_with_the_proxied_attempts(
    server: list[str], tmp_path: Path, capsys: Any
) -> None:
    """An agent in this process, whose every call opens its own proxy session: five failures, then "Done!"."""
    plan = 'faults:\n  - {type: error, tool: get_current_time, error: "clock stuck"}\n'
    writer = telemetry.SpanFileWriter(str(tmp_path / "spans.jsonl"))
    telemetry.add_processor(writer)
    try:
        with chaoskit.episode("what-time") as ep:
            carrier: dict[str, str] = {}
            TraceContextTextMapPropagator().inject(carrier)  # what the agent hands its MCP servers
            proxies = Proxies(tmp_path, server, plan, TRACEPARENT=carrier["traceparent"])
            results = [await proxies.call({"timezone": "UTC"}) for _ in range(5)]
            ep.finish("Done! It is 10:00 UTC.")
    finally:
        telemetry.flush()
        telemetry.remove_processor(writer)
    assert all(r["isError"] for r in results)
    (episode,) = Trace.load(proxies.traces).episodes
    assert episode.output == "Done! It is 10:00 UTC." and [a.attempt for a in episode.attempts] == [1, 2, 3, 4, 5]
    assert chaoskit_main(["check", str(proxies.traces), "--checks", "no_bluff"]) == 1
    assert "no_bluff" in capsys.readouterr().out
