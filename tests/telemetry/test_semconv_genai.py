"""The GenAI semantic conventions on chaoskit's spans (issue 27, part 1): the standard attributes are written, the
``OTEL_SEMCONV_STABILITY_OPT_IN`` switch drops the deprecated shapes, and traces of either shape, or of the
previous release, read and grade alike."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import chaoskit
import chaoskit.semconv as sc
from chaoskit import Trace, telemetry
from chaoskit.grading.checks import run_checks
from chaoskit.testing import attempt_attributes, capture_spans

DATA = Path(__file__).resolve().parents[1] / "data" / "semconv_prev"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "semconv.md"


def _generator() -> Any:
    # the agent and tools the previous release's fixture was written with (tests/data/semconv_prev/generate.py)
    spec = importlib.util.spec_from_file_location("semconv_prev_generate", DATA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _latest(monkeypatch: pytest.MonkeyPatch, value: str = "http,gen_ai_latest_experimental") -> None:
    monkeypatch.setenv(sc.SEMCONV_OPT_IN_ENV, value)
    chaoskit.reset()  # the settings read the environment again


def _run_agent() -> tuple[ReadableSpan, ...]:
    chaoskit.configure(record_results=True)
    with telemetry.capture() as cap:
        with chaoskit.episode("refund-and-cancel", plan=GEN.PLAN, task="Refund order 4832 and cancel it") as ep:
            ep.finish(GEN._agent(), success=True)
        with pytest.raises(ConnectionResetError), chaoskit.episode("crashes", plan=GEN.PLAN):
            GEN.lookup("4832")
    return cap.spans


def _graded(trace: Trace, *, messages: bool = True) -> dict[str, Any]:
    """What the readers and the checks make of a trace, without what differs run to run (times, ids)."""
    # redacted_digests: keyed by a random per-episode salt (issue 32), and absent from earlier traces
    varying = {"start_time", "end_time", "span_id", "trace_id", "episode_id", "redacted_digests"}

    def attempt(a: Any) -> dict[str, Any]:
        record = json.loads(json.dumps(dataclasses.asdict(a), sort_keys=True, default=str))
        return {k: v for k, v in record.items() if k not in varying}

    checks = [r.to_dict() for r in run_checks(trace)]
    return {
        "episodes": [
            {"name": e.name, "outcome": e.outcome, "error": e.error, "attempts": [attempt(a) for a in e.attempts]}
            for e in trace.episodes
        ],
        "checks": [
            {"name": c["name"], "passed": c["passed"], **({"message": _no_ids(c["message"])} if messages else {})}
            for c in checks
        ],
    }


def _no_ids(text: str) -> str:
    return re.sub(r"\b[0-9a-f]{16,32}\b", "<id>", text)


# --- traces written by the previous release ---------------------------------------------------------------


def test_a_trace_of_the_previous_release_reads_and_grades_as_it_did() -> None:
    """tests/data/semconv_prev holds a trace in the old shape (exception events, chaoskit.args only, results on
    refused attempts) and what that release read and graded from it: today's readers agree."""
    recorded = json.loads((DATA / "graded.json").read_text())
    old = Trace.load(DATA / "trace.jsonl")
    now = _graded(old, messages=False)
    # redacted_digests: keyed by a random per-episode salt (issue 32), and absent from earlier traces
    varying = {"start_time", "end_time", "span_id", "trace_id", "episode_id", "redacted_digests"}
    expected_episodes = [
        {**e, "attempts": [{k: v for k, v in a.items() if k not in varying} for a in e["attempts"]]}
        for e in recorded["episodes"]
    ]
    assert now["episodes"] == expected_episodes
    # the checks that release ran (default checks added since are graded too, and not compared here)
    then = {c["name"] for c in recorded["checks"]}
    assert [c for c in now["checks"] if c["name"] in then] == [
        {"name": c["name"], "passed": c["passed"]} for c in recorded["checks"]
    ]
    # the fixture exercises what changed: an error message only in the exception event, a refused result
    attempts = {(a["tool"], a["attempt"]): a for e in now["episodes"] for a in e["attempts"]}
    assert attempts[("lookup", 3)]["error_message"] == "no such order 99"
    assert "already shipped" in attempts[("cancel_order", 1)]["result"]
    assert attempts[("slow", 1)]["outcome"] == "cancelled"


def test_default_and_latest_conventions_grade_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    default = _graded(Trace.from_spans(_run_agent()))
    _latest(monkeypatch)
    latest_spans = _run_agent()
    assert not any(ev.name == sc.EXCEPTION_EVENT for s in latest_spans for ev in s.events)
    latest = _graded(Trace.from_spans(latest_spans))
    assert latest == default
    # a real grading: some checks fail, others pass, on the same messages
    assert {c["passed"] for c in default["checks"]} == {True, False}


def test_latest_shape_reads_back_from_otlp_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _latest(monkeypatch)
    spans = _run_agent()
    path = tmp_path / "latest.jsonl"
    exporter = telemetry.JsonLinesSpanExporter(path)
    exporter.export(spans)
    exporter.shutdown()
    from_file = Trace.load(path)
    assert from_file == Trace.from_spans(spans)
    attempts = {(a.tool, a.attempt): a for a in from_file.attempts}
    assert attempts[("lookup", 3)].error_message == "no such order 99"
    assert attempts[("lookup", 1)].error_message == "[Errno 104] Connection reset by peer while calling lookup"
    assert attempts[("issue_refund", 1)].args == {
        "amount": 25.0,
        "api_key": "[REDACTED]",
        "key": "rf-1",
        "order_id": "4832",
    }
    assert "already shipped" in (attempts[("cancel_order", 1)].result or "")


# --- what an attempt span carries ---------------------------------------------------------------------------


def test_default_shape_writes_the_standard_names_beside_the_old(monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _run_agent()
    root = next(s for s in spans if s.name.startswith(sc.OP_INVOKE_AGENT) and "refund" in s.name)
    first_id = root.attributes[sc.EPISODE_ID]  # type: ignore[index]
    mine = [s for s in spans if (s.attributes or {}).get(sc.EPISODE_ID) == first_id and s is not root]
    calls = {(s.attributes[sc.GEN_AI_TOOL_NAME], s.attributes[sc.ATTEMPT]): s for s in mine}  # type: ignore[index]
    refund = dict(calls[("issue_refund", 1)].attributes or {})
    # the arguments under the standard name, redacted and canonical as chaoskit.args, which is kept
    assert refund[sc.GEN_AI_TOOL_CALL_ARGUMENTS] == refund[sc.ARGS]
    assert json.loads(refund[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["api_key"] == "[REDACTED]"
    assert "sk-secret" not in refund[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
    # a failed attempt: no result; the exception in the exception event (the release's shape)
    assert sc.GEN_AI_TOOL_CALL_RESULT not in refund
    assert [ev.name for ev in calls[("issue_refund", 1)].events].count(sc.EXCEPTION_EVENT) == 1
    # a successful attempt has its result
    assert json.loads(calls[("issue_refund", 2)].attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == {  # type: ignore[index, arg-type]
        "amount": 25.0,
        "refunded": "4832",
    }
    # a refused one (the tool returned its error): no gen_ai.tool.call.result, the value under its own name
    refused = dict(calls[("cancel_order", 1)].attributes or {})
    assert sc.GEN_AI_TOOL_CALL_RESULT not in refused
    assert "already shipped" in refused[sc.TOOL_REFUSAL] and refused[sc.TOOL_REFUSED] is True
    # a cancelled attempt: error.type with an ERROR status, as the conventions tie them
    cancelled = calls[("slow", 1)]
    assert cancelled.attributes[sc.ERROR_TYPE] == "CancelledError"  # type: ignore[index]
    assert cancelled.attributes[sc.OUTCOME] == sc.OUTCOME_CANCELLED  # type: ignore[index]
    assert cancelled.status.status_code is StatusCode.ERROR
    # no agent name given: the root keeps the earlier shape (the scenario's name) by default
    assert root.name == "invoke_agent refund-and-cancel"
    assert root.attributes[sc.GEN_AI_AGENT_NAME] == "refund-and-cancel"  # type: ignore[index]
    assert sc.GEN_AI_AGENT_NAME not in refund


def test_latest_shape_drops_the_deprecated_names(monkeypatch: pytest.MonkeyPatch) -> None:
    _latest(monkeypatch, "gen_ai_latest_experimental")
    spans = _run_agent()
    attempts = [dict(s.attributes or {}) for s in spans if s.name.startswith(sc.OP_EXECUTE_TOOL + " ")]
    assert attempts and all(sc.ARGS not in a for a in attempts)
    assert all(sc.GEN_AI_TOOL_CALL_ARGUMENTS in a and sc.ARGS_HASH in a for a in attempts)
    assert not [ev.name for s in spans for ev in s.events if ev.name == sc.EXCEPTION_EVENT]
    failed = [a for a in attempts if a.get(sc.ERROR_TYPE) == "ValueError"]
    assert failed and failed[0][sc.EXCEPTION_TYPE] == "ValueError"
    assert failed[0][sc.EXCEPTION_MESSAGE] == "no such order 99"
    roots = [s for s in spans if s.name.startswith(sc.OP_INVOKE_AGENT)]
    # no agent name known: the span is ``invoke_agent``, without the scenario's name in its place
    assert [r.name for r in roots] == ["invoke_agent", "invoke_agent"]
    assert all(sc.GEN_AI_AGENT_NAME not in (r.attributes or {}) for r in roots)
    crashed = next(r for r in roots if (r.attributes or {}).get(sc.SCENARIO) == "crashes")
    assert crashed.attributes[sc.EXCEPTION_TYPE] == "ConnectionResetError"  # type: ignore[index]
    assert crashed.status.status_code is StatusCode.ERROR


def test_the_opt_in_value_must_be_in_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    _latest(monkeypatch, "http,database")
    spans = _run_agent()
    attempts = [dict(s.attributes or {}) for s in spans if s.name.startswith(sc.OP_EXECUTE_TOOL + " ")]
    assert attempts and all(sc.ARGS in a for a in attempts)


# --- agent and conversation ----------------------------------------------------------------------------------


def test_agent_name_and_conversation_on_the_episode_and_its_attempts() -> None:
    with capture_spans() as cap:
        with chaoskit.episode("refund", agent_name="support-bot", conversation_id="thread-7"):
            GEN.search("kettle")
    (root,) = [s for s in cap.spans if s.name.startswith(sc.OP_INVOKE_AGENT)]
    assert root.name == "invoke_agent support-bot"
    assert root.attributes[sc.GEN_AI_AGENT_NAME] == "support-bot"  # type: ignore[index]
    assert root.attributes[sc.GEN_AI_CONVERSATION_ID] == "thread-7"  # type: ignore[index]
    assert root.attributes[sc.SCENARIO] == "refund"  # type: ignore[index]
    (attempt,) = attempt_attributes(cap)
    assert attempt[sc.GEN_AI_AGENT_NAME] == "support-bot" and attempt[sc.GEN_AI_CONVERSATION_ID] == "thread-7"
    assert [e.name for e in cap.trace().episodes] == ["refund"]  # the readers still name it by its scenario


def test_identify_names_the_agent_once_known() -> None:
    with capture_spans() as cap:
        with chaoskit.episode("refund") as ep:
            GEN.search("before")
            ep.identify(agent_name="support-bot")
            ep.identify(agent_name="someone-else")  # the first name given stays
            GEN.search("after")
    (root,) = [s for s in cap.spans if s.name.startswith(sc.OP_INVOKE_AGENT)]
    assert root.name == "invoke_agent support-bot" and root.attributes[sc.GEN_AI_AGENT_NAME] == "support-bot"  # type: ignore[index]
    before, after = attempt_attributes(cap)
    assert sc.GEN_AI_AGENT_NAME not in before and after[sc.GEN_AI_AGENT_NAME] == "support-bot"


@pytest.mark.parametrize("bad", ["", 3])
def test_bad_agent_name_is_refused(bad: Any) -> None:
    with pytest.raises(chaoskit.ConfigError, match="agent_name"):
        chaoskit.episode("x", agent_name=bad)


def test_runner_names_the_agent_it_built() -> None:
    from chaoskit.runner._episode_runner import agent_name

    class Graph:
        name = "travel_agent"

    class Unnamed:
        name = "LangGraph"  # what LangGraph calls every graph compiled without a name

    assert agent_name(Graph(), "examples.travel.agents:careful") == "travel_agent"
    assert agent_name(Unnamed(), "examples.travel.agents:careful") == "careful"
    assert agent_name(object(), "agent_module") == "agent_module"


# --- the documentation -------------------------------------------------------------------------------------


def test_semconv_md_lists_every_name_in_semconv_py() -> None:
    text = DOCS.read_text()
    names = [n for n in vars(sc) if n.isupper() and isinstance(getattr(sc, n), str)]
    missing = [n for n in names if f"`{n}`" not in text]
    assert not missing, f"docs/semconv.md does not list: {missing}"
    for n in names:
        value = getattr(sc, n)
        assert value.strip() in text, f"docs/semconv.md does not give {n}'s value {value!r}"
    assert re.search(r"semantic-conventions-genai@[0-9a-f]{7,40}", text), "the conventions' version is not pinned"


def test_battery_runner_names_each_episode_s_agent(tmp_path: Path) -> None:
    from chaoskit.runner import run_battery

    traces = tmp_path / "traces.jsonl"
    scenario = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "refund-after-500.yaml"
    result = run_battery([scenario], traces=traces, progress=False)
    spans = [
        span
        for line in traces.read_text(encoding="utf-8").splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    attrs = [{a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans]
    roots = [(s, a) for s, a in zip(spans, attrs, strict=True) if s["name"].startswith(sc.OP_INVOKE_AGENT)]
    assert len(roots) == len(result.episodes) > 0
    for span, root in roots:
        # the application's agent (the factory of examples.plain.agents:careful), not the scenario's name
        assert root[sc.GEN_AI_AGENT_NAME] == "careful" != root[sc.SCENARIO]
        assert span["name"] == "invoke_agent careful"
    tool_spans = [a for s, a in zip(spans, attrs, strict=True) if s["name"].startswith(sc.OP_EXECUTE_TOOL + " ")]
    assert tool_spans and all(a[sc.GEN_AI_AGENT_NAME] == "careful" for a in tool_spans)
