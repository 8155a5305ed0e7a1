"""The hot path: tracing off runs lean but keeps every decision and record; the fault decision is lock-free and
the same whichever way it is reached; argument work is done only where something reads it."""

from __future__ import annotations

import asyncio
import contextvars
import pickle
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.engine import ToolSpec, call_async, call_sync
from chaoskit.engine._attempt import Attempt
from chaoskit.engine._context import Scope
from chaoskit.plan._triggers import CallState
from chaoskit.testing import capture_spans, plan_from

ORDERS = {
    "4832": {"order_id": "4832", "status": "delivered", "total": 129.0},
    "5120": {"order_id": "5120", "status": "shipped", "total": 42.5},
}
REFUNDS: list[tuple[str, float]] = []


@chaos
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id."""
    return dict(ORDERS[order_id])


@chaos(irreversible=True, idempotency_arg="idempotency_key")
def issue_refund(order_id: str, amount: float, idempotency_key: str) -> dict[str, Any]:
    """Refund an order."""
    REFUNDS.append((order_id, amount))
    return {"refund_id": f"R-{order_id}", "amount": amount}


@chaos
def search_kb(query: str) -> list[str]:
    """Search the help-centre articles."""
    return ["Refunds are issued within 5 days", "Late deliveries"] if "refund" in query else []


def support_agent(order_id: str) -> str:
    """A refund agent as an LLM would drive it: look up, retry a failed look-up once, refund, answer."""
    try:
        order = lookup_order(order_id)
    except Exception:
        order = lookup_order(order_id)
    search_kb("refund policy for delivered orders")
    refund = issue_refund(order_id, order["total"], idempotency_key=f"refund-{order_id}")
    return f"I refunded {refund['amount']:.2f} for order {order_id} ({refund['refund_id']})."


PLAN = plan_from(
    {"type": "error", "tool": "lookup_order", "on_call": 1, "error": "orders DB unavailable"},
    {"type": "latency", "tool": "search_kb", "probability": 0.5, "delay_s": 0},
    {"type": "rate_limit", "tool": "issue_refund", "match": {"order_id": "5120"}, "retry_after": 0},
    seed=7,
)


def transcript(trace: bool) -> tuple[list[str], list[tuple[Any, ...]]]:
    chaoskit.configure(trace=trace)
    answers, attempts = [], []
    for order_id in ("4832", "5120"):
        with chaoskit.episode("refund", plan=PLAN) as ep:
            try:
                answers.append(support_agent(order_id))
            except Exception as exc:
                answers.append(f"Sorry, the refund for order {order_id} failed: {exc}")
        attempts += [
            (a.tool, a.attempt, a.outcome, a.fault_type, a.injected, a.executed, a.idempotency_key) for a in ep.attempts
        ]
    return answers, attempts


def test_tracing_off_fires_the_same_faults_on_the_same_calls_and_records_every_attempt() -> None:
    REFUNDS.clear()
    traced = transcript(trace=True)
    with capture_spans() as cap:
        untraced = transcript(trace=False)
    assert untraced == traced
    assert not cap.spans  # tracing off: not one span
    answers, attempts = untraced
    assert answers == [
        "I refunded 129.00 for order 4832 (R-4832).",
        "Sorry, the refund for order 5120 failed: issue_refund: HTTP 429 Too Many Requests: rate limit exceeded "
        "(Retry-After: 0s)",
    ]
    assert attempts[:4] == [
        ("lookup_order", 1, "error", "error", True, False, None),
        ("lookup_order", 2, "ok", None, False, True, None),
        ("search_kb", 1, "ok", attempts[2][3], False, True, None),
        ("issue_refund", 1, "ok", None, False, True, "refund-4832"),
    ]
    # the match trigger saw the arguments with tracing off: only order 5120's refund was rate limited
    assert attempts[-1] == ("issue_refund", 1, "error", "rate_limit", True, False, "refund-5120")
    assert REFUNDS == [("4832", 129.0), ("4832", 129.0)]


def test_tracing_off_builds_no_attempt_and_binds_no_argument_nothing_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    chaoskit.configure(trace=False)
    built: list[str] = []
    real_init = Attempt.__init__

    def counting_init(self: Attempt, spec: ToolSpec, *args: Any, **kwargs: Any) -> None:
        built.append(spec.name)
        real_init(self, spec, *args, **kwargs)

    monkeypatch.setattr(Attempt, "__init__", counting_init)
    spec = ToolSpec("get_weather")
    bound: list[str] = []

    def arguments() -> dict[str, Any]:
        bound.append("get_weather")
        return {"city": "Lyon", "unit": "celsius"}

    plan = plan_from({"type": "timeout", "tool": "get_weather", "on_call": 3, "after_s": 0})
    answers: list[Any] = []
    with chaoskit.episode("weather", plan=plan) as ep:
        for _ in range(3):
            try:
                answers.append(
                    call_sync(
                        spec, lambda city, unit: f"12 degrees in {city}", ("Lyon", "celsius"), {}, bound=arguments
                    )
                )
            except Exception as exc:
                answers.append(type(exc).__name__)
    assert answers == ["12 degrees in Lyon", "12 degrees in Lyon", "ToolTimeout"]
    # only the faulted call needed an Attempt; no trigger reads the arguments, so none were bound
    assert built == ["get_weather"] and bound == []
    assert [(a.attempt, a.outcome, a.fault_type, a.args_hash, a.span_id) for a in ep.attempts] == [
        (1, "ok", None, None, None),
        (2, "ok", None, None, None),
        (3, "error", "timeout", None, None),
    ]


def test_tracing_off_lean_path_records_returned_errors_crashes_and_cancels() -> None:
    chaoskit.configure(trace=False)
    spec = ToolSpec("send_email", irreversible=True, idempotent=True)

    def refuse(to: str) -> dict[str, str]:
        return {"error": f"mailbox {to} is full"}

    def crash(to: str) -> str:
        raise ConnectionError("SMTP server closed the connection")

    async def cancelled(to: str) -> str:
        raise asyncio.CancelledError

    with chaoskit.episode("email") as ep:
        assert call_sync(spec, refuse, ("ana@example.com",), {}) == {"error": "mailbox ana@example.com is full"}
        with pytest.raises(ConnectionError):
            call_sync(spec, crash, ("ana@example.com",), {})
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(call_async(spec, cancelled, ("ana@example.com",), {}))
    assert [
        (
            a.attempt,
            a.outcome,
            a.error_type,
            a.error_message,
            a.refused,
            a.executed,
            a.irreversible,
            a.idempotent,
            a.injected,
        )
        for a in ep.attempts
    ] == [
        (1, "error", "ReturnedError", "mailbox ana@example.com is full", True, True, True, True, False),
        (2, "error", "ConnectionError", "SMTP server closed the connection", False, True, True, True, False),
        (3, "cancelled", "CancelledError", "", False, True, True, True, False),
    ]


def test_tracing_off_keeps_the_first_result_for_a_stale_replay() -> None:
    chaoskit.configure(trace=False)
    prices = iter([{"sku": "A-1", "price": 10.0}, {"sku": "A-1", "price": 12.5}])
    spec = ToolSpec("get_price")
    plan = plan_from({"type": "garbage", "tool": "get_price", "stale": True, "on_call": 2})
    with chaoskit.episode("prices", plan=plan) as ep:
        first = call_sync(spec, lambda sku: next(prices), ("A-1",), {})
        second = call_sync(spec, lambda sku: next(prices), ("A-1",), {})
    assert first == {"sku": "A-1", "price": 10.0}
    assert second == {"sku": "A-1", "price": 10.0}  # yesterday's price served again
    # the stale reply is served instead of calling the tool (a data fault: no exception was injected)
    assert [(a.attempt, a.fault_type, a.executed, a.injected) for a in ep.attempts] == [
        (1, None, True, False),
        (2, "garbage", False, False),
    ]


@pytest.mark.parametrize("trace", [True, False])
def test_threads_each_get_their_own_call_number_and_budgets_hold(trace: bool) -> None:
    chaoskit.configure(trace=trace)
    plan = plan_from(
        {"type": "error", "tool": "lookup_order", "every": 5},
        {"type": "timeout", "tool": "search_kb", "times": 3, "after_s": 0},
    )
    errors: list[str] = []

    def worker() -> None:
        for _ in range(40):
            for tool, arg in ((lookup_order, "4832"), (search_kb, "refund policy")):
                try:
                    tool(arg)
                except Exception as exc:
                    errors.append(type(exc).__name__)

    with chaoskit.episode("load", plan=plan) as ep:
        # each thread runs in a copy of this context: inside the episode, sharing its counters
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lookups = sorted(a.attempt for a in ep.attempts if a.tool == "lookup_order")
    assert lookups == list(range(1, 161))  # every call its own number, none lost or repeated
    faulted = sorted(a.attempt for a in ep.attempts if a.tool == "lookup_order" and a.fault_type)
    assert faulted == list(range(5, 161, 5))
    assert sum(1 for a in ep.attempts if a.tool == "search_kb" and a.fault_type == "timeout") == 3
    assert len(errors) == 32 + 3


triggers = st.fixed_dictionaries(
    {},
    optional={
        "tool": st.sampled_from(["lookup_order", "search_kb", "*", "lookup_*"]),
        "on_call": st.one_of(st.integers(1, 9), st.lists(st.integers(1, 9), min_size=1, max_size=3)),
        "every": st.integers(1, 4),
        "calls": st.sampled_from(["1-3", "2-5", "4-", "6"]),
        "probability": st.floats(0, 1),
        "times": st.integers(1, 3),
        "match": st.sampled_from([{"order_id": "4832"}, {"order_id": "5120"}]),
    },
)
plans = st.builds(
    lambda seed, fs: Plan(seed=seed, faults=fs),
    st.integers(0, 2**31),
    st.lists(st.builds(lambda trig: {"type": "error", **trig}, triggers), max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(
    plans,
    st.lists(st.tuples(st.sampled_from(["lookup_order", "search_kb"]), st.sampled_from(["4832", "5120"])), max_size=25),
)
def test_the_prepared_decision_is_the_first_fault_whose_whole_trigger_holds(
    plan: Plan, calls: list[tuple[str, str]]
) -> None:
    scope = Scope()
    for tool, order_id in calls:
        args = {"order_id": order_id}
        n, decision = scope.next_call(plan, tool, args)
        fired = dict(scope.fired)
        if decision is not None:  # as it was before this call fired
            key = (decision[0], tool)
            fired[key] -= 1
        naive = next(
            (
                (i, f)
                for i, f in enumerate(plan.faults)
                if f.targets(tool) and (f.trigger is None or f.trigger(CallState(plan.seed, i, tool, n, args, fired)))
            ),
            None,
        )
        assert decision == naive


def test_a_span_sampled_out_gets_no_argument_description() -> None:
    # the application's sampler keeps refunds and drops searches; chaoskit describes only what is recorded
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
        import chaoskit
        import chaoskit.engine._attrs as _attrs
        from chaoskit import chaos
        from chaoskit.testing import capture_spans

        class KeepWrites(Sampler):
            def should_sample(self, parent_context, trace_id, name, kind=None, attributes=None, links=None,
                              trace_state=None):
                keep = not name.startswith("execute_tool search")
                return SamplingResult(Decision.RECORD_AND_SAMPLE if keep else Decision.DROP, attributes)
            def get_description(self):
                return "KeepWrites"

        trace.set_tracer_provider(TracerProvider(sampler=KeepWrites()))
        described = []
        real = _attrs.describe_args
        _attrs.describe_args = lambda args, exclude=None, exact=False: described.append(dict(args)) or real(args, exclude=exclude, exact=exact)

        @chaos
        def search_kb(query):
            return ["Refunds are issued within 5 days"]

        @chaos(irreversible=True)
        def issue_refund(order_id, amount):
            return {"refund_id": "R-" + order_id}

        with capture_spans() as cap, chaoskit.episode("refund") as ep:
            search_kb("refund policy")
            issue_refund("4832", 129.0)
        spans = {s.name: dict(s.attributes) for s in cap.spans}
        assert described == [{"order_id": "4832", "amount": 129.0}], described
        assert "execute_tool search_kb" not in spans
        refund = spans["execute_tool issue_refund"]
        assert refund["chaoskit.args"] == '{"amount":129.0,"order_id":"4832"}', refund
        assert len(refund["chaoskit.args.hash"]) == 16 and refund["chaoskit.attempt"] == 1
        assert [(a.tool, a.outcome, a.args_hash is None) for a in ep.attempts] == [
            ("search_kb", "ok", True), ("issue_refund", "ok", False)]
        print("OK")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"


def test_disable_switch_is_read_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_from({"type": "error", "tool": "lookup_order"})
    outcomes = []
    with chaoskit.episode("orders", plan=plan) as ep:
        for disabled in (None, "1", "0", None):
            if disabled is None:
                monkeypatch.delenv("CHAOSKIT_DISABLE", raising=False)
            else:
                monkeypatch.setenv("CHAOSKIT_DISABLE", disabled)
            try:
                lookup_order("4832")
                outcomes.append("answered")
            except Exception:
                outcomes.append("failed")
    assert outcomes == ["failed", "answered", "failed", "failed"]
    assert [a.fault_type for a in ep.attempts] == ["error", None, "error", "error"]


def test_a_plan_used_by_an_agent_still_pickles_for_a_worker_process() -> None:
    # a plan's per-tool decision memos are rebuilt where it is used, never shipped with it
    plan = plan_from(
        {"type": "error", "tool": "lookup_order", "every": 2},
        {"type": "timeout", "tool": "lookup_order", "calls": "3-", "probability": 0.5, "after_s": 0},
        seed=5,
    )
    with chaoskit.episode("orders", plan=plan) as ep:
        for _ in range(4):
            try:
                lookup_order("4832")
            except Exception:
                pass
    copy = pickle.loads(pickle.dumps(plan))
    assert copy.to_dict() == plan.to_dict() and copy.source == "<python>"
    assert [copy.decide("lookup_order", a.attempt, None, {}) is not None for a in ep.attempts] == [
        a.fault_type is not None for a in ep.attempts
    ]
