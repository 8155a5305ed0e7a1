"""Span shape, for the people looking at a chaos run in a trace view: the service it is filed under, each fault
visible at a glance (status, description, event, ``error.type``), attempt numbers, GenAI span names, and the
episode's own facts on its root span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

import chaoskit
import chaoskit.semconv as sc
from chaoskit import Plan, chaos, telemetry
from chaoskit.traces._trace import Trace

ROOT = Path(__file__).resolve().parents[2]


@chaos
def fetch(q: str) -> dict[str, Any]:
    return {"items": [{"id": 1, "q": q}, {"id": 2}, {"id": 3}, {"id": 4}], "total": 4}


@chaos(irreversible=True)
def book(ref: str) -> dict[str, Any]:
    return {"booked": ref}


def _run(plan: Plan, calls: int, tool: Any = fetch) -> list[Any]:
    with telemetry.capture() as cap:
        with chaoskit.episode("shape", plan=plan) as ep:
            for i in range(calls):
                try:
                    tool(f"q{i}")
                except Exception:
                    pass
            ep.finish("done")
    return cap.attempt_spans()


def _fault_events(span: Any) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == sc.FAULT_EVENT]


def test_an_injected_http_fault_is_an_error_named_by_its_description_event_and_error_type() -> None:
    plan = Plan(seed=1, faults=[{"type": "rate_limit", "tool": "fetch", "on_call": 1, "retry_after": 2}])
    first, second = _run(plan, 2)
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "injected: rate_limit 429 (retry_after=2s)"
    assert first.attributes[sc.ERROR_TYPE] == "ToolHTTPError"
    (event,) = _fault_events(first)
    assert event[sc.FAULT_TYPE] == "rate_limit" and event[sc.FAULT_INDEX] == 0
    assert event[sc.FAULT_HTTP_STATUS] == 429 and event[sc.FAULT_RETRY_AFTER] == 2.0
    assert event[sc.FAULT_SUMMARY] == "rate_limit 429 (retry_after=2s)"
    # the retry that went through: no fault, no error, no event
    assert second.status.status_code is StatusCode.UNSET and not _fault_events(second)
    assert sc.ERROR_TYPE not in second.attributes


@pytest.mark.parametrize(
    ("fault", "description"),
    [
        ({"type": "http", "status": 503}, "injected: http 503"),
        ({"type": "http", "status": 500, "after_write": True}, "injected: http 500 (after_write)"),
        ({"type": "error", "exception": "ConnectionResetError"}, "injected: error (exception=ConnectionResetError)"),
        ({"type": "timeout", "after_s": 0.01}, "injected: timeout (after_s=0.01s)"),
        ({"type": "auth_expired"}, "injected: auth_expired 401"),
    ],
)
def test_every_raising_fault_names_itself_in_the_status(fault: dict[str, Any], description: str) -> None:
    (span,) = _run(Plan(seed=1, faults=[{**fault, "tool": "book", "on_call": 1}]), 1, book)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == description
    assert span.attributes[sc.ERROR_TYPE] and span.attributes[sc.FAULT_INJECTED] is True
    (event,) = _fault_events(span)
    assert event[sc.FAULT_TYPE] == fault["type"] and event[sc.FAULT_SUMMARY] == description.removeprefix("injected: ")


def test_an_attempt_that_succeeds_after_injected_latency_is_not_an_error_and_has_the_event() -> None:
    (span,) = _run(Plan(seed=1, faults=[{"type": "latency", "tool": "fetch", "delay_s": 0.01}]), 1)
    assert span.status.status_code is not StatusCode.ERROR
    assert span.attributes[sc.OUTCOME] == sc.OUTCOME_OK and sc.ERROR_TYPE not in span.attributes
    (event,) = _fault_events(span)
    assert event[sc.FAULT_TYPE] == "latency" and event["chaoskit.fault.delay_s"] == 0.01


@pytest.mark.parametrize(
    "fault",
    [
        {"type": "empty"},
        {"type": "partial", "keep": 0.5},
        {"type": "garbage"},
        {"type": "schema_drift", "rename": {"total": "count"}},
        {"type": "stale_state", "set": {"total": 0}},
        {"type": "prompt_injection", "asks_for": ["send_email"]},
    ],
)
def test_a_data_fault_leaves_a_successful_call_with_the_event(fault: dict[str, Any]) -> None:
    (span,) = _run(Plan(seed=1, faults=[{**fault, "tool": "fetch"}]), 1)
    # the tool "succeeded" from the caller's side: not an error, marked by the event and the fault attributes
    assert span.status.status_code is not StatusCode.ERROR
    assert sc.ERROR_TYPE not in span.attributes
    assert span.attributes[sc.FAULT_TYPE] == fault["type"]
    (event,) = _fault_events(span)
    assert event[sc.FAULT_TYPE] == fault["type"] and event[sc.FAULT_SUMMARY].startswith(fault["type"])


def test_no_fault_means_no_event_and_attempts_are_numbered_under_genai_span_names() -> None:
    plan = Plan(seed=1, faults=[{"type": "http", "tool": "fetch", "on_call": 2, "status": 503}])
    spans = _run(plan, 3)
    assert [s.name for s in spans] == ["execute_tool fetch"] * 3
    assert [s.attributes[sc.ATTEMPT] for s in spans] == [1, 2, 3]
    assert [bool(_fault_events(s)) for s in spans] == [False, True, False]
    assert {s.attributes[sc.GEN_AI_OPERATION_NAME] for s in spans} == {sc.OP_EXECUTE_TOOL}


def test_the_fault_status_does_not_change_what_grading_reads() -> None:
    plan = Plan(seed=1, faults=[{"type": "http", "tool": "book", "on_call": 1, "status": 500}])
    with telemetry.capture() as cap:
        with chaoskit.episode("grade", plan=plan) as ep:
            with pytest.raises(chaoskit.ToolHTTPError) as raised:
                book("R-1")
            book("R-1")
            ep.finish("booked")
    attempt = Trace.from_spans(cap.spans).episodes[0].attempts[0]
    # the error message still comes from the exception itself, not from the "injected: ..." description
    assert attempt.error_message == str(raised.value)
    assert attempt.injected and attempt.fault_type == "http"


def test_an_episode_kept_open_is_graded_from_its_snapshot_and_closed_with_the_verdict() -> None:
    with telemetry.capture() as cap:
        with chaoskit.episode("held", agent="pkg.agents:careful", seed=7) as ep:
            ep.keep_open()
            fetch("a")
            ep.finish("answer")
        assert [s.name for s in cap.spans] == ["execute_tool fetch"]  # the root has not ended
        root = ep.snapshot()
        assert root is not None and root.end_time is not None
        trace = Trace.from_spans([*cap.spans, root])
        assert trace.episodes[0].output == "answer" and len(trace.episodes[0].attempts) == 1
        ep.close(**{sc.EPISODE_VERDICT: sc.VERDICT_PASS, sc.EPISODE_SCORE: 100.0})
        ep.close(verdict="ignored: already closed")
    final = [s for s in cap.spans if s.name == "invoke_agent held"]
    assert len(final) == 1
    attrs = final[0].attributes
    assert attrs[sc.SCENARIO] == "held" and attrs[sc.EPISODE_AGENT] == "pkg.agents:careful"
    assert attrs[sc.EPISODE_SEED] == 7
    assert attrs[sc.EPISODE_VERDICT] == "pass" and attrs[sc.EPISODE_SCORE] == 100.0
    assert attrs[sc.EPISODE_OUTCOME] == "completed" and attrs[sc.EPISODE_ATTEMPTS] == 1
    assert ep.snapshot() is None


def test_an_episode_not_kept_open_ends_with_its_block_as_before() -> None:
    with telemetry.capture() as cap:
        with chaoskit.episode("plain") as ep:
            fetch("a")
        assert [s.name for s in cap.spans] == ["execute_tool fetch", "invoke_agent plain"]
        ep.close(verdict="fail")  # already ended: nothing to add
    assert sc.EPISODE_VERDICT not in cap.spans[-1].attributes


SERVICE = textwrap.dedent(
    """
    import sys
    import chaoskit
    from chaoskit import chaos
    if sys.argv[1] == "provider":
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        trace.set_tracer_provider(TracerProvider(resource=Resource.create({"service.name": "their-app"})))

    @chaos
    def search(q):
        return q

    with chaoskit.episode("svc"):
        search("a")
    """
)


@pytest.mark.parametrize(
    ("case", "env", "expected"),
    [
        ("default", {}, "chaoskit"),
        ("OTEL_SERVICE_NAME", {"OTEL_SERVICE_NAME": "chaos-demo"}, "chaos-demo"),
        ("OTEL_RESOURCE_ATTRIBUTES", {"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,team=agents"}, "from-attrs"),
        (
            "both",
            {"OTEL_SERVICE_NAME": "wins", "OTEL_RESOURCE_ATTRIBUTES": "service.name=loses"},
            "wins",
        ),
        ("provider", {}, "their-app"),
    ],
)
def test_service_name_comes_from_the_users_resource_and_defaults_to_chaoskit(
    case: str, env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    out = tmp_path / "spans.jsonl"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    proc = subprocess.run(
        [sys.executable, "-c", SERVICE, case],
        env={**base, **env, "CHAOSKIT_TRACES_FILE": str(out), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    services = set()
    extra = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            attrs = {a["key"]: next(iter(a["value"].values())) for a in rs["resource"]["attributes"]}
            services.add(attrs["service.name"])
            extra.update(attrs)
    assert services == {expected}
    if case == "OTEL_RESOURCE_ATTRIBUTES":
        assert extra["team"] == "agents"
