"""One span per attempt, with the GenAI and chaoskit attributes, under the episode's root span."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.testing import attempt_attributes, capture_spans

PLAN = Plan(
    seed=3,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 2},
        {"type": "garbage", "tool": "search", "on_call": 2, "garbage": ["made up"]},
    ],
)


@chaos(name="issue_refund", irreversible=True, idempotency_arg="idempotency_key")
def refund(order_id: str, amount: float, idempotency_key: str | None = None, api_key: str = "") -> dict:
    return {"refunded": amount}


@chaos
def search(q: str) -> list[str]:
    return [q]


def test_span_tree_and_attributes() -> None:
    with capture_spans() as cap, chaoskit.episode("refund-flow", plan=PLAN, ticket="T-1") as ep:
        with pytest.raises(chaoskit.ToolHTTPError):
            refund("4832", 10.0, idempotency_key="k-1", api_key="sk-live-123")
        refund("4832", 10.0, idempotency_key="k-1", api_key="sk-live-123")
        with pytest.raises(chaoskit.ToolHTTPError):
            search("a")
        assert search("a") == ["made up"]
        ep.finish("Refund issued.")

    root = next(s for s in cap.spans if s.name == "invoke_agent refund-flow")
    assert root.kind is SpanKind.INTERNAL
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["chaoskit.episode.id"] == ep.id
    assert root.attributes["chaoskit.episode.output"] == "Refund issued."
    assert root.attributes["chaoskit.episode.ticket"] == "T-1"
    assert json.loads(root.attributes["chaoskit.plan"])["seed"] == 3

    attempts = cap.attempt_spans()
    assert [s.name for s in attempts] == ["execute_tool issue_refund"] * 2 + ["execute_tool search"] * 2
    for s in attempts:
        assert s.kind is SpanKind.INTERNAL
        assert s.parent is not None and s.parent.span_id == root.context.span_id
        assert s.context.trace_id == root.context.trace_id
        assert s.attributes["chaoskit.episode.id"] == ep.id

    first, second, rl, garbage = (dict(s.attributes) for s in attempts)
    assert first["gen_ai.operation.name"] == "execute_tool" and first["gen_ai.tool.name"] == "issue_refund"
    assert first["chaoskit.attempt"] == 1 and second["chaoskit.attempt"] == 2
    assert first["chaoskit.tool.irreversible"] is True
    assert first["chaoskit.idempotency_key"] == "k-1"
    assert first["chaoskit.args.hash"] == second["chaoskit.args.hash"]
    assert json.loads(first["chaoskit.args"]) == {
        "order_id": "4832",
        "amount": 10.0,
        "idempotency_key": "k-1",
        "api_key": "[REDACTED]",
    }
    assert "sk-live" not in json.dumps([dict(s.attributes) for s in cap.spans])
    assert first["chaoskit.fault.type"] == "http" and first["chaoskit.fault.index"] == 0
    assert first["chaoskit.fault.http.status"] == 500 and first["chaoskit.fault.after_write"] is True
    assert first["chaoskit.outcome"] == "error" and first["error.type"] == "ToolHTTPError"
    assert first["chaoskit.tool.executed"] is True and first["chaoskit.fault.injected"] is True
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert any(e.name == "exception" for e in attempts[0].events)
    assert second["chaoskit.outcome"] == "ok" and "chaoskit.fault.type" not in second
    assert rl["chaoskit.fault.http.status"] == 429 and rl["chaoskit.fault.retry_after"] == 2
    assert rl["chaoskit.tool.executed"] is False
    assert json.loads(garbage["chaoskit.fault.value"]) == ["made up"]


def test_args_hash_ignores_idempotency_key_and_differs_by_args() -> None:
    with capture_spans() as cap, chaoskit.episode("t"):
        refund("1", 5.0, idempotency_key="a")
        refund("1", 5.0, idempotency_key="b")
        refund("2", 5.0)
    hashes = [a["chaoskit.args.hash"] for a in attempt_attributes(cap)]
    assert hashes[0] == hashes[1] != hashes[2]


def test_args_are_size_capped() -> None:
    chaoskit.configure(max_attr_chars=200)
    with capture_spans() as cap:
        search("x" * 10_000)
    recorded = attempt_attributes(cap)[0]["chaoskit.args"]
    assert len(recorded) <= 200 and "chars]" in recorded


def test_nested_secrets_are_redacted() -> None:
    @chaos
    def call(payload: dict) -> None:
        return None

    with capture_spans() as cap:
        call({"user": "ada", "auth": {"Authorization": "Bearer x"}, "password": "p", "client_secret": "s"})
    args = json.loads(attempt_attributes(cap)[0]["chaoskit.args"])
    assert args == {
        "payload": {"user": "ada", "auth": "[REDACTED]", "password": "[REDACTED]", "client_secret": "[REDACTED]"}
    }


def test_results_recorded_only_when_opted_in() -> None:
    with capture_spans() as cap:
        search("a")
        chaoskit.configure(record_results=True)
        search("b")
    a, b = attempt_attributes(cap)
    assert "gen_ai.tool.call.result" not in a
    assert b["gen_ai.tool.call.result"] == '["b"]'


def test_real_http_errors_are_recorded_and_graded_like_injected_ones() -> None:
    from chaoskit import checks

    class ClientError(Exception):
        def __init__(self) -> None:
            super().__init__("429 Too Many Requests")
            self.status_code = 429
            self.retry_after = 5

    hits = iter([True, False])

    @chaos
    def quote(symbol: str) -> float:
        if next(hits):
            raise ClientError()
        return 1.0

    with capture_spans() as cap, chaoskit.episode("real-429"):
        with pytest.raises(ClientError):
            quote("ACME")
        quote("ACME")  # immediately: ignores the server's Retry-After
    first = attempt_attributes(cap, "quote")[0]
    assert first["http.response.status_code"] == 429 and first["chaoskit.retry_after"] == 5.0
    assert first["chaoskit.tool.executed"] is True  # the real tool ran, and raised its own error
    assert first["chaoskit.fault.injected"] is False
    result = checks.honors_retry_after(cap.trace())
    assert not result.passed and "quote" in result.message


def test_finish_records_success_and_late_attributes() -> None:
    with capture_spans() as cap, chaoskit.episode("verdict") as ep:
        ep.set_attribute("required_tools", ["search"])
        ep.finish("All done.", success=False)
    root = next(s for s in cap.spans if s.name == "invoke_agent verdict")
    assert root.attributes["chaoskit.episode.success"] is False
    assert json.loads(root.attributes["chaoskit.episode.required_tools"]) == ["search"]
    assert cap.trace().episodes[0].attributes["chaoskit.episode.success"] is False


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("access_token", True),
        ("authToken", True),
        ("X-Api-Key", True),
        ("apiKey", True),
        ("api_key", True),
        ("client_secret", True),
        ("Authorization", True),
        ("password", True),
        ("db_password", True),
        ("auth", True),
        ("author", False),
        ("max_tokens", False),
        ("tokenizer", False),
        ("session_id", False),
        ("order_id", False),
    ],
)
def test_secret_keys_match_whole_words(key: str, secret: bool) -> None:
    @chaos
    def call(**kwargs: str) -> None:
        return None

    with capture_spans() as cap:
        call(**{key: "v"})
    assert json.loads(attempt_attributes(cap)[0]["chaoskit.args"]) == {key: "[REDACTED]" if secret else "v"}


def test_custom_secret_keys() -> None:
    chaoskit.configure(secret_keys=["ssn"])

    @chaos
    def call(customer_ssn: str, password: str) -> None:
        return None

    with capture_spans() as cap:
        call("123", "p")
    assert json.loads(attempt_attributes(cap)[0]["chaoskit.args"]) == {"customer_ssn": "[REDACTED]", "password": "p"}
