"""A model call is recorded under the name it was counted under, failed or not, so a retry is seen as one.

A chat model whose request names no model (a custom ``BaseChatModel``) but whose answers carry a model name in
their metadata (as provider answers do) had its failed calls recorded as ``model`` and its answered ones under
the answer's name: the checks group a model's calls by name, so an immediate retry after a 429 went unseen and
``honors_retry_after`` passed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import chaoskit
from chaoskit import Plan, Trace, telemetry
from chaoskit.checks import run_checks
from examples.support.model import ScriptedChatModel, tool_calls


def _policy(messages: Sequence[BaseMessage]) -> AIMessage:
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    out = tool_calls(("lookup", {"order_id": "4832"}), turn=1) if not seen else AIMessage("Order 4832 is shipped.")
    out.response_metadata = {"model_name": "gpt-4o-mini-2024-07-18"}  # named only in the answer
    return out


@tool
def lookup(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "status": "shipped"}


@pytest.mark.parametrize("via", ["middleware", "callbacks"])
def test_an_immediate_retry_after_a_429_fails_honors_retry_after_whatever_names_the_model(via: str) -> None:
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 2, "retry_after": 0.5}])
    handler = ChaosCallbackHandler(model_faults=True)
    middleware = [retry, ChaosMiddleware()] if via == "middleware" else [retry]
    graph = create_agent(ScriptedChatModel(policy=_policy), tools=[lookup], middleware=middleware)
    config: Any = {"callbacks": [handler]} if via == "callbacks" else {}
    with telemetry.capture() as cap:
        with chaoskit.episode("names", plan=plan) as ep:
            out = graph.invoke({"messages": [HumanMessage("where is order 4832?")]}, config=config)
            ep.finish(str(out["messages"][-1].text))
    trace = Trace.from_spans(cap.spans)
    calls = json.loads(trace.episodes[0].attributes["chaoskit.episode.model_calls"])
    assert [c["outcome"] for c in calls] == ["ok", "error", "ok"]
    assert len({c["model"] for c in calls}) == 1, calls  # one model, one name: failed and answered alike
    (result,) = run_checks(trace, ["honors_retry_after"])
    assert result.severity == "fail", result.message
