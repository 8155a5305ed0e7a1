"""What LangChain and LangGraph say of a call that the GenAI conventions name: its agent, conversation and provider."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import chaoskit.semconv as sc
from chaoskit import current_episode

__all__ = ["call_context", "model_provider", "provider_name", "request_context"]

#: LangChain's ``ls_provider`` values whose ``gen_ai.provider.name`` is spelled otherwise (the conventions'
#: well-known values); any other is kept as LangChain spells it (``openai``, ``anthropic``, ``groq``, ...)
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "google_genai": "gcp.gen_ai",
    "google": "gcp.gen_ai",
    "google_vertexai": "gcp.vertex_ai",
    "vertexai": "gcp.vertex_ai",
    "amazon_bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "xai": "x_ai",
    "ibm": "ibm.watsonx.ai",
    "watsonx": "ibm.watsonx.ai",
    "moonshot": "moonshot_ai",
}


def provider_name(ls_provider: Any) -> str | None:
    """``gen_ai.provider.name`` for LangChain's ``ls_provider`` (None when there is none)."""
    if not isinstance(ls_provider, str) or not ls_provider.strip():
        return None
    key = ls_provider.strip().lower()
    return _PROVIDERS.get(key, key)


def model_provider(model: Any) -> str | None:
    """The provider of a LangChain chat model: its ``ls_provider`` (what LangSmith reads too), else the first
    word of its ``_llm_type`` (``openai-chat`` -> ``openai``); None when the object says neither."""
    try:
        params = model._get_ls_params()
    except Exception:  # not a chat model, or one whose parameters cannot be read: no provider rather than an error
        params = None
    found = params.get("ls_provider") if isinstance(params, Mapping) else None
    if not found:
        try:
            llm_type = model._llm_type
        except Exception:
            llm_type = None
        found = llm_type.split("-", 1)[0] if isinstance(llm_type, str) else None
    return provider_name(found)


def call_context(metadata: Any, configurable: Any = None) -> dict[str, str]:
    """The agent (``lc_agent_name``, which ``create_agent(name=...)`` puts in the run's metadata) and the
    conversation (LangGraph's ``thread_id``, in ``configurable``, which LangGraph also copies into the
    metadata callbacks get) of a call, as ``gen_ai.agent.name`` / ``gen_ai.conversation.id``; the current
    episode takes the conversation as its own (:meth:`chaoskit.Episode.identify`)."""
    meta = metadata if isinstance(metadata, Mapping) else {}
    conf = configurable if isinstance(configurable, Mapping) else {}
    out: dict[str, str] = {}
    agent = meta.get("lc_agent_name")
    if isinstance(agent, str) and agent:
        out[sc.GEN_AI_AGENT_NAME] = agent
    thread = conf.get("thread_id", meta.get("thread_id"))
    if (isinstance(thread, str) and thread) or (type(thread) is int) or _is_uuid(thread):
        out[sc.GEN_AI_CONVERSATION_ID] = str(thread)
        episode = current_episode()
        if episode is not None:
            episode.identify(conversation_id=out[sc.GEN_AI_CONVERSATION_ID])
    return out


def request_context(request: Any) -> dict[str, str]:
    """:func:`call_context` of a ``ToolCallRequest`` (ToolNode, ``create_agent`` middleware): from the run
    config its runtime holds; empty outside a graph."""
    config = getattr(getattr(request, "runtime", None), "config", None)
    if not isinstance(config, Mapping):
        return {}
    return call_context(config.get("metadata"), config.get("configurable"))


def _is_uuid(value: Any) -> bool:
    return type(value).__name__ == "UUID"
