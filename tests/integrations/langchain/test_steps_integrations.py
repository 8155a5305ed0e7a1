"""The LangChain/LangGraph entry points record each model call as a step of the open episode: the callback
handler, ``ChaosMiddleware`` and ``instrument_graph``, with usage always and content only when asked."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from chaoskit_langchain import ChaosCallbackHandler, ChaosMiddleware
from chaoskit_langchain._callbacks import StepRecorder
from chaoskit_langgraph import instrument_graph, uninstrument_graph
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

import chaoskit
from chaoskit.metrics import trajectories_from_spans, trajectory_metrics
from chaoskit.testing import capture_spans

TASK = "What is the status of order 4832?"


@tool
def order_status(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "status": "delivered"}


class TwoTurns(BaseChatModel):
    """First asks for order_status(4832), then answers from the tool result; reports usage like a provider."""

    @property
    def _llm_type(self) -> str:
        return "two-turns"

    def bind_tools(self, tools: Any, **kwargs: Any) -> TwoTurns:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            msg = AIMessage(
                content="Let me look that up.",
                tool_calls=[
                    {"name": "order_status", "args": {"order_id": "4832"}, "id": "call_1", "type": "tool_call"}
                ],
            )
        else:
            msg = AIMessage(content="I checked: order 4832 is delivered.")
        msg.usage_metadata = {"input_tokens": 100 + 50 * len(results), "output_tokens": 10, "total_tokens": 0}
        msg.response_metadata = {"model_name": "two-turns-1"}
        return ChatResult(generations=[ChatGeneration(message=msg)])


def _run(agent: Any, config: dict[str, Any] | None = None, *, capture: bool | None = True) -> list[Any]:
    with capture_spans() as cap, chaoskit.episode("status", capture_content=capture) as ep:
        ep.set_attribute("task", TASK)
        agent.invoke({"messages": [("user", TASK)]}, config=config or {})
    return list(cap.spans)


def _check_steps(spans: list[Any], *, content: bool) -> None:
    (traj,) = trajectories_from_spans(spans)
    assert len(traj.steps) == 2, [s.name for s in spans]
    first, second = traj.steps
    assert (first.input_tokens, first.output_tokens, second.input_tokens) == (100, 10, 150)
    assert first.model == "two-turns-1"
    assert [a.tool for a in traj.attempts_of_step(0)] == ["order_status"]
    if content:
        assert first.text == "Let me look that up."
        assert first.tool_calls[0].name == "order_status"
        assert first.tool_calls[0].arguments == {"order_id": "4832"}
        assert "delivered" in second.tool_results[0]
        m = trajectory_metrics(traj)
        assert m.svr == 0.0  # "I checked" is backed by the clean order_status call in the step before
        assert m.hallucination == 0.0  # 4832 is in the task
    else:
        assert not first.captured and first.text is None


@pytest.mark.parametrize("capture", [True, None])
def test_middleware_records_model_steps(capture: bool | None) -> None:
    agent = create_agent(TwoTurns(), [order_status], middleware=[ChaosMiddleware()])
    _check_steps(_run(agent, capture=capture), content=bool(capture))


def test_middleware_record_steps_false_records_none() -> None:
    agent = create_agent(TwoTurns(), [order_status], middleware=[ChaosMiddleware(record_steps=False)])
    assert [s for s in _run(agent) if s.name.startswith("chat")] == []


def test_callback_handler_records_model_steps() -> None:
    agent = create_agent(TwoTurns(), [order_status])
    _check_steps(_run(agent, {"callbacks": [ChaosCallbackHandler()]}), content=True)


def test_step_recorder_records_model_steps_without_tool_chaos() -> None:
    agent = create_agent(TwoTurns(), [order_status])
    spans = _run(agent, {"callbacks": [StepRecorder(capture_content=True)]}, capture=None)
    (traj,) = trajectories_from_spans(spans)
    assert [s.text for s in traj.steps] == ["Let me look that up.", "I checked: order 4832 is delivered."]
    assert traj.attempts == ()  # no chaos on the tools: no execute_tool spans


def test_instrument_graph_records_model_steps_and_uninstrument_removes_the_recorder() -> None:
    agent = instrument_graph(create_agent(TwoTurns(), [order_status]))
    _check_steps(_run(agent), content=True)
    uninstrument_graph(agent)
    assert [s for s in _run(agent) if s.name.startswith("chat")] == []


def test_no_step_outside_an_episode() -> None:
    agent = instrument_graph(create_agent(TwoTurns(), [order_status]))
    with capture_spans() as cap:
        agent.invoke({"messages": [("user", TASK)]})
    assert [s for s in cap.spans if s.name.startswith("chat")] == []


@pytest.mark.parametrize(
    "combination",
    ["middleware + callback handler", "instrument_graph + middleware"],
)
def test_two_recorders_on_one_agent_record_each_step_once(combination: str) -> None:
    # each recorder alone is documented; combined, they see the same model answer (same message id)
    if combination == "middleware + callback handler":
        spans = _run(
            create_agent(TwoTurns(), [order_status], middleware=[ChaosMiddleware()]),
            {"callbacks": [ChaosCallbackHandler()]},
        )
    else:
        spans = _run(instrument_graph(create_agent(TwoTurns(), [order_status], middleware=[ChaosMiddleware()])))
    (traj,) = trajectories_from_spans(spans)
    assert len(traj.steps) == 2
    assert sum((s.input_tokens or 0) + (s.output_tokens or 0) for s in traj.steps) == 270
    assert trajectory_metrics(traj).svr == 0.0  # "I checked" right after the call: backed


@tool
def account(order_id: str) -> dict[str, Any]:
    """Look up an order's account."""
    return {"order_id": order_id, "api_key": "sk-live-SECRET123", "password": "hunter2"}


class AsksAccount(TwoTurns):
    """TwoTurns, asking for the ``account`` tool (whose result holds secrets)."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kw)
        msg = result.generations[0].message
        if isinstance(msg, AIMessage) and msg.tool_calls:
            msg.tool_calls[0]["name"] = "account"
        return result


def test_secrets_in_a_langchain_tool_result_do_not_reach_the_step_content() -> None:
    # LangChain hands the result to the model as a ToolMessage whose content is JSON text
    spans = _run(create_agent(AsksAccount(), [account], middleware=[ChaosMiddleware()]))
    steps = [s for s in spans if s.name.startswith("chat")]
    assert steps and any("gen_ai.input.messages" in (s.attributes or {}) for s in steps)
    for s in spans:
        for value in (s.attributes or {}).values():
            assert "SECRET123" not in str(value) and "hunter2" not in str(value), s.name
