"""What the LangChain / LangGraph integration tests share: an order record, plans with one fault on `lookup`,
the fault lists every entry point is checked against, a callback recorder, and a tool-calling graph whose
scripted model answers with every ToolMessage it read (so a test sees exactly what the model saw)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from chaoskit import Plan, ToolHTTPError, ToolTimeout
from examples.support.model import tool_calls

ORDER = {"order_id": "4832", "status": "pending", "amount": 25, "items": ["kettle", "mug", "lid"]}

#: faults raised before the tool runs, and the exception the caller sees
RAISING: list[tuple[dict[str, Any], type[BaseException]]] = [
    ({"type": "error"}, ConnectionResetError),
    ({"type": "timeout", "after_s": 0.01}, ToolTimeout),
    ({"type": "http", "status": 503}, ToolHTTPError),
    ({"type": "rate_limit", "retry_after": 0.5}, ToolHTTPError),
    ({"type": "auth_expired"}, ToolHTTPError),
]
AFTER_WRITE: tuple[dict[str, Any], type[BaseException]] = ({"type": "http", "after_write": True}, ToolHTTPError)

#: (ainvoke, async tool): a sync graph, a sync tool under ainvoke (LangChain's executor), an async tool
MODES = [(False, False), (True, False), (True, True)]
MODE_IDS = ["sync", "ainvoke-sync-tool", "ainvoke-async-tool"]


def plan_of(**fault: Any) -> Plan:
    return Plan(faults=[{"tool": "lookup", "on_call": 1, **fault}])


def parse_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def calls_then_reports(calls: int, args: Any = lambda i: {"order_id": f"48{i:02d}"}) -> Any:
    """A policy: `calls` parallel `lookup` calls in one turn, then an answer listing [status, text] per ToolMessage."""

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if not seen:
            return tool_calls(*[("lookup", args(i)) for i in range(calls)], turn=1)
        return AIMessage(json.dumps([[m.status, m.text] for m in seen]))

    return policy


def tool_graph(model: Any, node: Any) -> Any:
    """agent -> tools -> agent, the hand-built StateGraph + ToolNode shape."""
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", node)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def run(graph: Any, use_async: bool, config: Any = None, text: str = "look") -> list[list[str]]:
    """Invoke (or ainvoke) with one human message; the final answer's [status, text] list."""
    inp = {"messages": [HumanMessage(text)]}
    out = asyncio.run(graph.ainvoke(inp, config)) if use_async else graph.invoke(inp, config)
    return json.loads(out["messages"][-1].text)  # type: ignore[no-any-return]


class Recorder(BaseCallbackHandler):
    """Another tracer: the tool events it saw, as (kind, payload)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        self.events.append(("start", kw.get("tool_call_id")))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kw: Any) -> None:
        self.events.append(("end", output))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self.events.append(("error", error))

    @property
    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]

    @property
    def errors(self) -> list[BaseException]:
        return [e for k, e in self.events if k == "error"]
