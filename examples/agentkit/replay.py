"""A scripted agent as a LangChain chat model: each turn replays the conversation through the script.

The model re-runs the agent's ``solve`` from the start on every turn, feeding it the tool results already in
the conversation; the first tool call without a result becomes the model's next message, and a script that
finishes becomes the final answer. Waits the script asked for before that call happen once, then. Scripts are
deterministic, so a replay takes the same path as the run it replays.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from examples.agentkit._agent import NeedCall, ScriptedAgent
from examples.agentkit._transport import ToolError

__all__ = ["Replay", "ReplayChatModel"]


def _content(text: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


class Replay:
    """A transport over the tool results of a conversation; past its end it raises :class:`NeedCall`."""

    def __init__(self, messages: Sequence[BaseMessage]) -> None:
        names: dict[str, str] = {}
        self.results: list[tuple[str, bool, Any]] = []
        for m in messages:
            if isinstance(m, AIMessage):
                names.update({c["id"] or "": c["name"] for c in m.tool_calls})
            elif isinstance(m, ToolMessage):
                name = names.get(m.tool_call_id, m.name or "")
                self.results.append((name, m.status != "error", m.text if m.status == "error" else _content(m.text)))
        self._next = 0
        self._wait = 0.0

    def call(self, name: str, args: dict[str, Any]) -> Any:
        if self._next >= len(self.results):
            raise NeedCall(name, args, self._wait)
        got, ok, value = self.results[self._next]
        self._next += 1
        self._wait = 0.0
        if got != name:
            raise RuntimeError(f"replay diverged: the script called {name}, the conversation has {got}")
        if not ok:
            raise ToolError(value)
        return value

    def sleep(self, seconds: float) -> None:
        self._wait += seconds


class ReplayChatModel(BaseChatModel):
    """``agent(transport)`` builds the scripted agent; ``bind_tools`` returns the model (the script knows its tools)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: Any  # Callable[[Replay], ScriptedAgent]; Any keeps pydantic from validating a callable
    #: the model the calls ask for (LangChain's ``ls_model_name``), as a provider's chat model names its own
    model_name: str = "scripted-replay"

    @property
    def _llm_type(self) -> str:
        return "scripted-replay"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReplayChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        task = next((m.text for m in messages if isinstance(m, HumanMessage)), "")
        build: Callable[[Replay], ScriptedAgent] = self.agent
        turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        try:
            message = AIMessage(content=build(Replay(messages)).invoke(task))
        except NeedCall as need:
            if need.wait_s:
                time.sleep(need.wait_s)
            call = {"name": need.name, "args": need.call_args, "id": f"call_{turn}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        # an estimate, one token per 4 characters read and written, so that cost reports have something to
        # count: the script is no model and has no provider's usage figures
        read = sum(len(str(m.content)) for m in messages)
        written = len(str(message.content)) + sum(len(str(c)) for c in message.tool_calls)
        message.usage_metadata = {
            "input_tokens": (read + 3) // 4,
            "output_tokens": (written + 3) // 4,
            "total_tokens": (read + 3) // 4 + (written + 3) // 4,
        }
        message.response_metadata = {"model_name": "scripted-replay"}
        return ChatResult(generations=[ChatGeneration(message=message)])
