"""A LangGraph (``create_agent``) support agent whose tool AND model calls a cassette records and replays.

    chaoskit run examples/scenarios/support-refund-after-500.yaml --agent examples.replay.langgraph_agent:make ...

Its tools are plain LangChain tools behind ``ChaosMiddleware``, which puts each tool call through the attempt
engine and each model call through the cassette (docs/replay.md, "Model calls"). The model is a real one when
``CHAOSKIT_REPLAY_MODEL`` names it (``openai:gpt-4o-mini``, ``anthropic:claude-3-5-haiku-latest``: through
``langchain.chat_models.init_chat_model``, with the provider's package installed and its key in the provider's
own variable); otherwise the support example's scripted careful policy, so the example runs with no key.
"""

from __future__ import annotations

import os
from typing import Any

from chaoskit_langchain import ChaosMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import HumanMessage

from examples.support.agents import SYSTEM, careful_policy
from examples.support.env import SupportEnv, make_tools
from examples.support.model import ScriptedChatModel

__all__ = ["ReplayableAgent", "make"]


def _surface_error(exc: Exception, request: Any) -> str:
    # tool exceptions go back to the model as error ToolMessages, as the support agent does
    return f"Error: {type(exc).__name__}: {exc}"


def _model() -> Any:
    name = os.environ.get("CHAOSKIT_REPLAY_MODEL", "").strip()
    if not name:
        return ScriptedChatModel(policy=careful_policy)
    from langchain.chat_models import init_chat_model

    return init_chat_model(name, temperature=0)


class ReplayableAgent:
    """``invoke(task) -> final answer`` through the graph; ``env`` is the backend its tools change."""

    def __init__(self) -> None:
        self.env = SupportEnv()
        self.graph = create_agent(
            _model(),
            tools=make_tools(self.env, chaos=False),
            system_prompt=SYSTEM,
            middleware=[
                ToolErrorMiddleware(on_error=_surface_error),
                ChaosMiddleware(irreversible=["issue_refund"], idempotency_args={"issue_refund": "idempotency_key"}),
            ],
        )

    def invoke(self, task: str) -> str:
        out = self.graph.invoke({"messages": [HumanMessage(task)]}, config={"recursion_limit": 60})
        return str(out["messages"][-1].text)


def make() -> ReplayableAgent:
    return ReplayableAgent()
