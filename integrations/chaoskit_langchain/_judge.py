"""The judge adapter: any LangChain ``BaseChatModel`` asked chaoskit's rubric (the ``chaoskit.judges`` entry point)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from chaoskit.judge import ModelRefused, Reply

__all__ = ["LangChainJudge", "judge_model"]


def _model_id(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id", "deployment_name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return f"{type(model).__name__}:{value}"
    return type(model).__name__


def _text(content: Any) -> str:
    """A message's text: its string content, or the text blocks of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text", "")) for b in content if isinstance(b, str | dict)
        )
    return ""


class LangChainJudge:
    """A LangChain chat model as a ``chaoskit.judge.JudgeModel``: one ``invoke`` of a system and a human
    message; the tokens from the reply's ``usage_metadata``; a provider's refusal raises ``ModelRefused``.
    ``name`` (the cache key's model part) is the class and model name, e.g. ``ChatOpenAI:gpt-4o-mini``."""

    def __init__(self, model: BaseChatModel, name: str | None = None) -> None:
        self.chat_model = model
        self.name = name or _model_id(model)
        value = getattr(model, "model_name", None) or getattr(model, "model", None)
        self.model = value if isinstance(value, str) else None

    def complete(self, system: str, user: str, *, timeout: float) -> Reply:
        message = self.chat_model.invoke([SystemMessage(system), HumanMessage(user)])
        extra = getattr(message, "additional_kwargs", None) or {}
        if extra.get("refusal"):
            raise ModelRefused(str(extra["refusal"]))
        usage = getattr(message, "usage_metadata", None) or {}
        meta = getattr(message, "response_metadata", None) or {}
        if meta.get("finish_reason") == "content_filter":
            raise ModelRefused("the provider's content filter stopped the reply")
        answered = meta.get("model_name") or meta.get("model")
        return Reply(
            text=_text(getattr(message, "content", "")),
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            model=answered if isinstance(answered, str) else self.model,
        )


def judge_model(obj: Any) -> LangChainJudge | None:
    """The ``chaoskit.judges`` entry point: a :class:`LangChainJudge` for a ``BaseChatModel``, else None."""
    return LangChainJudge(obj) if isinstance(obj, BaseChatModel) else None
