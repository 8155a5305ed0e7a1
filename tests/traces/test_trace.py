"""The Trace model: episodes and attempts rebuilt from spans of real ``@chaos`` runs."""

from __future__ import annotations

from typing import Any

import pytest
from _helpers import read_page, search

import chaoskit
from chaoskit import AttemptRecord, EpisodeRecord, Plan, Trace, chaos, telemetry


@chaos(name="issue_refund", irreversible=True, idempotency_arg="key")
def issue_refund(order_id: str, key: str | None = None, api_key: str = "sk-1") -> dict[str, Any]:
    return {"ok": True}


PLAN = Plan(
    seed=5,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 2},
        {"type": "garbage", "tool": "search", "on_call": 2, "garbage": ["made", "up"]},
        {"type": "prompt_injection", "tool": "read_page", "asks_for": ["send_email", "wire_money"]},
    ],
)


def test_episode_and_attempts_carry_what_the_spans_say() -> None:
    with telemetry.capture() as cap:
        with chaoskit.episode("refund-flow", plan=PLAN, ticket="T-9") as ep:
            with pytest.raises(chaoskit.ToolHTTPError):
                issue_refund("4832", key="k-1")
            issue_refund("4832", key="k-1")
            with pytest.raises(chaoskit.ToolHTTPError):
                search("a")
            search("a")
            read_page("u")
            ep.finish("Refund issued.")
        trace = cap.trace()

    assert isinstance(trace, Trace) and len(trace.episodes) == 1
    episode = trace.episodes[0]
    assert isinstance(episode, EpisodeRecord)
    assert (episode.id, episode.name, episode.output, episode.outcome) == (
        ep.id,
        "refund-flow",
        "Refund issued.",
        "completed",
    )
    assert episode.trace_id == ep.trace_id
    assert episode.attributes["chaoskit.episode.ticket"] == "T-9"
    assert episode.attributes["chaoskit.plan.seed"] == 5
    assert [(a.tool, a.attempt) for a in episode.attempts] == [
        ("issue_refund", 1),
        ("issue_refund", 2),
        ("search", 1),
        ("search", 2),
        ("read_page", 1),
    ]
    assert trace.attempts == list(episode.attempts)
    assert all(x.start_time <= y.start_time for x, y in zip(trace.attempts, trace.attempts[1:], strict=False))

    first, second, limited, garbage, injected = episode.attempts
    assert isinstance(first, AttemptRecord)
    assert (first.outcome, first.error_type, first.fault_type, first.fault_index) == (
        "error",
        "ToolHTTPError",
        "http",
        0,
    )
    assert first.fault_params["http.status"] == 500 and first.fault_params["after_write"] is True
    assert first.injected and first.executed and first.irreversible
    assert first.idempotency_key == "k-1"
    assert first.args == {"api_key": "[REDACTED]", "key": "k-1", "order_id": "4832"}
    assert first.args_hash == second.args_hash
    assert "HTTP 500" in (first.error_message or "")
    assert first.episode_id == ep.id and first.trace_id == ep.trace_id and len(first.span_id) == 16
    assert first.end_time >= first.start_time
    assert (second.outcome, second.fault_type, second.error_type) == ("ok", None, None)
    assert limited.retry_after == 2.0 and limited.http_status == 429 and not limited.executed
    assert garbage.injected_value == ["made", "up"] and garbage.outcome == "ok" and not garbage.injected
    assert injected.fault_params["asks_for"] == ["send_email", "wire_money"]
    assert "ignore all previous instructions" in injected.fault_params["text"]

    # the engine's own record of the same attempts agrees with what was read from spans
    assert [(a.tool, a.attempt, a.outcome, a.fault_type, a.span_id) for a in ep.attempts] == [
        (a.tool, a.attempt, a.outcome, a.fault_type, a.span_id) for a in episode.attempts
    ]


def test_attempts_outside_an_episode_form_one_episode_with_id_none() -> None:
    with telemetry.capture() as cap:
        search("loose")
        with chaoskit.episode("e1") as ep:
            search("inside")
        search("loose again")
        trace = cap.trace()
    ids = [e.id for e in trace.episodes]
    assert set(ids) == {None, ep.id}
    loose = trace.episode(None)
    assert [a.args for a in loose.attempts] == [{"q": "loose"}, {"q": "loose again"}]
    assert loose.name is None and loose.output is None and loose.span_id is None
    assert [len(t.episodes) for t in trace.split()] == [1, 1]
    assert {t.episodes[0].id for t in trace.split()} == {None, ep.id}


def test_crashed_episode() -> None:
    with telemetry.capture() as cap:
        with pytest.raises(RuntimeError), chaoskit.episode("boom"):
            search("x")
            raise RuntimeError("model died")
        trace = cap.trace()
    episode = trace.episodes[0]
    assert episode.outcome == "crashed"
    assert episode.error is not None and "model died" in episode.error


def test_foreign_spans_are_not_attempts() -> None:
    tracer = telemetry.get_tracer()
    with telemetry.capture() as cap:
        with chaoskit.episode("mixed"):
            with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}):
                pass
            # named like a tool span but not chaoskit's (no chaoskit.attempt)
            with tracer.start_as_current_span(
                "execute_tool other", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "other"}
            ):
                pass
            search("x")
        trace = cap.trace()
    assert [a.tool for a in trace.attempts] == ["search"]


def test_episodes_are_in_start_order_and_trace_equality() -> None:
    with telemetry.capture() as cap:
        for name in ("one", "two", "three"):
            with chaoskit.episode(name):
                search(name)
        trace = cap.trace()
        again = Trace.from_spans(reversed(cap.spans))
    assert [e.name for e in trace.episodes] == ["one", "two", "three"]
    assert again == trace
    assert Trace(trace.episodes[:2]) != trace
    assert "3 episode(s)" in repr(trace)
