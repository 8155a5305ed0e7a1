"""No green verdict without evidence (issue 23): an episode chaos did not reach cannot be graded.

Real agents driven by a scripted chat model: a hand-built LangGraph ``StateGraph`` + ``ToolNode``,
``langchain.agents.create_agent``, deepagents' subagents (when the package is installed), and a plain Python agent
with ``@chaos`` tools. In each, a tool the plan's faults name runs without going through chaoskit. The Python
API (``run_checks``, ``score``), ``chaoskit check`` (exit 2) and ``chaoskit run`` (a failed episode) must all
say "cannot grade", naming the tools; the same agents with every tool attached still grade as before."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import tool_graph
from chaoskit_langchain import ChaosMiddleware, StepRecorder, chaos_tools
from chaoskit_langgraph import instrument_graph
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode

import chaoskit
from chaoskit import Plan, Trace, chaos, score, telemetry
from chaoskit.checks import DEFAULT_CHECKS, run_checks
from chaoskit.cli._main import main
from examples.support.model import ScriptedChatModel, tool_calls

pytestmark = pytest.mark.filterwarnings("ignore::chaoskit.ChaosWarning")

#: the name of the one result an episode that cannot be graded gets (``chaoskit.checks.CANNOT_GRADE``)
CANNOT_GRADE = "cannot_grade"

REFUNDS: list[str] = []


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    REFUNDS.append(order_id)
    return f"refunded {order_id}"


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return json.dumps({"order_id": order_id, "status": "delivered", "amount": 25})


def lookup_then_refund(messages: Sequence[BaseMessage]) -> AIMessage:
    """The model: look the order up, refund it, then say so."""
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if not seen:
        return tool_calls(("lookup_order", {"order_id": "4832"}), turn=1)
    if len(seen) == 1:
        return tool_calls(("issue_refund", {"order_id": "4832"}), turn=2)
    return AIMessage("Refund issued for order 4832.")


#: a fault on the refund only, and one on each tool (latency of 0 s: the agent's run is the same, the fault fires)
ON_REFUND = Plan.from_dict(
    {"seed": 3, "faults": [{"type": "latency", "tool": "issue_refund", "on_call": 1, "delay_s": 0.0}]}
)
ON_BOTH = Plan.from_dict(
    {
        "seed": 3,
        "faults": [
            {"type": "latency", "tool": "lookup_order", "on_call": 1, "delay_s": 0.0},
            {"type": "latency", "tool": "issue_refund", "on_call": 1, "delay_s": 0.0},
        ],
    }
)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    REFUNDS.clear()


def run_graph(graph: Any, plan: Plan, config: Any = None) -> tuple[Trace, dict[str, Any]]:
    """One episode of ``graph`` under ``plan``: the trace read from its spans, and the spans as OTLP-JSON."""
    with telemetry.capture() as cap:
        with chaoskit.episode("refund", plan=plan) as ep:
            out = graph.invoke({"messages": [HumanMessage("Refund order 4832")]}, config)
            ep.finish(out["messages"][-1].text)
        return Trace.from_spans(cap.spans), telemetry.to_otlp_json(cap.spans)


def check_file(tmp_path: Path, doc: dict[str, Any], *args: str) -> int:
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    return main(["check", str(path), *args])


def the_gap(trace: Trace) -> str:
    """The one result run_checks gives: cannot_grade, failed; its message."""
    results = run_checks(trace)
    assert [(r.name, r.passed, r.severity) for r in results] == [(CANNOT_GRADE, False, "fail")], results
    assert results[0].message.startswith("cannot grade: ")
    return results[0].message


# --- nothing went through chaoskit ---------------------------------------------------------------------------


def test_unattached_langgraph_agent_cannot_be_graded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 23, item 2: a plan with a fault, a tool call that never reached chaoskit, a final answer: was 100/exit 0
    graph = tool_graph(ScriptedChatModel(policy=lookup_then_refund), ToolNode([lookup_order, issue_refund]))
    trace, doc = run_graph(graph, ON_REFUND)
    assert REFUNDS == ["4832"] and trace.attempts == []  # the refund really ran, and no attempt was recorded
    message = the_gap(trace)
    assert "the plan's faults name issue_refund, but no attempt of it went through chaoskit" in message
    assert "instrument_graph" in message and "docs/langchain.md" in message
    sc = score(trace)
    assert sc.value == 0.0 and all("cannot grade" in p.detail for p in sc.parts)

    assert check_file(tmp_path, doc) == 2
    captured = capsys.readouterr()
    assert "chaoskit: cannot grade: " in captured.err and "episode refund" in captured.err
    assert "issue_refund" in captured.err and "CANNOT GRADE" in captured.out.splitlines()[-1]
    assert check_file(tmp_path, doc, "--json") == 2
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    (why,) = report["cannot_grade"]
    assert why.startswith(f"{tmp_path / 'trace.jsonl'}: episode refund (id ") and "issue_refund" in why
    assert [c["name"] for c in report["episodes"][0]["checks"]] == [CANNOT_GRADE]
    assert report["episodes"][0]["score"]["value"] == 0.0


def test_the_same_agent_instrumented_grades_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # no new false "cannot grade": with every tool attached, the episode is graded (and this one passes)
    graph = tool_graph(ScriptedChatModel(policy=lookup_then_refund), ToolNode([lookup_order, issue_refund]))
    trace, doc = run_graph(instrument_graph(graph), ON_BOTH)
    assert REFUNDS == ["4832"]
    assert {a.tool for a in trace.attempts} == {"lookup_order", "issue_refund"}
    assert json.loads(trace.episodes[0].attributes["chaoskit.episode.tool_calls"]) == {
        "issue_refund": 1,
        "lookup_order": 1,
    }
    results = run_checks(trace)
    assert CANNOT_GRADE not in {r.name for r in results} and len(results) == len(DEFAULT_CHECKS)
    assert check_file(tmp_path, doc) in (0, 1)
    assert "cannot grade" not in capsys.readouterr().err
    assert check_file(tmp_path, doc, "--json") in (0, 1)
    assert "cannot_grade" not in json.loads(capsys.readouterr().out)


# --- some tools went through chaoskit, the model's steps show others ran without it ----------------------------


def test_model_steps_show_a_planned_tool_ran_without_chaoskit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # create_agent with the lookup wrapped and the refund not; the steps (recorded without content capture) name it
    from langchain.agents import create_agent

    agent = create_agent(ScriptedChatModel(policy=lookup_then_refund), [*chaos_tools([lookup_order]), issue_refund])
    trace, doc = run_graph(agent, ON_BOTH, {"callbacks": [StepRecorder(capture_content=False)]})
    assert REFUNDS == ["4832"] and [a.tool for a in trace.attempts] == ["lookup_order"]
    message = the_gap(trace)
    assert "the model asked for tools the plan's faults target, issue_refund (once)" in message
    assert "while only lookup_order did" in message and "ran without chaoskit" in message
    assert check_file(tmp_path, doc) == 2
    assert "issue_refund (once)" in capsys.readouterr().err

    # without the steps there is no evidence that the refund ran: the lookup's attempts are all there is
    REFUNDS.clear()
    trace, _ = run_graph(agent, ON_BOTH)
    assert REFUNDS == ["4832"] and "chaoskit.episode.tool_calls" not in trace.episodes[0].attributes
    assert CANNOT_GRADE not in {r.name for r in run_checks(trace)}


def test_a_tool_the_plan_does_not_name_may_run_without_chaoskit() -> None:
    # only tools the faults target count: an unwrapped helper the plan leaves alone does not void the verdict
    agent_tools = [*chaos_tools([issue_refund]), lookup_order]
    graph = tool_graph(ScriptedChatModel(policy=lookup_then_refund), ToolNode(agent_tools))
    trace, _ = run_graph(graph, ON_REFUND, {"callbacks": [StepRecorder()]})
    assert [a.tool for a in trace.attempts] == ["issue_refund"]
    assert json.loads(trace.episodes[0].attributes["chaoskit.episode.tool_calls"])["lookup_order"] == 1
    assert CANNOT_GRADE not in {r.name for r in run_checks(trace)}
    assert score(trace).value > 0


def test_plain_python_agent_with_chaos_tools_and_recorded_steps() -> None:
    # the core alone: @chaos tools, the agent's own loop recording its model steps with Episode.step
    @chaos
    def search(query: str) -> list[str]:
        return ["kettle"]

    def refund(order_id: str) -> str:  # never wrapped
        REFUNDS.append(order_id)
        return "ok"

    plan = Plan.from_dict({"faults": [{"type": "http", "tool": "*", "status": 503, "on_call": 5}]})
    with telemetry.capture() as cap:
        with chaoskit.episode("plain", plan=plan) as ep:
            ep.step(tool_calls=[{"name": "refund", "arguments": {"order_id": "1"}, "id": "c1"}])
            refund("1")
            ep.finish("Refunded.")
    message = the_gap(Trace.from_spans(cap.spans))
    # a plan that names no tool (``*``): no attempt at all while the model asked for refund
    assert "the model asked for tools, refund (once), and not one of those calls went through chaoskit" in message

    with telemetry.capture() as cap:
        with chaoskit.episode("plain", plan=plan) as ep:
            ep.step(tool_calls=[{"name": "search", "arguments": {"query": "k"}}])
            search("k")
            ep.finish("Found a kettle.")
    assert CANNOT_GRADE not in {r.name for r in run_checks(Trace.from_spans(cap.spans))}


def test_several_episodes_one_unreached_is_exit_2_also_in_parallel_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def graph() -> Any:
        return tool_graph(ScriptedChatModel(policy=lookup_then_refund), ToolNode([lookup_order, issue_refund]))

    docs = [run_graph(instrument_graph(graph()), ON_REFUND)[1] for _ in range(3)]
    docs.insert(1, run_graph(graph(), ON_REFUND)[1])  # instrument_graph attaches to the graph itself: a new one
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    for workers in ("1", "2"):
        assert main(["check", str(path), "--workers", workers]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("chaoskit: cannot grade: ") == 1, captured.err
        assert captured.out.count("episode refund ") == 4


# --- deepagents: a subagent's tool runs inside the `task` tool ------------------------------------------------


def subagent_policy(messages: Sequence[BaseMessage]) -> AIMessage:
    """The top agent looks the order up and hands the refund to the `refunds` subagent, which refunds twice."""
    first = next(m for m in messages if isinstance(m, HumanMessage))
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if first.text.startswith("SUB"):
        if len(seen) < 2:
            return tool_calls(("issue_refund", {"order_id": "4832"}), turn=10 + len(seen))
        return AIMessage("refunded 4832")
    if not seen:
        return tool_calls(("lookup_order", {"order_id": "4832"}), turn=1)
    if len(seen) == 1:
        return tool_calls(("task", {"description": "SUB refund order 4832", "subagent_type": "refunds"}), turn=2)
    return AIMessage("Refund issued for order 4832.")


def test_deepagents_subagent_refunding_twice_is_not_green(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deepagents = pytest.importorskip("deepagents", reason="deepagents is not installed (pip install deepagents)")
    model = ScriptedChatModel(policy=subagent_policy)
    refunds = {"name": "refunds", "description": "issues refunds", "system_prompt": "Refund.", "tools": [issue_refund]}
    agent = deepagents.create_deep_agent(
        model=model, tools=[lookup_order], middleware=[ChaosMiddleware()], subagents=[{**refunds, "model": model}]
    )
    # ChaosMiddleware reaches the top agent's tools only; the inherited StepRecorder records the subagent's steps
    trace, doc = run_graph(agent, ON_BOTH, {"callbacks": [StepRecorder()]})
    assert REFUNDS == ["4832", "4832"]
    assert sorted(a.tool for a in trace.attempts) == ["lookup_order", "task"]
    message = the_gap(trace)
    assert "issue_refund (2 times)" in message and "ran without chaoskit" in message
    assert "subagent" in message and "ChaosCallbackHandler" in message
    assert check_file(tmp_path, doc) == 2
    assert "issue_refund (2 times)" in capsys.readouterr().err


# --- chaoskit run ---------------------------------------------------------------------------------------------

BATTERY = """\
name: refund-unreached
task: "Refund order 4832"
faults:
  - {type: latency, tool: issue_refund, on_call: 1, delay_s: 0}
success:
  output_contains: ["refund"]
"""


def unreached_refund_agent() -> Any:
    """A LangGraph agent whose lookup goes through chaoskit and whose refund does not."""
    model = ScriptedChatModel(policy=lookup_then_refund, callbacks=[StepRecorder()])
    return tool_graph(model, ToolNode([*chaos_tools([lookup_order]), issue_refund]))


def reached_refund_agent() -> Any:
    """The same agent with both tools attached."""
    model = ScriptedChatModel(policy=lookup_then_refund, callbacks=[StepRecorder()])
    return tool_graph(model, ToolNode(chaos_tools([lookup_order, issue_refund])))


def test_chaoskit_run_fails_an_episode_chaos_did_not_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parent)
    scenario = tmp_path / "refund.yaml"
    scenario.write_text(BATTERY)
    out = tmp_path / "results.json"
    agents = "test_grading_evidence:reached_refund_agent,test_grading_evidence:unreached_refund_agent"
    # every episode has attempts and the refund appears in the battery's traces: the runner's older rules (no
    # tool attempt in any episode, a fault on a tool no episode met) do not fire; the unreached episode's own does
    assert main(["run", str(scenario), "--agents", agents, "--json", str(out), "-q"]) == 1
    printed = capsys.readouterr().out
    assert (
        "verdict: FAIL: 1 episode(s) could not be graded (first: refund-unreached [unreached_refund_agent]" in printed
    )
    reached, unreached = json.loads(out.read_text())["episodes"]
    assert reached["passed"] is True and CANNOT_GRADE not in {c["name"] for c in reached["checks"]}
    assert reached["attempts"]["by_tool"] == {"lookup_order": 1, "issue_refund": 1}
    assert unreached["passed"] is False and unreached["score"] == 0.0
    assert unreached["attempts"]["by_tool"] == {"lookup_order": 1}
    gap = next(c for c in unreached["checks"] if c["name"] == CANNOT_GRADE)
    assert gap["passed"] is False and "issue_refund (once)" in gap["message"] and "instrument_graph" in gap["message"]

    # an expected-outcome table cannot count it as an expected failure: it tested nothing
    table = tmp_path / "expected.yaml"
    table.write_text("expect:\n  refund-unreached:\n    reached_refund_agent: pass\n    unreached_refund_agent: fail\n")
    assert main(["run", str(scenario), "--agents", agents, "--expect", str(table), "--json", str(out), "-q"]) == 1
    (unexpected,) = json.loads(out.read_text())["verdict"]["expectations"]["unexpected"]
    assert unexpected["agent"].endswith("unreached_refund_agent") and "cannot_grade" in unexpected["detail"]

    # the reached agent alone: a green run, as before
    agent = "test_grading_evidence:reached_refund_agent"
    assert main(["run", str(scenario), "--agent", agent, "--json", str(out), "-q"]) == 0


def test_selector_rule_is_the_plan_layers() -> None:
    from chaoskit import checks
    from chaoskit.grading._evidence import selector_matches
    from chaoskit.plan._triggers import tool_matches

    assert checks.CANNOT_GRADE == CANNOT_GRADE
    for selector in [("issue_refund",), ("*",), ("refund_*",), ("a", "b?"), ("[rs]earch",)]:
        for tool_name in ["issue_refund", "refund_card", "a", "bb", "b", "search", "research", "x"]:
            assert selector_matches(selector, tool_name) == tool_matches(selector, tool_name)


def test_a_plan_cut_on_the_root_span_is_read_in_part() -> None:
    # a plan of 400 faults is cut on the root span to its first ones; a tool named only past the cut is not
    # known, so "no attempt of any named tool" cannot be decided and must not void a run that reached it
    faults: list[dict[str, Any]] = [
        {"type": "latency", "tool": f"tool_{i}", "on_call": 9, "delay_s": 0.0} for i in range(400)
    ]
    plan = Plan.from_dict({"faults": [*faults, {"type": "latency", "tool": "search", "on_call": 1, "delay_s": 0.0}]})

    @chaos
    def search(query: str) -> list[str]:
        return ["kettle"]

    with telemetry.capture() as cap:
        with chaoskit.episode("long-plan", plan=plan) as ep:
            search("k")
            ep.finish("Found a kettle.")
    trace = Trace.from_spans(cap.spans)
    assert "…[+" in trace.episodes[0].attributes["chaoskit.plan"]
    assert CANNOT_GRADE not in {r.name for r in run_checks(trace)}
    # what it does read still counts: tool_0, named before the cut, asked for and never attempted
    with telemetry.capture() as cap:
        with chaoskit.episode("long-plan", plan=plan) as ep:
            ep.step(tool_calls=[{"name": "tool_0", "arguments": {}}])
            search("k")
            ep.finish("Found a kettle.")
    assert "tool_0 (once)" in the_gap(Trace.from_spans(cap.spans))
