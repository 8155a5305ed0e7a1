"""The ReAct and Reflexion reference agents (chaoskit_langchain), driven by scripted chat models."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from chaoskit_langchain import ReActAgent, ReflexionAgent
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

import chaoskit
from chaoskit import ConfigError, Plan, chaos, telemetry
from chaoskit.metrics import trajectories_from_spans
from chaoskit.semconv import STEP_KIND

TASK = "What is the status of order 4832?"


@chaos(description="Look up an order by id.")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "delivered"}


def _call(i: int) -> AIMessage:
    return AIMessage(
        "Let me look that up.", tool_calls=[{"name": "lookup_order", "args": {"order_id": "4832"}, "id": f"c{i}"}]
    )


def _fake(*replies: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(replies))


class Recording(BaseChatModel):
    """Answers from a list, and keeps what each call was given (to see what the agent sent its model)."""

    replies: list[AIMessage]
    seen: list[list[BaseMessage]]

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.replies[len(self.seen) - 1])])


def _run(agent: Any, plan: Plan | None = None) -> tuple[str, list[Any]]:
    with telemetry.capture() as cap:
        with chaoskit.episode("ref", plan=plan or Plan(seed=0, faults=[]), capture_content=True) as ep:
            out = agent.invoke(TASK)
            ep.finish(out)
    # this episode's trace only (a chat span carries no episode id; it shares the episode's trace id)
    trace_id = next(s.context.trace_id for s in cap.spans if (s.attributes or {}).get("chaoskit.episode.id") == ep.id)
    return out, [s for s in cap.spans if s.context.trace_id == trace_id]


def test_react_calls_the_tool_reads_the_result_and_answers() -> None:
    model = Recording(replies=[_call(1), AIMessage("Order 4832 is delivered.")], seen=[])
    out, spans = _run(ReActAgent(model, [lookup_order]))
    assert out == "Order 4832 is delivered."
    tool_msg = model.seen[1][-1]
    assert isinstance(tool_msg, ToolMessage) and '"status": "delivered"' in tool_msg.content
    (traj,) = trajectories_from_spans(spans)
    assert [s.text for s in traj.steps] == ["Let me look that up.", "Order 4832 is delivered."]
    assert [a.tool for a in traj.attempts] == ["lookup_order"]
    assert traj.steps[0].tool_calls[0].name == "lookup_order"


def test_a_failed_tool_becomes_an_error_result_and_react_goes_on_without_reflecting() -> None:
    plan = Plan(seed=0, faults=[{"type": "http", "tool": "lookup_order", "on_call": 1, "status": 503}])
    model = Recording(replies=[_call(1), _call(2), AIMessage("Order 4832 is delivered.")], seen=[])
    out, spans = _run(ReActAgent(model, [lookup_order]), plan)
    first = model.seen[1][-1]
    assert isinstance(first, ToolMessage) and first.status == "error" and "503" in first.content
    assert out == "Order 4832 is delivered." and len(model.seen) == 3
    chats = [s for s in spans if s.name.startswith("chat")]
    assert len(chats) == 3 and not any(STEP_KIND in (s.attributes or {}) for s in chats)


def test_reflexion_reflects_after_a_failure_and_the_trace_shows_the_reflection() -> None:
    plan = Plan(seed=0, faults=[{"type": "http", "tool": "lookup_order", "on_call": 1, "status": 503}])
    reflection = AIMessage("Reflection: the lookup hit a 503, which looks transient; I will retry it once.")
    model = Recording(replies=[_call(1), reflection, _call(2), AIMessage("Order 4832 is delivered.")], seen=[])
    agent = ReflexionAgent(model, [lookup_order])
    out, spans = _run(agent, plan)
    assert out == "Order 4832 is delivered."
    # the reflection call was asked to reflect, with the failure named, and its answer entered the memory
    asked = model.seen[1][-1]
    assert isinstance(asked, HumanMessage) and "Reflect" in asked.content and "503" in asked.content
    memory = model.seen[2][-1]
    assert isinstance(memory, HumanMessage) and memory.content == reflection.content
    assert agent.reflections == [reflection.content]
    chats = [s for s in spans if s.name.startswith("chat")]
    kinds = [(s.attributes or {}).get(STEP_KIND) for s in chats]
    assert kinds == [None, "reflection", None, None]
    (traj,) = trajectories_from_spans(spans)
    assert traj.steps[1].text == reflection.content and traj.steps[1].tool_calls == ()


def test_reflexion_without_a_failure_runs_like_react() -> None:
    model = Recording(replies=[_call(1), AIMessage("Order 4832 is delivered.")], seen=[])
    agent = ReflexionAgent(model, [lookup_order])
    out, _ = _run(agent)
    assert out == "Order 4832 is delivered." and agent.reflections == [] and len(model.seen) == 2


def test_a_model_without_tool_binding_is_driven_too() -> None:
    agent = ReActAgent(_fake(_call(1), AIMessage("Delivered.")), [lookup_order])
    out, spans = _run(agent)
    assert out == "Delivered." and [s.name for s in spans if s.name.startswith("execute_tool")] == [
        "execute_tool lookup_order"
    ]


def test_a_langchain_tool_works_as_well_as_a_function() -> None:
    @tool
    def order_status(order_id: str) -> str:
        """Look up an order's status."""
        return "delivered"

    model = Recording(
        replies=[
            AIMessage("", tool_calls=[{"name": "order_status", "args": {"order_id": "4832"}, "id": "c1"}]),
            AIMessage("Delivered."),
        ],
        seen=[],
    )
    out, _ = _run(ReActAgent(model, [order_status]))
    assert out == "Delivered." and model.seen[1][-1].content == "delivered"


def test_an_unknown_tool_is_an_error_result_naming_the_tools() -> None:
    model = Recording(
        replies=[AIMessage("", tool_calls=[{"name": "nope", "args": {}, "id": "c1"}]), AIMessage("Sorry.")], seen=[]
    )
    _run(ReActAgent(model, [lookup_order]))
    msg = model.seen[1][-1]
    assert isinstance(msg, ToolMessage) and msg.status == "error" and "lookup_order" in msg.content


def test_the_step_limit_stops_the_loop_and_says_so() -> None:
    model = Recording(replies=[_call(i) for i in range(5)], seen=[])
    out, _ = _run(ReActAgent(model, [lookup_order], max_steps=3))
    assert len(model.seen) == 3 and "Stopped after 3 steps" in out and "not done" in out


def test_outside_an_episode_it_runs_and_records_nothing() -> None:
    model = Recording(replies=[_call(1), AIMessage("Delivered.")], seen=[])
    with telemetry.capture() as cap:
        assert ReActAgent(model, [lookup_order]).invoke(TASK) == "Delivered."
    assert not [s for s in cap.spans if s.name.startswith("chat")]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ReActAgent("gpt-4o", [lookup_order]), "BaseChatModel"),  # type: ignore[arg-type]
        (lambda: ReActAgent(_fake(), []), "at least one tool"),
        (lambda: ReActAgent(_fake(), [42]), "BaseTool or a function"),
        (lambda: ReActAgent(_fake(), [lookup_order, lookup_order]), "two tools are named 'lookup_order'"),
        (lambda: ReActAgent(_fake(), [lookup_order], max_steps=0), "max_steps"),
        (lambda: ReflexionAgent(_fake(), [lookup_order], max_reflections=-1), "max_reflections"),
    ],
)
def test_bad_arguments_are_clear_errors(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


def test_the_architecture_and_model_name_are_known() -> None:
    assert (ReActAgent.architecture, ReflexionAgent.architecture) == ("react", "reflexion")
    assert ReActAgent(_fake(), [lookup_order]).model_name == "GenericFakeChatModel"
