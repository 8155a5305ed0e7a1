"""Model faults (``target: model``): plans, the per-model call count, and ChaosMiddleware's model hook driven by
create_agent with LangChain's ModelRetryMiddleware, under each model fault."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from _lc_helpers import ORDER
from chaoskit_langchain import ChaosMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, ToolErrorMiddleware
from langchain_core.exceptions import ModelAPIError, ModelError, ModelRateLimitError, ModelTimeoutError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import chaoskit
from chaoskit import ModelHTTPError, ModelTimeout, Plan, PlanError, telemetry
from chaoskit.engine import begin_model_call
from examples.support.model import ScriptedChatModel, tool_calls

# --- plans ------------------------------------------------------------------------------------------------------


def test_model_faults_load_with_their_target_and_triggers() -> None:
    plan = Plan.from_yaml(
        "seed: 3\nfaults:\n"
        "  - {type: rate_limit, target: model, on_call: 1, retry_after: 2}\n"
        "  - {type: overloaded, model: 'gpt-*', calls: 2-3}\n"
        "  - {type: malformed_tool_call, every: 4}\n"
        "  - {type: http, tool: search, status: 500}\n"
    )
    assert [(f.type, f.target) for f in plan.faults] == [
        ("rate_limit", "model"),
        ("overloaded", "model"),
        ("malformed_tool_call", "model"),
        ("http", "tool"),
    ]
    assert [i for i, _ in plan.model_rules("gpt-4o").candidates] == [0, 1, 2]
    assert [i for i, _ in plan.model_rules("claude").candidates] == [0, 2]
    # tool calls never meet a model fault, whatever the tool is called
    assert [i for i, _ in plan.rules("search").candidates] == [3]
    assert plan.rules("model").candidates == ()
    assert plan.faults[1].describe() == "overloaded on model gpt-* calls 2-3"
    assert Plan.from_dict(plan.to_dict()).to_dict() == plan.to_dict()


@pytest.mark.parametrize(
    ("entry", "field", "says"),
    [
        ("{type: overloaded, tool: search}", "faults[0].tool", "names its model with 'model'"),
        ("{type: empty, target: model}", "faults[0].target", "empty_completion, truncated"),
        ("{type: partial, model: gpt}", "faults[0].model", "acts on tool calls only"),
        ("{type: refusal, target: tool}", "faults[0].target", "acts on model calls only"),
        ("{type: rate_limit, target: modle}", "faults[0].target", "'tool' or 'model'"),
        ("{type: http, target: model, after_write: true}", "faults[0]", "after_write"),
        ("{type: overloaded, status: 500}", "faults[0].status", "529 or 503"),
        ("{type: http, tool: x, model: gpt}", "faults[0].model", "not both"),
        ("{type: http, target: tool, model: gpt}", "faults[0].model", "only a fault with 'target: model'"),
    ],
)
def test_bad_model_faults_name_file_line_field_and_what_is_allowed(entry: str, field: str, says: str) -> None:
    with pytest.raises(PlanError) as err:
        Plan.from_yaml(f"seed: 1\nfaults:\n  - {entry}\n", source="plan.yaml")
    text = str(err.value)
    assert text.startswith(f"plan.yaml:3: {field}"), text
    assert says in text


# --- counting -----------------------------------------------------------------------------------------------------


def test_model_calls_are_counted_per_model_and_apart_from_tools() -> None:
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 2}, {"type": "http", "on_call": 1}])
    with plan.activate():
        seen = [(c.model, c.n, c.fault.type if c.fault else None) for c in map(begin_model_call, ["a", "a", "b", None])]
    assert seen == [("a", 1, None), ("a", 2, "rate_limit"), ("b", 1, None), ("model", 1, None)]


def test_times_and_probability_give_the_same_model_faults_in_threads() -> None:
    plan = Plan(seed=7, faults=[{"type": "overloaded", "probability": 0.5, "times": 3}])

    def fired() -> list[int]:
        out: list[int] = []
        lock = threading.Lock()
        with plan.activate():

            def one() -> None:
                call = begin_model_call("m")
                if call.fault is not None:
                    with lock:
                        out.append(call.n)

            from contextvars import copy_context

            threads = [threading.Thread(target=copy_context().run, args=(one,)) for _ in range(40)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=30)
        return sorted(out)

    first = fired()
    assert len(first) == 3
    assert fired() == first


def test_no_plan_means_no_model_fault() -> None:
    assert begin_model_call("m").fault is None


# --- create_agent + ModelRetryMiddleware -----------------------------------------------------------------------


class Agent:
    """create_agent with a `lookup` tool; the scripted model calls it once, then answers with what it read."""

    def __init__(self, middleware: Sequence[Any]) -> None:
        self.model_calls = 0
        self.ran: list[str] = []

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.ran.append(order_id)
            return {**ORDER, "order_id": order_id}

        def policy(messages: Sequence[BaseMessage]) -> AIMessage:
            self.model_calls += 1
            seen = [m for m in messages if isinstance(m, ToolMessage)]
            if not seen:
                return tool_calls(("lookup", {"order_id": "4832"}), turn=1)
            if seen[-1].status == "error":
                return AIMessage("I could not look up order 4832.", id="final")
            return AIMessage(f"Order 4832 is {json.loads(seen[-1].text)['status']}.", id="final")

        self.graph = create_agent(ScriptedChatModel(policy=policy), tools=[lookup], middleware=list(middleware))

    def invoke(self, use_async: bool = False) -> str:
        inp = {"messages": [HumanMessage("where is order 4832?")]}
        out = asyncio.run(self.graph.ainvoke(inp)) if use_async else self.graph.invoke(inp)
        return str(out["messages"][-1].text)


def _model_spans(spans: Sequence[Any]) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) | {"_status": s.status} for s in spans if s.name.startswith("chat")]


def _episode(plan: Plan, agent: Agent, use_async: bool = False) -> tuple[str, list[Any]]:
    with telemetry.capture() as cap:
        with chaoskit.episode("model-fault", plan=plan) as ep:
            answer = agent.invoke(use_async)
            ep.finish(answer)
    mine = [s for s in cap.spans if s.context.trace_id == cap.spans[-1].context.trace_id]
    return answer, sorted((s for s in mine if s.name.startswith("chat")), key=lambda s: s.start_time)


RETRIED = [
    ({"type": "rate_limit", "retry_after": 0.5}, ModelRateLimitError, ModelHTTPError),
    ({"type": "overloaded"}, ModelAPIError, ModelHTTPError),
    ({"type": "overloaded", "status": 503}, ModelAPIError, ModelHTTPError),
    ({"type": "http", "status": 500}, ModelAPIError, ModelHTTPError),
    ({"type": "timeout", "after_s": 0.01}, ModelTimeoutError, ModelTimeout),
]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize(("fault", "lc_type", "ours"), RETRIED, ids=[str(f[0]) for f in RETRIED])
def test_model_retry_middleware_retries_injected_provider_errors(
    fault: dict[str, Any], lc_type: type[ModelError], ours: type[Exception], use_async: bool
) -> None:
    seen: list[BaseException] = []

    def retry_on(exc: Exception) -> bool:
        seen.append(exc)
        return isinstance(exc, ModelError) and exc.is_retryable

    agent = Agent(
        [ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False, retry_on=retry_on), ChaosMiddleware()]
    )
    plan = Plan(faults=[{**fault, "target": "model", "on_call": 1}])
    answer, chats = _episode(plan, agent, use_async)
    # the retry middleware saw the fault as a LangChain model error (and chaoskit's own type), retried once
    assert len(seen) == 1 and isinstance(seen[0], lc_type) and isinstance(seen[0], ours)
    assert answer == "Order 4832 is pending."
    assert agent.model_calls == 2  # the faulted call never reached the model
    assert [s.attributes.get("chaoskit.model.call") for s in chats] == [1, 2, 3]
    first = chats[0].attributes
    assert first["chaoskit.fault.type"] == fault["type"] and first["chaoskit.fault.target"] == "model"
    assert first["error.type"] == lc_type.__name__ and first["chaoskit.fault.injected"] is True
    assert chats[0].status.description.startswith("injected: ")
    assert first["gen_ai.response.finish_reasons"] == ("error",)
    assert all("chaoskit.fault.type" not in s.attributes for s in chats[1:])
    assert chats[0].name == "chat scripted" or chats[0].name.startswith("chat")


def test_without_retry_middleware_an_injected_rate_limit_ends_the_run() -> None:
    agent = Agent([ChaosMiddleware()])
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 2, "retry_after": 1}])
    with pytest.raises(ModelRateLimitError) as err, chaoskit.episode("no-retry", plan=plan):
        agent.invoke()
    assert err.value.retry_after == 1.0 and err.value.status == 429
    assert chaoskit.engine.injected_fault(err.value) == "rate_limit"
    assert agent.ran == ["4832"]  # the tool ran; the second model call failed before reaching the model


def test_model_retry_middleware_ignores_retry_after() -> None:
    # ModelRetryMiddleware's backoff never reads Retry-After: the retry starts long before the 1 s asked for
    agent = Agent([ModelRetryMiddleware(max_retries=1, initial_delay=0.0, jitter=False), ChaosMiddleware()])
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 1.0}])
    _, chats = _episode(plan, agent)
    first, retry = chats[0], chats[1]
    assert first.attributes["chaoskit.retry_after"] == 1.0
    assert (retry.start_time - first.end_time) / 1e9 < 1.0


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_completion_faults_change_what_the_agent_reads(use_async: bool) -> None:
    cases: dict[str, Any] = {
        "empty_completion": lambda out, agent: out == "" and agent.ran == [],
        "refusal": lambda out, agent: out.startswith("I'm sorry") and agent.ran == [],
        "truncated": lambda out, agent: out == "Order 4832 " and agent.ran == ["4832"],
        # the arguments are not JSON: no tool runs, and create_agent ends the run with the model's empty text
        "malformed_tool_call": lambda out, agent: agent.ran == [],
        # the tool does not exist: ToolNode answers with an error, the model is asked again and reads it
        "unknown_tool_call": lambda out, agent: out.startswith("I could not") and agent.model_calls == 2,
    }
    for kind, holds in cases.items():
        agent = Agent([ChaosMiddleware()])
        on = 2 if kind == "truncated" else 1
        plan = Plan(faults=[{"type": kind, "on_call": on}])
        answer, chats = _episode(plan, agent, use_async)
        assert holds(answer, agent), (kind, answer, agent.ran, agent.model_calls)
        faulted = [s for s in chats if s.attributes.get("chaoskit.fault.type") == kind]
        assert len(faulted) == 1, kind
        if kind == "truncated":
            assert faulted[0].attributes["gen_ai.response.finish_reasons"] == ("length",)


def test_unknown_tool_call_reaches_tool_node_as_an_error_the_model_reads() -> None:
    read: list[str] = []

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        errors = [m for m in messages if isinstance(m, ToolMessage)]
        if not errors:
            return tool_calls(("lookup", {"order_id": "4832"}), turn=1)
        read.append(errors[-1].text)
        return AIMessage("I could not look the order up.")

    @tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return "pending"

    graph = create_agent(ScriptedChatModel(policy=policy), tools=[lookup], middleware=[ChaosMiddleware()])
    plan = Plan(faults=[{"type": "unknown_tool_call", "name": "drop_tables", "on_call": 1}])
    with chaoskit.episode("unknown", plan=plan):
        graph.invoke({"messages": [HumanMessage("go")]})
    assert len(read) == 1 and "drop_tables" in read[0] and "not a valid tool" in read[0]


def test_latency_delays_the_model_call_and_changes_nothing_else() -> None:
    agent = Agent([ChaosMiddleware()])
    plan = Plan(faults=[{"type": "latency", "target": "model", "delay_s": 0.01, "on_call": 1}])
    answer, chats = _episode(plan, agent)
    assert answer == "Order 4832 is pending." and agent.model_calls == 2
    assert chats[0].attributes["chaoskit.fault.type"] == "latency"
    assert "error.type" not in chats[0].attributes


def test_no_model_fault_changes_nothing() -> None:
    plain = Agent([]).invoke()
    agent = Agent([ChaosMiddleware()])
    answer, chats = _episode(Plan(faults=[{"type": "http", "tool": "lookup", "on_call": 9}]), agent)
    assert answer == plain and agent.model_calls == 2
    assert [s.attributes["chaoskit.model.call"] for s in chats] == [1, 2]


def test_traces_with_model_fault_spans_still_grade() -> None:
    from chaoskit import Trace

    agent = Agent([ChaosMiddleware()])
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 3}])
    with telemetry.capture() as cap:
        with chaoskit.episode("grade", plan=plan) as ep:
            agent.invoke()
            ep.finish("done")
    trace = Trace.from_spans(cap.spans)
    assert [a.tool for a in trace.episodes[0].attempts] == ["lookup"]


# --- the checks over model calls --------------------------------------------------------------------------------


def _graded(middleware: Sequence[Any], plan: Plan, checks: Sequence[str], **params: Any) -> dict[str, Any]:
    from chaoskit import Trace
    from chaoskit.checks import run_checks

    agent = Agent(middleware)
    with telemetry.capture() as cap:
        with chaoskit.episode("graded", plan=plan) as ep:
            try:
                answer = agent.invoke()
            except Exception as exc:  # the run ended on the fault: graded all the same
                answer = f"crashed: {type(exc).__name__}"
            ep.finish(answer)
    trace = Trace.from_spans(cap.spans)
    return {r.name: r for r in run_checks(trace, checks, **params)} | {"answer": answer}


def test_honors_retry_after_fails_model_retry_middleware_that_ignores_it() -> None:
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 1.0}])
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    out = _graded([retry, ChaosMiddleware()], plan, ["honors_retry_after", "bounded_model_retries"])
    assert out["answer"] == "Order 4832 is pending."
    result = out["honors_retry_after"]
    assert result.severity == "fail" and "asked to wait 1s" in result.message and len(result.evidence) == 2
    assert out["bounded_model_retries"].severity == "pass"


def test_honors_retry_after_passes_a_retry_that_waits_long_enough() -> None:
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 0.05}])
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.2, jitter=False)
    out = _graded([retry, ChaosMiddleware()], plan, ["honors_retry_after"])
    assert out["honors_retry_after"].severity == "pass", out["honors_retry_after"].message


def test_bounded_model_retries_and_no_retry_storm_catch_endless_model_retries() -> None:
    plan = Plan(faults=[{"type": "overloaded", "target": "model", "calls": "1-5"}])
    retry = ModelRetryMiddleware(max_retries=5, initial_delay=0.0, jitter=False)
    out = _graded([retry, ChaosMiddleware()], plan, ["bounded_model_retries", "no_retry_storm"], max_retries=2)
    assert out["answer"] == "Order 4832 is pending."  # the sixth call got through
    bounded = out["bounded_model_retries"]
    assert bounded.severity == "fail" and "retried 5 times in a row" in bounded.message
    assert len(bounded.evidence) == 3
    storm = out["no_retry_storm"]
    assert storm.severity == "fail" and "6 times in a row" in storm.message


def test_bounded_model_retries_cannot_grade_without_model_calls() -> None:
    out = _graded([], Plan(faults=[]), ["bounded_model_retries"])
    result = out["bounded_model_retries"]
    assert result.severity == "fail" and result.message.startswith("cannot grade")


def test_a_run_without_retry_middleware_under_a_model_fault_is_graded_not_passed_silently() -> None:
    # the hand-built-graph counterpart: no retry middleware, the rate limit ends the run
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 1.0}])
    out = _graded([ChaosMiddleware()], plan, ["honors_retry_after", "bounded_model_retries"])
    assert out["answer"] == "crashed: ModelRateLimitError"
    assert out["honors_retry_after"].severity == "pass"  # no retry, so none too soon
    assert out["bounded_model_retries"].severity == "pass"


def test_recovers_from_malformed_tool_call_fails_create_agent_that_ends_on_the_broken_turn() -> None:
    plan = Plan(faults=[{"type": "malformed_tool_call", "on_call": 1}])
    out = _graded([ChaosMiddleware()], plan, ["recovers_from_malformed_tool_call"])
    result = out["recovers_from_malformed_tool_call"]
    assert result.severity == "fail" and "never asked the model again" in result.message


def test_recovers_from_malformed_tool_call_passes_an_agent_that_sends_the_error_back() -> None:
    from langchain.agents.middleware import after_model

    @after_model(can_jump_to=["model"])
    def reask(state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not getattr(last, "invalid_tool_calls", None):
            return None
        errors = [
            ToolMessage(f"Error: arguments are not valid JSON: {c['error']}", tool_call_id=c["id"], status="error")
            for c in last.invalid_tool_calls
        ]
        # the broken calls answered as errors, as a provider's tool-call validation would; then ask again
        fixed = AIMessage(
            last.text,
            id=last.id,
            tool_calls=[
                {"name": c["name"], "args": {}, "id": c["id"], "type": "tool_call"} for c in last.invalid_tool_calls
            ],
        )
        return {"messages": [fixed, *errors], "jump_to": "model"}

    plan = Plan(faults=[{"type": "malformed_tool_call", "on_call": 1}])
    out = _graded([reask, ChaosMiddleware()], plan, ["recovers_from_malformed_tool_call"])
    result = out["recovers_from_malformed_tool_call"]
    assert result.severity == "pass", result.message
    assert "asked the model again" in result.message


def test_recovers_from_malformed_tool_call_has_nothing_to_grade_without_the_fault() -> None:
    out = _graded([ChaosMiddleware()], Plan(faults=[]), ["recovers_from_malformed_tool_call"])
    assert out["recovers_from_malformed_tool_call"].message.startswith("No malformed_tool_call fault fired")


def test_a_model_fault_that_never_reached_a_model_call_cannot_be_graded() -> None:
    # the model fault is in the plan, but nothing of chaoskit sees the model calls: no verdict may pass
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 1.0}])
    out = _graded([], plan, ["honors_retry_after", "no_retry_storm"])
    assert out["answer"] == "Order 4832 is pending."
    assert "cannot_grade" in out and not out["cannot_grade"].passed
    assert "model faults" in out["cannot_grade"].message and "honors_retry_after" not in out
    # with ChaosMiddleware on the agent, the same plan is graded
    graded = _graded([ModelRetryMiddleware(initial_delay=0.0), ChaosMiddleware()], plan, ["honors_retry_after"])
    assert "cannot_grade" not in graded and graded["honors_retry_after"].severity == "fail"


# --- a hand-built graph, with ChaosCallbackHandler(model_faults=True) -------------------------------------------


def _hand_built() -> tuple[Any, list[str]]:
    from _lc_helpers import tool_graph
    from langgraph.prebuilt import ToolNode

    ran: list[str] = []

    @tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        ran.append(order_id)
        return "pending"

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return tool_calls(("lookup", {"order_id": "4832"}), turn=1)
        return AIMessage("Order 4832 is pending.")

    return tool_graph(ScriptedChatModel(policy=policy), ToolNode([lookup])), ran


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_callback_handler_injects_model_errors_into_a_hand_built_graph(use_async: bool) -> None:
    from chaoskit_langchain import ChaosCallbackHandler

    from chaoskit import Trace
    from chaoskit.checks import run_checks

    graph, ran = _hand_built()
    handler = ChaosCallbackHandler(model_faults=True)
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 2, "retry_after": 1.0}])
    config = {"callbacks": [handler]}
    inp = {"messages": [HumanMessage("where is 4832?")]}
    with telemetry.capture() as cap, pytest.raises(ModelRateLimitError):  # no retry: the run ends on the 429
        with chaoskit.episode("hand-built", plan=plan):
            asyncio.run(graph.ainvoke(inp, config)) if use_async else graph.invoke(inp, config)
    assert ran == ["4832"]
    chats = sorted((s for s in cap.spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert [s.attributes["chaoskit.model.call"] for s in chats] == [1, 2]
    assert chats[1].attributes["chaoskit.fault.type"] == "rate_limit"
    assert chats[1].attributes["error.type"] == "ModelRateLimitError"
    results = {r.name: r for r in run_checks(Trace.from_spans(cap.spans), ["honors_retry_after", "no_bluff"])}
    assert "cannot_grade" not in results and results["honors_retry_after"].passed


def test_callback_handler_skips_completion_faults_and_says_so() -> None:
    from chaoskit_langchain import ChaosCallbackHandler

    graph, ran = _hand_built()
    plan = Plan(faults=[{"type": "empty_completion", "on_call": 1, "times": 1}])
    with telemetry.capture() as cap, pytest.warns(chaoskit.ChaosWarning, match="cannot change a model.s answer"):
        with chaoskit.episode("skip", plan=plan):
            graph.invoke({"messages": [HumanMessage("go")]}, {"callbacks": [ChaosCallbackHandler(model_faults=True)]})
    assert ran == ["4832"]  # the answer was not changed
    first = min((s for s in cap.spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert first.attributes["chaoskit.fault.skipped"] == "empty_completion"
    assert "chaoskit.fault.type" not in first.attributes
    # the case tested nothing of its fault: it cannot be graded, never passed
    from chaoskit import Trace
    from chaoskit.checks import run_checks

    results = {r.name: r for r in run_checks(Trace.from_spans(cap.spans), ["no_bluff"])}
    assert "cannot_grade" in results and "empty_completion skipped" in results["cannot_grade"].message


def test_a_malformed_tool_call_on_an_answer_without_tool_calls_is_skipped_not_recorded_as_fired() -> None:
    plan = Plan(faults=[{"type": "malformed_tool_call", "on_call": 2}])  # call 2 is the final answer: no calls
    with pytest.warns(chaoskit.ChaosWarning, match="calls no tool"):
        out = _graded([ChaosMiddleware()], plan, ["recovers_from_malformed_tool_call"])
    assert out["answer"] == "Order 4832 is pending."
    # never applied, so the episode tested nothing of it: cannot grade, and no check passes in its place
    assert "malformed_tool_call skipped" in out["cannot_grade"].message
    assert "recovers_from_malformed_tool_call" not in out


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_instrument_graph_with_model_faults_injects_into_the_model_nodes(use_async: bool) -> None:
    from chaoskit_langgraph import instrument_graph

    graph, ran = _hand_built()
    instrument_graph(graph, model_faults=True)
    plan = Plan(faults=[{"type": "overloaded", "target": "model", "on_call": 1, "status": 503}])
    inp = {"messages": [HumanMessage("where is 4832?")]}
    with telemetry.capture() as cap, pytest.raises(ModelAPIError) as err:
        with chaoskit.episode("instrumented", plan=plan):
            asyncio.run(graph.ainvoke(inp)) if use_async else graph.invoke(inp)
    assert err.value.status == 503 and ran == []
    (chat,) = [s for s in cap.spans if s.name.startswith("chat")]
    assert chat.attributes["chaoskit.fault.type"] == "overloaded"
    # without model_faults the same graph and plan run unfaulted
    graph2, ran2 = _hand_built()
    instrument_graph(graph2)
    with chaoskit.episode("plain", plan=plan):
        graph2.invoke(inp)
    assert ran2 == ["4832"]


def test_chaoskit_validate_accepts_model_faults_and_names_a_bad_field(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from chaoskit.cli import main

    good = tmp_path / "good.yaml"
    good.write_text('seed: 1\nfaults:\n  - type: overloaded\n    model: "gpt-*"\n    on_call: 2\n')
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nfaults:\n  - type: rate_limit\n    target: model\n    tool: search\n")
    assert main(["validate", str(good)]) == 0
    assert "overloaded on model gpt-* call 2" in capsys.readouterr().out
    assert main(["validate", str(bad)]) == 2
    assert f"{bad}:5: faults[0].tool: a model fault names its model" in capsys.readouterr().err


# --- cost per fault ---------------------------------------------------------------------------------------------


def _costly_agent(middleware: Sequence[Any]) -> Any:
    """A scripted agent that reports 10 input and 5 output tokens per model call, and retries `lookup` once."""

    @tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return "pending"

    def policy(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if not seen or (seen[-1].status == "error" and len(seen) < 2):
            out = tool_calls(("lookup", {"order_id": "4832"}), turn=len(seen) + 1)
        else:
            out = AIMessage("Order 4832 is pending." if seen[-1].status != "error" else "Lookup failed.")
        out.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return out

    return create_agent(ScriptedChatModel(policy=policy), tools=[lookup], middleware=list(middleware))


def test_cost_under_faults_reports_tokens_per_fault_against_a_clean_episode() -> None:
    from chaoskit import Trace
    from chaoskit.checks import run_checks

    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    plans = {
        "clean": Plan(faults=[]),
        # a tool fault (one more model turn) and a model rate limit (a failed call: no tokens)
        "faulted": Plan(
            faults=[
                {"type": "http", "tool": "lookup", "on_call": 1, "status": 503},
                {"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 0.0},
            ]
        ),
    }
    with telemetry.capture() as cap:
        for name, plan in plans.items():
            errors = ToolErrorMiddleware(on_error=lambda exc, request: f"Error: {exc}")
            agent = _costly_agent([retry, errors, ChaosMiddleware()])
            with chaoskit.episode(name, plan=plan) as ep:
                ep.finish(agent.invoke({"messages": [HumanMessage("where is 4832?")]})["messages"][-1].text)
    trace = Trace.from_spans(cap.spans)
    reported = {r.name: r for r in run_checks(trace, ["cost_under_faults"])}["cost_under_faults"]
    # clean: 2 answered calls (30 tokens); faulted: a 429, then 3 answered calls (45 tokens), 2 faults
    assert reported.passed and "+8 tokens per fault (45 for 2 fault(s))" in reported.message, reported.message
    bounded = {r.name: r for r in run_checks(trace, ["cost_under_faults"], max_tokens_per_fault=5)}
    assert bounded["cost_under_faults"].severity == "fail"
    only_clean = Trace.from_spans([s for s in cap.spans if s.context.trace_id == cap.spans[0].context.trace_id])
    alone = {r.name: r for r in run_checks(only_clean, ["cost_under_faults"])}["cost_under_faults"]
    assert alone.severity == "fail" and alone.message.startswith("cannot grade")


def test_cost_under_faults_cannot_grade_without_token_usage() -> None:
    plan = Plan(faults=[{"type": "rate_limit", "target": "model", "on_call": 1}])
    out = _graded([ModelRetryMiddleware(initial_delay=0.0), ChaosMiddleware()], plan, ["cost_under_faults"])
    assert out["cost_under_faults"].severity == "fail" and "cannot grade" in out["cost_under_faults"].message


def test_model_faults_build_in_python() -> None:
    from chaoskit import faults

    plan = Plan(
        faults=[
            faults.Overloaded(model="gpt-*", on_call=1, status=503),
            faults.RateLimit(target="model", retry_after=2),
            faults.Truncated(keep=0.25),
            faults.UnknownToolCall(name="wipe_disk"),
        ]
    )
    assert [f.target for f in plan.faults] == ["model"] * 4
    assert [i for i, _ in plan.model_rules("gpt-4o").candidates] == [0, 1, 2, 3]
    assert set(faults.MODEL_TYPES) == {
        "rate_limit", "overloaded", "http", "timeout", "empty_completion", "truncated",
        "malformed_tool_call", "unknown_tool_call", "refusal", "latency",
    }  # fmt: skip
