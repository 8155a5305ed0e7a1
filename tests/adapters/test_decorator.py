"""@chaos keeps what it wraps intact and sends every call through one attempt engine."""

from __future__ import annotations

import inspect
import typing

import pytest

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.testing import attempt_attributes, capture_spans


def test_keeps_signature_name_doc_hints_and_coroutine_flag() -> None:
    def plain(order_id: str, amount: float = 1.0) -> dict[str, float]:
        """Refund an order."""
        return {order_id: amount}

    async def coro(q: str) -> list[str]:
        return [q]

    w = chaos(plain)
    assert inspect.signature(w) == inspect.signature(plain)
    assert w.__name__ == "plain" and w.__doc__ == "Refund an order."
    assert typing.get_type_hints(w) == typing.get_type_hints(plain)
    assert not inspect.iscoroutinefunction(w)
    assert inspect.iscoroutinefunction(chaos(coro))
    assert w("a", 2.0) == {"a": 2.0}


def test_pinned_plan_name_and_forms() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "refund", "on_call": 1}])

    @chaos(plan, name="refund")
    def issue_refund() -> str:
        return "ok"

    @chaos(plan=plan, name="other")
    def other() -> str:
        return "ok"

    with pytest.raises(ConnectionResetError):
        issue_refund()
    assert issue_refund() == "ok"
    assert other() == "ok"
    plan.reset()
    with pytest.raises(ConnectionResetError):
        issue_refund()  # counters start again after reset


def test_bad_decorator_arguments() -> None:
    with pytest.raises(TypeError, match="expected a function or a Plan"):
        chaos(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="has no such parameter"):

        @chaos(idempotency_arg="key")
        def f(x: int) -> int:
            return x


def test_methods_static_and_class_methods() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "*", "match": {"x": 13}}])

    class Svc:
        def __init__(self) -> None:
            self.k = 1

        @chaos
        def m(self, x: int) -> int:
            return x + self.k

        @chaos
        @staticmethod
        def s(x: int) -> int:
            return x

        @chaos
        @classmethod
        def c(cls, x: int) -> int:
            return x

        @classmethod
        @chaos
        def c2(cls, x: int) -> int:
            return x

    with capture_spans() as cap, chaoskit.episode("t", plan=plan):
        assert (Svc().m(1), Svc.s(2), Svc().s(3), Svc.c(4), Svc.c2(5)) == (2, 2, 3, 4, 5)
        for call in (lambda: Svc().m(13), lambda: Svc.s(13), lambda: Svc.c(13), lambda: Svc.c2(13)):
            with pytest.raises(ConnectionResetError):
                call()
    args = [a["chaoskit.args"] for a in attempt_attributes(cap)]
    # bound arguments by name, without self/cls
    assert args[:5] == ['{"x":1}', '{"x":2}', '{"x":3}', '{"x":4}', '{"x":5}']


def test_original_exception_is_reraised_unchanged() -> None:
    err = KeyError("missing")

    @chaos
    def lookup() -> None:
        raise err

    with pytest.raises(KeyError) as info, chaoskit.episode("t", plan=Plan()):
        lookup()
    assert info.value is err


def test_on_attempt_hooks_get_frozen_details_and_cannot_break_the_agent() -> None:
    seen: list[chaoskit.AttemptInfo] = []

    def bad_hook(info: chaoskit.AttemptInfo) -> None:
        raise RuntimeError("hook bug")

    chaoskit.configure(on_attempt=[seen.append, bad_hook])

    @chaos
    def t(x: int) -> int:
        return x

    assert t(5) == 5
    assert len(seen) == 1 and seen[0].tool == "t" and seen[0].outcome == "ok"
    with pytest.raises(AttributeError):
        seen[0].tool = "x"  # type: ignore[misc]


def test_episode_lists_attempts_and_records_crash() -> None:
    plan = Plan(faults=[{"type": "http", "tool": "t", "status": 500}])

    @chaos
    def t() -> None:
        return None

    with capture_spans() as cap:
        with pytest.raises(chaoskit.ToolHTTPError), chaoskit.episode("crashy", plan=plan) as ep:
            t()
    assert ep.outcome == "crashed"
    assert [a.fault_type for a in ep.attempts] == ["http"]
    root = next(s for s in cap.spans if s.name == "invoke_agent crashy")
    assert root.attributes["chaoskit.episode.outcome"] == "crashed"
    assert root.attributes["error.type"] == "ToolHTTPError"


def test_chaos_on_a_langchain_tool_makes_a_chaos_tool() -> None:
    lc_tools = pytest.importorskip("langchain_core.tools")

    @lc_tools.tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id}: shipped"

    wrapped = chaos(Plan(faults=[{"type": "error", "tool": "lookup", "on_call": 1}]))(lookup)
    assert wrapped.name == "lookup" and wrapped.description == "Look up an order."
    with capture_spans() as cap:
        with pytest.raises(ConnectionResetError):
            wrapped.invoke({"order_id": "1"})
        assert wrapped.invoke({"order_id": "1"}) == "order 1: shipped"
    assert [a["chaoskit.outcome"] for a in attempt_attributes(cap, "lookup")] == ["error", "ok"]
    with pytest.raises(TypeError, match="do not apply to a LangChain tool"):
        chaos(name="other")(lookup)


def test_results_are_not_kept_unless_a_stale_fault_needs_them() -> None:
    import gc
    import weakref

    class Rows(list):  # type: ignore[type-arg]
        pass

    refs: list[weakref.ref[Rows]] = []

    @chaos
    def rows() -> Rows:
        r = Rows([1, 2])
        refs.append(weakref.ref(r))
        return r

    with chaoskit.episode("t", plan=Plan(faults=[{"type": "latency", "tool": "rows", "delay_s": 0}])):
        rows()
        gc.collect()
        assert refs[0]() is None  # nothing in chaoskit holds on to the tool's result
    with chaoskit.episode("t", plan=Plan(faults=[{"type": "garbage", "tool": "rows", "stale": True}])):
        first = rows()
        first.append(99)  # the agent changes what it got; the stale replay is what the tool returned
        again = rows()
        assert again == [1, 2] and again is not first
