"""Model steps: ``ep.step`` writes a ``chat {model}`` span under the episode, content only when asked, redacted
and capped; the checks' readers ignore it; the metrics' reader reads it back from SDK spans and OTLP-JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

import chaoskit
from chaoskit import ConfigError, chaos, telemetry
from chaoskit import semconv as sc
from chaoskit.grading import Trace
from chaoskit.metrics import read_steps, steps_from_spans, trajectories_from_spans
from chaoskit.testing import capture_spans


@chaos
def lookup_order(order_id: str) -> dict[str, object]:
    return {"order_id": order_id, "amount": 25.0, "status": "delivered"}


def _chat_spans(spans: list) -> list:
    return [s for s in spans if s.name.startswith("chat")]


def test_step_span_shape_usage_and_parent() -> None:
    with capture_spans() as cap, chaoskit.episode("refund") as ep:
        ep.step(
            "Looking up order 4832.",
            tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "4832"}, "id": "call_1"}],
            model="gpt-test",
            input_tokens=120,
            output_tokens=14,
        )
        lookup_order("4832")
    spans = list(cap.spans)
    (chat,) = _chat_spans(spans)
    root = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert chat.name == "chat gpt-test"
    assert chat.kind == SpanKind.CLIENT
    assert chat.parent is not None and chat.parent.span_id == root.context.span_id
    attrs = dict(chat.attributes or {})
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[sc.GEN_AI_REQUEST_MODEL] == "gpt-test"
    assert attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] == 120
    assert attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 14
    assert list(attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS]) == ["tool_calls"]
    # content is opt-in: none of it without capture
    assert sc.GEN_AI_OUTPUT_MESSAGES not in attrs and sc.GEN_AI_INPUT_MESSAGES not in attrs
    # no chaoskit.* attribute: the checks' readers must keep ignoring model steps
    assert not any(k.startswith("chaoskit.") for k in attrs)


def test_content_is_captured_when_asked_redacted_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    chaoskit.configure(max_output_chars=300)
    long_text = "x" * 5000
    with capture_spans() as cap, chaoskit.episode("t", capture_content=True) as ep:
        ep.step(
            long_text,
            tool_calls=[{"name": "pay", "args": {"card": "4242", "api_key": "sk-live-123"}}],
            tool_results=[{"id": "call_0", "response": {"token": "secret-token", "ok": True}}],
        )
    attrs = dict(_chat_spans(list(cap.spans))[0].attributes or {})
    out = attrs[sc.GEN_AI_OUTPUT_MESSAGES]
    assert len(out) <= 300
    assert "x" * 20 in out and "chars]" in out  # cut, and it says so
    # the long text does not push the tool call out; its secret-looking argument is redacted
    assert '"card":"4242"' in out
    assert "sk-live-123" not in out and "[REDACTED]" in out
    assert "secret-token" not in attrs[sc.GEN_AI_INPUT_MESSAGES]


def test_environment_variable_turns_capture_on_and_explicit_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sc.CAPTURE_CONTENT_ENV, "true")
    with capture_spans() as cap, chaoskit.episode("t") as ep:
        ep.step("captured by the environment")
        ep.step("not captured", capture_content=False)
    first, second = (dict(s.attributes or {}) for s in _chat_spans(list(cap.spans)))
    assert "captured by the environment" in first[sc.GEN_AI_OUTPUT_MESSAGES]
    assert sc.GEN_AI_OUTPUT_MESSAGES not in second


def test_step_is_a_no_op_with_tracing_off() -> None:
    chaoskit.configure(trace=False)
    with capture_spans() as cap, chaoskit.episode("t") as ep:
        ep.step("nothing recorded", input_tokens=3)
    assert _chat_spans(list(cap.spans)) == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"input_tokens": -1}, "input_tokens"),
        ({"output_tokens": 1.5}, "output_tokens"),
        ({"tool_calls": [{"arguments": {}}]}, "'name' string"),
        ({"tool_calls": ["lookup"]}, "'name' string"),
    ],
)
def test_bad_step_arguments_are_refused_with_the_field_named(kwargs: dict, needle: str) -> None:
    with chaoskit.episode("t") as ep, pytest.raises(ConfigError, match=needle):
        ep.step("text", **kwargs)


def test_bad_capture_content_is_refused() -> None:
    with pytest.raises(ConfigError, match="capture_content"):
        chaoskit.episode("t", **{"capture_content": "yes"})


def test_checks_grade_the_same_trace_with_and_without_steps() -> None:
    def run(with_steps: bool) -> Trace:
        with capture_spans() as cap, chaoskit.episode("t", capture_content=True) as ep:
            if with_steps:
                ep.step("Looking it up.", tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "1"}}])
            lookup_order("1")
            if with_steps:
                ep.step("Order 1 is delivered.")
            ep.finish("Order 1 is delivered.")
        return Trace.from_spans(cap.spans)

    plain, stepped = run(False), run(True)
    assert [a.tool for a in stepped.attempts] == [a.tool for a in plain.attempts] == ["lookup_order"]
    assert len(stepped.episodes) == 1


def test_steps_read_back_from_sdk_spans_and_from_otlp_json(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    sink = telemetry.write_jsonl(path)  # the OTLP-JSON Lines file the runner's --traces writes
    with capture_spans() as cap, chaoskit.episode("t", capture_content=True) as ep:
        ep.set_attribute("task", "Is order 4832 delivered?")
        ep.step("Looking up 4832.", tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "4832"}}])
        result = lookup_order("4832")
        ep.step("Yes, it is delivered.", tool_results=[result], model="m", input_tokens=9, output_tokens=4)
    spans = list(cap.spans)
    steps = steps_from_spans(spans)
    assert [s.text for s in steps] == ["Looking up 4832.", "Yes, it is delivered."]
    assert steps[0].tool_calls[0].name == "lookup_order"
    assert steps[0].tool_calls[0].arguments == {"order_id": "4832"}
    assert json.loads(steps[1].tool_results[0])["status"] == "delivered"
    assert (steps[1].model, steps[1].input_tokens, steps[1].output_tokens) == ("m", 9, 4)
    (traj,) = trajectories_from_spans(spans)
    assert traj.task == "Is order 4832 delivered?"
    assert [a.tool for a in traj.attempts_of_step(0)] == ["lookup_order"]
    assert traj.attempts_of_step(1) == []

    telemetry.remove_processor(sink)
    # the checks' reader ignores the steps in the file: the episode and its one attempt, as without them
    graded = Trace.load(path)
    assert len(graded.episodes) == 1 and [a.tool for a in graded.attempts] == ["lookup_order"]
    again = read_steps(path)
    assert [(s.text, s.model, s.span_id) for s in again] == [(s.text, s.model, s.span_id) for s in steps]
