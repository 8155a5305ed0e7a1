"""What LangChain and LangGraph know of a call reaches the GenAI attributes: the agent ``create_agent(name=...)``
names, LangGraph's ``thread_id`` as the conversation, and the model's provider on the ``chat`` spans."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware
from chaoskit_langchain._genai import model_provider, provider_name
from chaoskit_langgraph import instrument_graph
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

import chaoskit
import chaoskit.semconv as sc
from chaoskit.testing import capture_spans

TASK = "What is the status of order 4832?"


@tool
def order_status(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "status": "delivered"}


class OpenAILike(BaseChatModel):
    """Asks for order_status(4832), then answers; says it is an OpenAI model as langchain-openai's does."""

    @property
    def _llm_type(self) -> str:
        return "openai-chat"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {"ls_provider": "openai", "ls_model_name": "gpt-4o-mini", "ls_model_type": "chat"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> OpenAILike:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if not any(isinstance(m, ToolMessage) for m in messages):
            msg = AIMessage(
                content="",
                tool_calls=[
                    {"name": "order_status", "args": {"order_id": "4832"}, "id": "call_1", "type": "tool_call"}
                ],
            )
        else:
            msg = AIMessage(content="Order 4832 is delivered.")
        msg.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return ChatResult(generations=[ChatGeneration(message=msg)])


def _agent(how: str) -> tuple[Any, dict[str, Any]]:
    config: dict[str, Any] = {"configurable": {"thread_id": "thread-42"}}
    if how == "middleware":
        return create_agent(OpenAILike(), [order_status], name="support_agent", middleware=[ChaosMiddleware()]), config
    if how == "instrument_graph":
        return instrument_graph(create_agent(OpenAILike(), [order_status], name="support_agent")), config
    handler = ChaosCallbackHandler()
    return create_agent(OpenAILike(), [order_status], name="support_agent"), {**config, "callbacks": [handler]}


@pytest.mark.parametrize("how", ["middleware", "instrument_graph", "callbacks"])
def test_agent_conversation_and_provider_reach_the_spans(how: str) -> None:
    agent, config = _agent(how)
    with capture_spans() as cap:
        with chaoskit.episode("status"):
            agent.invoke({"messages": [("user", TASK)]}, config=config)
    spans = cap.spans
    (root,) = [s for s in spans if s.name.startswith(sc.OP_INVOKE_AGENT)]
    attempts = [dict(s.attributes or {}) for s in cap.attempt_spans()]
    chats = [dict(s.attributes or {}) for s in spans if (s.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == "chat"]
    assert len(attempts) == 1 and len(chats) == 2
    # the agent that ran the tool, and the conversation, on the tool's attempt span
    assert attempts[0][sc.GEN_AI_AGENT_NAME] == "support_agent"
    assert attempts[0][sc.GEN_AI_CONVERSATION_ID] == "thread-42"
    # the episode takes the conversation as its own
    assert root.attributes[sc.GEN_AI_CONVERSATION_ID] == "thread-42"  # type: ignore[index]
    # every model step says who served it
    assert [c[sc.GEN_AI_PROVIDER_NAME] for c in chats] == ["openai", "openai"]
    # the step after the tool call knows the conversation too
    assert chats[-1][sc.GEN_AI_CONVERSATION_ID] == "thread-42"


def test_no_thread_no_agent_name_no_attribute() -> None:
    agent = create_agent(OpenAILike(), [order_status], middleware=[ChaosMiddleware()])
    with capture_spans() as cap, chaoskit.episode("status"):
        agent.invoke({"messages": [("user", TASK)]})
    (attempt,) = [dict(s.attributes or {}) for s in cap.attempt_spans()]
    assert sc.GEN_AI_AGENT_NAME not in attempt and sc.GEN_AI_CONVERSATION_ID not in attempt


def test_provider_of_real_langchain_models() -> None:
    anthropic = pytest.importorskip("langchain_anthropic")
    google = pytest.importorskip("langchain_google_genai")
    assert model_provider(anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="k")) == "anthropic"
    assert model_provider(google.ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="k")) == "gcp.gen_ai"
    assert model_provider(OpenAILike()) == "openai"
    assert model_provider(object()) is None
    # LangChain's names against the conventions' well-known values
    assert [provider_name(p) for p in ("azure", "amazon_bedrock", "mistralai", "xai", "groq", "", None)] == [
        "azure.ai.openai",
        "aws.bedrock",
        "mistral_ai",
        "x_ai",
        "groq",
        None,
        None,
    ]
