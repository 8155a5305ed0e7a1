"""A scripted chat model: a ``BaseChatModel`` whose next message comes from a Python policy reading the
conversation so far (so it reacts to the tool results chaoskit perturbs). No API key, no network."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

__all__ = ["Policy", "ScriptedChatModel"]

#: reads the whole conversation, returns the next AIMessage (with tool_calls, or a final answer)
Policy = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """``bind_tools`` returns the model itself: the policy already knows the tools it may call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    policy: Any  # a Policy; Any keeps pydantic from trying to validate a callable's signature

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self.policy(messages)
        return ChatResult(generations=[ChatGeneration(message=message)])


def tool_calls(*calls: tuple[str, dict[str, Any]], turn: int) -> AIMessage:
    """An AIMessage asking for ``calls``, with ids that are stable across runs (``call_<turn>_<i>``)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": n, "args": a, "id": f"call_{turn}_{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)
        ],
    )
