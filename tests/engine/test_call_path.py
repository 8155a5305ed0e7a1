"""One call path: a call that no fault touches, run by the drivers without an Attempt (``call_sync`` /
``call_async``), leaves the same span and the same attempt record as the same call carried out by an
:class:`~chaoskit.engine.Attempt` (``begin(...).run_sync`` / ``run_async``), traced or not, sync or async,
for an ok result, a returned error and a raised exception."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import chaoskit
from chaoskit.engine import AttemptInfo, ToolSpec, begin, call_async, call_sync
from chaoskit.testing import capture_spans, plan_from

SPEC = ToolSpec(name="reserve_seat", irreversible=True, idempotency_arg="key")
PLAN = plan_from({"type": "error", "tool": "reserve_seat", "on_call": 999})  # targets the tool, never fires
CALLS = [
    ({"seat": "12A", "key": "k-1"}, "call-1"),
    ({"seat": "FULL", "key": "k-2"}, None),  # a returned error
    ({"seat": "BAD", "key": "k-3"}, "call-3"),  # raises
]


def reserve_seat(seat: str, key: str) -> dict[str, Any]:
    if seat == "BAD":
        raise ValueError(f"no seat {seat}")
    if seat == "FULL":
        return {"error": "the flight is full"}
    return {"seat": seat, "key": key}


async def reserve_seat_async(seat: str, key: str) -> dict[str, Any]:
    await asyncio.sleep(0)
    return reserve_seat(seat, key)


def run(how: Callable[[dict[str, Any], str | None], Any]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Every call of CALLS made by ``how`` in one episode: the attempt spans' attributes (the episode id left
    out) and the attempts (their times and span ids left out)."""
    with capture_spans() as cap, chaoskit.episode("seats", plan=PLAN) as ep:
        for kwargs, call_id in CALLS:
            try:
                how(kwargs, call_id)
            except ValueError:
                pass
    spans = [{k: v for k, v in (s.attributes or {}).items() if k != "chaoskit.episode.id"} for s in cap.attempt_spans()]
    return spans, [comparable(a) for a in ep.attempts]


def comparable(a: AttemptInfo) -> tuple[Any, ...]:
    return (
        a.tool,
        a.attempt,
        a.outcome,
        a.fault_type,
        a.error_type,
        a.error_message,
        a.injected,
        a.executed,
        a.irreversible,
        a.args_hash,
        a.idempotency_key,
        a.call_id,
        a.refused,
        a.span_id is None,
    )


def plain_sync(kwargs: dict[str, Any], call_id: str | None) -> Any:
    return call_sync(SPEC, reserve_seat, (), kwargs, bound=lambda: kwargs, call_id=call_id)


def attempt_sync(kwargs: dict[str, Any], call_id: str | None) -> Any:
    return begin(SPEC, kwargs, call_id=call_id).run_sync(reserve_seat, (), kwargs)


def plain_async(kwargs: dict[str, Any], call_id: str | None) -> Any:
    return asyncio.run(call_async(SPEC, reserve_seat_async, (), kwargs, bound=lambda: kwargs, call_id=call_id))


def attempt_async(kwargs: dict[str, Any], call_id: str | None) -> Any:
    return asyncio.run(begin(SPEC, kwargs, call_id=call_id).run_async(reserve_seat_async, (), kwargs))


@pytest.mark.parametrize("trace", [True, False], ids=["traced", "tracing-off"])
@pytest.mark.parametrize("pair", [(plain_sync, attempt_sync), (plain_async, attempt_async)], ids=["sync", "async"])
def test_an_unfaulted_call_leaves_the_span_and_record_an_attempt_leaves(trace: bool, pair: tuple[Any, Any]) -> None:
    plain, attempt = pair
    chaoskit.configure(trace=trace)
    try:
        plain_spans, plain_attempts = run(plain)
        attempt_spans, attempt_attempts = run(attempt)
    finally:
        chaoskit.configure(trace=True)
    assert plain_attempts == attempt_attempts
    assert [a[2] for a in plain_attempts] == ["ok", "error", "error"]
    assert [a[10] for a in plain_attempts] == ["k-1", "k-2", "k-3"]  # the idempotency key, traced or not
    assert plain_spans == attempt_spans
    assert [list(s) for s in plain_spans] == [list(s) for s in attempt_spans]  # the same attribute order too
    if trace:
        assert len(plain_spans) == 3
        assert plain_spans[0]["gen_ai.tool.call.id"] == "call-1"
        assert plain_spans[1]["chaoskit.tool.refused"] is True
        assert plain_spans[2]["error.type"] == "ValueError"
        assert all(a[9] is not None for a in plain_attempts)  # the arguments were described and hashed
    else:
        assert plain_spans == []
        assert all(a[9] is None and a[13] for a in plain_attempts)  # nothing described, no span
