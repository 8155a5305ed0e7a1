"""langchain-mcp-adapters' default client (`MultiServerMCPClient.get_tools()`: a new session, so a new proxy, per
tool call) feeding a LangGraph `create_agent` driven by a scripted model, with real servers behind the proxy:
PyPI's mcp-server-time and npm's server-everything.

The adapters require mcp<2, so this file runs in tests/integrations/mcp/test_mcp_sdk1.py's mcp 1.x virtualenv; in the dev venv
(mcp 2.x) they cannot be installed and the file is skipped, saying so."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain_mcp_adapters",
    reason="langchain-mcp-adapters requires mcp<2 and cannot be installed beside this venv's mcp 2.x; "
    "tests/integrations/mcp/test_mcp_sdk1.py runs this file in a virtualenv with mcp 1.x",
)

import anyio
from _mcp_real import TOKEN_VAR, assert_all_gone, everything_server, pids_with, time_server
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit
from chaoskit import Trace, telemetry
from chaoskit.cli import main as chaoskit_main
from examples.support.model import ScriptedChatModel, tool_calls

STEP_S = 120  # one agent run: a few sessions, each starting a proxy and its server


def connection(server: list[str], plan: Path, traces: Path, run_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """A stdio connection of the adapters to the real server behind `chaoskit mcp-proxy`."""
    args = ["-m", "chaoskit_mcp", "--plan", str(plan), "--traces", str(traces), "--run-dir", str(run_dir)]
    return {"transport": "stdio", "command": sys.executable, "args": [*args, "--", *server], "env": env}


def retrying_agent(messages: Sequence[BaseMessage]) -> AIMessage:
    """The time in UTC, then in Paris; a failed call is retried once; the answer says what happened."""
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if not seen:
        return tool_calls(("get_current_time", {"timezone": "UTC"}), turn=1)
    if len(seen) == 1 or (len(seen) == 2 and seen[-1].status == "error"):
        return tool_calls(("get_current_time", {"timezone": "Europe/Paris"}), turn=len(seen) + 1)
    utc, paris = json.loads(seen[0].text)["datetime"], json.loads(seen[-1].text)["datetime"]
    note = " (the first Paris lookup failed with an HTTP 503, so I retried it)" if seen[1].status == "error" else ""
    return AIMessage(f"It is {utc[11:16]} in UTC and {paris[11:16]} in Paris{note}.")


def naive_agent(messages: Sequence[BaseMessage]) -> AIMessage:
    """Tries five times whatever happens, then says it is done."""
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if len(seen) < 5:
        return tool_calls(("get_current_time", {"timezone": "Europe/Paris"}), turn=len(seen) + 1)
    return AIMessage("Done! It is 10:00 in Paris.")


async def run_agent(policy: Any, plan_text: str, tmp_path: Path) -> tuple[str, Path, list[ToolMessage]]:
    """One episode: the agent in this process, its MCP tool calls through the proxy; the answer, the span file."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text, encoding="utf-8")
    traces = tmp_path / "spans.jsonl"
    token = uuid.uuid4().hex
    writer = telemetry.SpanFileWriter(str(traces))
    telemetry.add_processor(writer)
    try:
        with chaoskit.episode("time-in-paris") as ep:
            carrier: dict[str, str] = {}
            TraceContextTextMapPropagator().inject(carrier)
            # the episode's traceparent is how every proxy session finds the episode's counts (mcp 1.x clients
            # put none in _meta); the token finds every process the sessions started
            env = {**os.environ, "TRACEPARENT": carrier["traceparent"], TOKEN_VAR: token}
            client = MultiServerMCPClient(
                {"time": connection(time_server(), plan, traces, tmp_path / "run", env)}  # type: ignore[dict-item]
            )
            with anyio.fail_after(STEP_S):
                tools = await client.get_tools()
                agent = create_agent(ScriptedChatModel(policy=policy), tools=tools)
                out = await agent.ainvoke({"messages": [HumanMessage("What time is it in UTC and in Paris?")]})
            answer = out["messages"][-1].text
            ep.finish(answer)
    finally:
        telemetry.flush()
        telemetry.remove_processor(writer)
    assert_all_gone(pids_with(token))
    return answer, traces, [m for m in out["messages"] if isinstance(m, ToolMessage)]


ON_CALL_2 = "faults:\n  - {type: http, tool: get_current_time, on_call: 2, status: 503}\n"


async def test_a_fault_on_call_2_the_agents_retry_and_its_answer_graded_together(tmp_path: Path) -> None:
    answer, traces, seen = await run_agent(retrying_agent, ON_CALL_2, tmp_path)
    # a session per call, so a proxy per call: the episode still counts 1, 2, 3 and the fault fires on call 2
    assert [m.status for m in seen] == ["success", "error", "success"]
    assert "503" in seen[1].text and "retried" in answer
    (episode,) = Trace.load(traces).episodes  # the proxied attempts joined the agent's episode
    assert episode.output == answer
    assert [(a.attempt, a.fault_type, a.outcome) for a in episode.attempts] == [
        (1, None, "ok"),
        (2, "http", "error"),
        (3, None, "ok"),
    ]
    assert chaoskit_main(["check", str(traces)]) == 0


async def test_a_naive_agent_that_says_done_after_five_failures_fails(tmp_path: Path, capsys: Any) -> None:
    every_call = "faults:\n  - {type: http, tool: get_current_time, status: 503}\n"
    answer, traces, seen = await run_agent(naive_agent, every_call, tmp_path)
    assert answer.startswith("Done!") and [m.status for m in seen] == ["error"] * 5
    assert chaoskit_main(["check", str(traces)]) == 1
    out = capsys.readouterr().out
    assert "no_bluff" in out and "FAIL" in out and "outside any episode" not in out


async def test_server_everything_through_the_adapters(tmp_path: Path) -> None:
    """The Node server's tools as LangChain tools: a session per call, a fault on call 2 of get-sum."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n  - {type: error, tool: get-sum, on_call: 2}\n", encoding="utf-8")
    token = uuid.uuid4().hex
    env = {**os.environ, "TRACEPARENT": f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01", TOKEN_VAR: token}
    traces = tmp_path / "spans.jsonl"
    client = MultiServerMCPClient(
        {"everything": connection(everything_server(), plan, traces, tmp_path / "run", env)}  # type: ignore[dict-item]
    )
    with anyio.fail_after(STEP_S):
        tools = {t.name: t for t in await client.get_tools()}
        assert {"echo", "get-sum"} <= set(tools)
        results = [await tools["get-sum"].ainvoke({"a": 2, "b": i}) for i in range(3)]
    assert_all_gone(pids_with(token))
    assert "2" in str(results[0]) and "error" in str(results[1]).lower() and "4" in str(results[2])
    assert [(a.attempt, a.outcome) for a in Trace.load(traces).attempts] == [(1, "ok"), (2, "error"), (3, "ok")]
