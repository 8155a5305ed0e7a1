"""The shorter call path of ``@chaos`` (its own ``__call__``, the short ok record with tracing off) keeps what
the wrapt call and the full record do: the same attempts, the same arguments, each question asked once."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

import chaoskit
from chaoskit import chaos
from chaoskit.testing import capture_spans, plan_from


def plan(tool: str) -> Any:
    """A plan whose fault targets ``tool`` and never fires: the hot path of the overhead benchmark."""
    return plan_from({"type": "error", "tool": tool, "on_call": 999})


@pytest.mark.parametrize("trace", [True, False])
def test_the_error_result_predicate_is_asked_once_per_call(trace: bool) -> None:
    asked: list[Any] = []

    def full(result: Any) -> bool:
        asked.append(result)
        return result == "no rooms left"

    @chaos(error_result=full)
    def book_room(hotel: str) -> str:
        return "no rooms left" if hotel == "Ritz" else f"booked {hotel}"

    chaoskit.configure(trace=trace)
    try:
        with chaoskit.episode("travel", plan=plan("book_room")) as ep:
            assert book_room("Ibis") == "booked Ibis"
            assert book_room("Ritz") == "no rooms left"
    finally:
        chaoskit.configure(trace=True)
    assert asked == ["booked Ibis", "no rooms left"]
    assert [(a.outcome, a.refused, a.error_message) for a in ep.attempts] == [
        ("ok", False, None),
        ("error", True, "no rooms left"),
    ]


@pytest.mark.parametrize("trace", [True, False])
def test_keyword_and_positional_calls_record_the_same_attempts(trace: bool) -> None:
    @chaos(irreversible=True, idempotency_arg="key")
    def cancel_booking(booking_id: str, reason: str = "changed plans", key: str = "") -> dict[str, str]:
        return {"cancelled": booking_id, "reason": reason}

    chaoskit.configure(trace=trace)
    try:
        with capture_spans() as cap, chaoskit.episode("travel", plan=plan("cancel_booking")) as ep:
            first = cancel_booking("B-1", "flight moved", "k-1")
            second = cancel_booking(booking_id="B-1", reason="flight moved", key="k-1")
    finally:
        chaoskit.configure(trace=True)
    assert first == second == {"cancelled": "B-1", "reason": "flight moved"}
    attempts = ep.attempts
    assert [(a.attempt, a.outcome, a.idempotency_key) for a in attempts] == [(1, "ok", "k-1"), (2, "ok", "k-1")]
    if trace:
        spans = cap.attempt_spans("cancel_booking")
        # the description shows the key; the hash leaves it out, so that retries compare equal
        args = '{"booking_id":"B-1","key":"k-1","reason":"flight moved"}'
        assert [s.attributes["chaoskit.args"] for s in spans] == [args] * 2
        assert attempts[0].args_hash == attempts[1].args_hash is not None
    else:
        assert cap.attempt_spans("cancel_booking") == []


def test_an_async_tool_is_still_a_coroutine_function_and_runs_as_one_attempt() -> None:
    @chaos
    async def search_flights(origin: str, destination: str) -> list[str]:
        await asyncio.sleep(0)
        return [f"{origin}-{destination} 08:15"]

    assert inspect.iscoroutinefunction(search_flights)
    assert list(inspect.signature(search_flights).parameters) == ["origin", "destination"]

    async def agent() -> list[str]:
        async with chaoskit.episode("travel") as ep:
            out = await search_flights("LIS", "BER")
        assert [(a.tool, a.outcome) for a in ep.attempts] == [("search_flights", "ok")]
        return out

    assert asyncio.run(agent()) == ["LIS-BER 08:15"]
