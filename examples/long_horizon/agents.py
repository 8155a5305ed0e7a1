"""The two reference agents on the warehouse: ``react`` and ``reflexion`` (scripted), or with your chat model.

``chaoskit run examples/long_horizon/`` runs both, scripted (:class:`~examples.long_horizon.model.PlannerModel`,
no key). With a real model: a factory of your own, ``def mine(): return react_with(ChatOpenAI(model=...))``.
"""

from __future__ import annotations

from typing import Any

from chaoskit_langchain import ReActAgent, ReflexionAgent

from examples.long_horizon.env import Warehouse
from examples.long_horizon.model import PlannerModel

__all__ = ["Run", "react", "react_with", "reflexion", "reflexion_with"]


class Run:
    """One episode's agent and its warehouse; tells the warehouse the task (what the end-state oracle reads)."""

    def __init__(self, agent: ReActAgent, env: Warehouse) -> None:
        self.agent = agent
        self.env = env
        self.architecture = agent.architecture
        self.model_name = agent.model_name

    def invoke(self, task: str) -> str:
        self.env.task = task
        return self.agent.invoke(task)


def _make(cls: type[ReActAgent], model: Any) -> Run:
    env = Warehouse()
    return Run(cls(model, [env.check_stock, env.place_order]), env)


def react_with(model: Any) -> Run:
    """The ReAct agent on a fresh warehouse, driven by ``model`` (any LangChain ``BaseChatModel``)."""
    return _make(ReActAgent, model)


def reflexion_with(model: Any) -> Run:
    """The Reflexion agent on a fresh warehouse, driven by ``model`` (any LangChain ``BaseChatModel``)."""
    return _make(ReflexionAgent, model)


def react() -> Run:
    """ReAct with the scripted model."""
    return react_with(PlannerModel())


def reflexion() -> Run:
    """Reflexion with the scripted model."""
    return reflexion_with(PlannerModel())
