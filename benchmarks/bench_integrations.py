"""Overhead per tool call of each LangChain/LangGraph integration, against the same agent without chaoskit.

    python benchmarks/bench_integrations.py [--calls 20] [--repeat 7] [--parallel 1]

The agent is ``langchain.agents.create_agent`` with a scripted chat model that makes ``--calls`` tool calls
(``--parallel`` per model turn) and then answers. Every case runs inside ``chaoskit.episode`` with a plan whose
faults never fire (they target another tool), so the cost measured is chaoskit's bookkeeping: the decision,
the span, the argument hash, the episode record. Prints the best of ``--repeat`` runs, in milliseconds per
agent run and microseconds of overhead per tool call against the plain agent.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware, chaos_tools
from chaoskit_langgraph import instrument_graph
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

import chaoskit
from chaoskit import Plan
from examples.support.model import ScriptedChatModel, tool_calls

PLAN = Plan(
    seed=1,
    faults=[
        {"type": "error", "tool": "other", "probability": 0.5},
        {"type": "latency", "tool": "lookup", "on_call": 10**9},
    ],
)


def make_tools() -> list[BaseTool]:
    @tool
    def lookup(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {"order_id": order_id, "status": "pending", "amount": 25.0}

    return [lookup]


def policy_for(calls: int, parallel: int) -> Callable[[Sequence[BaseMessage]], AIMessage]:
    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done >= calls:
            return AIMessage("done")
        turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        batch = min(parallel, calls - done)
        return tool_calls(*[("lookup", {"order_id": str(done + i)}) for i in range(batch)], turn=turn)

    return policy


def build(case: str, calls: int, parallel: int) -> tuple[Any, dict[str, Any]]:
    model = ScriptedChatModel(policy=policy_for(calls, parallel))
    tools = make_tools()
    config: dict[str, Any] = {"recursion_limit": 4 * calls + 10}
    if case == "chaos_tools":
        return create_agent(model, tools=chaos_tools(tools)), config
    if case == "no-op middleware":
        return create_agent(model, tools=tools, middleware=[_NoOp()]), config
    if case == "ChaosMiddleware":
        return create_agent(model, tools=tools, middleware=[ChaosMiddleware()]), config
    if case == "ChaosCallbackHandler":
        return create_agent(model, tools=tools), {**config, "callbacks": [ChaosCallbackHandler()]}
    if case == "instrument_graph":
        return instrument_graph(create_agent(model, tools=tools)), config
    return create_agent(model, tools=tools), config


class _NoOp(AgentMiddleware):  # type: ignore[type-arg]
    """A pass-through wrap_tool_call: what any tool middleware costs in create_agent, chaoskit aside."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


CASES = (
    "without chaoskit",
    "chaos_tools",
    "no-op middleware",
    "ChaosMiddleware",
    "ChaosCallbackHandler",
    "instrument_graph",
)


def measure(calls: int, parallel: int, repeat: int) -> dict[str, float]:
    """Best run per case, in ms; cases are interleaved so that drift (CPU clock, caches) hits them all alike."""
    built = {case: build(case, calls, parallel) for case in CASES}
    inp = {"messages": [HumanMessage("go")]}
    best = dict.fromkeys(CASES, float("inf"))
    for r in range(repeat + 1):
        for case, (graph, config) in built.items():
            gc.collect()
            gc.disable()
            try:
                with chaoskit.episode("bench", plan=PLAN):
                    t0 = time.perf_counter()
                    graph.invoke(inp, config)
                    elapsed = time.perf_counter() - t0
            finally:
                gc.enable()
            if r:  # the first round warms up pydantic schemas and caches
                best[case] = min(best[case], elapsed * 1e3)
    return best


def main(argv: Sequence[str] | None = None) -> list[tuple[str, float, float]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--parallel", type=int, default=1, help="tool calls per model turn")
    args = parser.parse_args(argv)
    # the plan's faults name a tool that never runs, on purpose: chaoskit's warning about that is expected
    warnings.simplefilter("ignore", chaoskit.ChaosWarning)
    best = measure(args.calls, args.parallel, args.repeat)
    rows = [(case, best[case]) for case in CASES]
    base = rows[0][1]
    out = [(case, ms, (ms - base) * 1e3 / args.calls) for case, ms in rows]
    print(f"{args.calls} tool calls per run, {args.parallel} per model turn, best of {args.repeat}")
    print(f"{'case':24} {'ms/run':>9} {'overhead µs/tool call':>22}")
    for case, ms, per_call in out:
        print(f"{case:24} {ms:9.2f} {per_call:+22.1f}")
    return out


if __name__ == "__main__":
    main()
