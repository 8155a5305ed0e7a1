"""The hot path's shortcuts change nothing that can be seen: attributes stored in bulk are the ones the SDK
would have stored, every condition of the shortcut falls back to the public path, and the short record of
an ok attempt reads back as the full one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import INVALID_SPAN

import chaoskit
import chaoskit.telemetry as telemetry
import chaoskit.telemetry._bulk as bulk
from chaoskit import chaos
from chaoskit.engine import AttemptInfo
from chaoskit.testing import capture_spans, plan_from


@chaos
def lookup_order(order_id: str, verbose: bool = False) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "delivered"}


@chaos(irreversible=True, idempotency_arg="key")
def issue_refund(order_id: str, amount: float, key: str) -> dict[str, Any]:
    """Refund an order."""
    return {"refund_id": f"R-{order_id}", "amount": amount}


@chaos
def send_email(to: str) -> dict[str, Any]:
    """Send an email; a full mailbox is a returned error."""
    if to.startswith("full"):
        return {"error": f"mailbox {to} is full"}
    if to.startswith("bad"):
        raise ValueError(f"no such mailbox: {to}")
    return {"sent": True}


PLAN = plan_from({"type": "error", "tool": ["lookup_order", "send_email"], "on_call": 99})


class SeesAttributesAtStart(SpanProcessor):
    """An application's processor that reads a span's attributes when it starts (e.g. to route it)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.seen.append(dict(span.attributes or {}))


def calls() -> tuple[list[dict[str, Any]], list[AttemptInfo]]:
    """A few calls of every kind, with the spans' attributes (episode id left out) and the attempts."""
    with capture_spans() as cap, chaoskit.episode("orders", plan=PLAN) as ep:
        lookup_order("4832")
        lookup_order("5120", verbose=True)
        issue_refund("4832", 12.5, key="refund-4832")
        send_email("ana@example.com")
        send_email("full@example.com")
        with pytest.raises(ValueError):
            send_email("bad@example.com")
    spans = [
        {k: v for k, v in s.attributes.items() if k != "chaoskit.episode.id"}
        for s in cap.attempt_spans()
        if s.attributes
    ]
    return spans, ep.attempts


def comparable(attempts: list[AttemptInfo]) -> list[tuple[Any, ...]]:
    return [
        (a.tool, a.attempt, a.outcome, a.error_type, a.refused, a.executed, a.args_hash, a.idempotency_key)
        for a in attempts
    ]


def test_attributes_stored_in_bulk_are_the_ones_the_sdk_stores() -> None:
    fast_spans, fast_attempts = calls()
    # a processor that reads attributes when a span starts turns the shortcut off: they go through the SDK
    watcher = telemetry.add_processor(SeesAttributesAtStart())
    try:
        slow_spans, slow_attempts = calls()
    finally:
        telemetry.remove_processor(watcher)
    assert fast_spans == slow_spans
    assert [list(s) for s in fast_spans] == [list(s) for s in slow_spans]  # the same order too
    assert comparable(fast_attempts) == comparable(slow_attempts)
    assert fast_spans[0]["chaoskit.args"] == '{"order_id":"4832","verbose":false}'
    assert fast_spans[4]["chaoskit.tool.refused"] is True and fast_spans[5]["chaoskit.outcome"] == "error"


def test_a_processor_reading_attributes_at_start_sees_them_all() -> None:
    watcher = SeesAttributesAtStart()
    telemetry.add_processor(watcher)
    try:
        with chaoskit.episode("orders", plan=PLAN):
            lookup_order("4832")
    finally:
        telemetry.remove_processor(watcher)
    start = [s for s in watcher.seen if s.get("gen_ai.tool.name") == "lookup_order"]
    assert len(start) == 1
    assert start[0]["chaoskit.attempt"] == 1 and start[0]["chaoskit.outcome"] == "ok"
    assert start[0]["chaoskit.args.hash"] and start[0]["chaoskit.args"] == '{"order_id":"4832","verbose":false}'


def test_the_short_record_of_an_ok_attempt_reads_as_the_full_one() -> None:
    with capture_spans() as cap, chaoskit.episode("orders", plan=PLAN) as ep:
        lookup_order("4832")
    (info,) = ep.attempts
    (span,) = cap.attempt_spans()
    assert span.context is not None
    assert info == AttemptInfo(
        tool="lookup_order",
        attempt=1,
        outcome="ok",
        fault_type=None,
        fault_index=None,
        error_type=None,
        error_message=None,
        injected=False,
        executed=True,
        irreversible=False,
        args_hash=(span.attributes or {})["chaoskit.args.hash"],
        idempotency_key=None,
        call_id=None,
        episode_id=ep.id,
        start_time=info.start_time,
        end_time=info.end_time,
        span_id=f"{span.context.span_id:016x}",
        trace_id=f"{span.context.trace_id:032x}",
        refused=False,
        idempotent=False,
    )
    assert info.start_time <= info.end_time


def test_tracing_off_short_records_keep_the_idempotency_key() -> None:
    chaoskit.configure(trace=False)
    with chaoskit.episode("refunds") as ep:
        issue_refund("4832", 12.5, key="refund-4832")
        lookup_order("4832")
    assert [(a.tool, a.outcome, a.idempotency_key, a.irreversible, a.args_hash, a.span_id) for a in ep.attempts] == [
        ("issue_refund", "ok", "refund-4832", True, None, None),
        ("lookup_order", "ok", None, False, None, None),
    ]


class _Span:
    """Not the SDK's span: put() must use its public set_attributes."""

    def __init__(self) -> None:
        self.attrs: dict[str, Any] = {}

    def set_attributes(self, attrs: dict[str, Any]) -> None:
        self.attrs.update(attrs)


def test_put_falls_back_to_the_public_call_for_another_span_or_a_value_the_sdk_would_clean() -> None:
    other = _Span()
    bulk.put(other, {"chaoskit.attempt": 1})
    assert other.attrs == {"chaoskit.attempt": 1}
    bulk.put(INVALID_SPAN, {"chaoskit.attempt": 1})  # a non-recording span: nothing, and no error

    tracer = telemetry.get_tracer()
    span = tracer.start_span("execute_tool t")
    # a list is cleaned by the SDK (made a tuple): put leaves that to the SDK
    bulk.put(span, {"chaoskit.fault.asks_for": ["password"], "chaoskit.attempt": 2})
    assert isinstance(span, ReadableSpan)
    assert dict(span.attributes or {}) == {"chaoskit.fault.asks_for": ("password",), "chaoskit.attempt": 2}
    # a span that already has attributes is not written over in bulk either
    bulk.put(span, {"chaoskit.outcome": "ok"})
    assert dict(span.attributes or {})["chaoskit.outcome"] == "ok"
    span.end()
    # an ended span: the SDK refuses (with its warning), and so does put
    bulk.put(span, {"chaoskit.outcome": "error"})
    assert dict(span.attributes or {})["chaoskit.outcome"] == "ok"


def test_put_takes_the_public_path_when_the_sdk_internals_are_not_what_it_expects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Store:
        """An attribute store of another shape (a future SDK)."""

        def __init__(self) -> None:
            self._dict = "not a dict"

    tracer = telemetry.get_tracer()
    span = tracer.start_span("execute_tool t")
    real = getattr(span, "_attributes")  # noqa: B009
    monkeypatch.setattr(span, "_attributes", Store())
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(span, "set_attributes", lambda attrs: seen.append(dict(attrs)))
    bulk.put(span, {"chaoskit.attempt": 1})
    assert seen == [{"chaoskit.attempt": 1}]
    monkeypatch.setattr(span, "_attributes", real)
    span.end()


def test_the_shortcut_is_off_for_attribute_limits_samplers_and_start_processors() -> None:
    # each in a fresh process: the global provider can be set once
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, TraceIdRatioBased
        import chaoskit
        import chaoskit.telemetry as telemetry
        from chaoskit import chaos
        from chaoskit.testing import capture_spans

        CASE = {case!r}
        if CASE == "limits":
            provider = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=12))
        elif CASE == "sampler":
            provider = TracerProvider(sampler=TraceIdRatioBased(1.0))
        else:
            provider = TracerProvider(sampler=ALWAYS_ON)
        trace.set_tracer_provider(provider)

        @chaos
        def lookup_order(order_id):
            return {{"order_id": order_id}}

        with capture_spans() as cap, chaoskit.episode("orders"):
            lookup_order("4832")
        ready = telemetry.bulk_tracer() is not None
        (span,) = cap.attempt_spans()
        attrs = dict(span.attributes)
        print(ready, attrs["chaoskit.args"], attrs["chaoskit.attempt"])
        """
    )
    out = {}
    for case in ("limits", "sampler", "always_on"):
        proc = subprocess.run(
            [sys.executable, "-c", code.format(case=case)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        out[case] = proc.stdout.split()
    # the SDK cut the value to its limit: the shortcut was off and the SDK cleaned the attributes
    assert out["limits"] == ["False", '{"order_id":', "1"]
    assert out["sampler"] == ["False", '{"order_id":"4832"}', "1"]
    assert out["always_on"] == ["True", '{"order_id":"4832"}', "1"]


def test_a_span_processor_failing_at_start_costs_the_call_nothing(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            raise RuntimeError("exporter misconfigured")

    # chaoskit's own fan-out catches a failing sink; this one fails in the provider itself
    provider_processor = Broken()
    multi: Any = getattr(telemetry.get_tracer(), "span_processor")  # noqa: B009
    with chaoskit.episode("orders", plan=PLAN) as ep:
        multi.add_span_processor(provider_processor)
        try:
            assert lookup_order("4832") == {"order_id": "4832", "status": "delivered"}
        finally:
            multi._span_processors = tuple(p for p in multi._span_processors if p is not provider_processor)
    assert [(a.tool, a.outcome, a.span_id) for a in ep.attempts] == [("lookup_order", "ok", None)]
    assert "starting the span for lookup_order failed" in caplog.text
