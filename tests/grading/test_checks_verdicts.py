"""Every check's verdict on realistic agent transcripts: one where it must fail, one where it must pass (and
the warnings in between), with the exact evidence, severity and message asserted. Here: max_attempts,
min_attempts, no_retry_storm, honors_retry_after and run_checks' parameter errors; duplicate writes and
honesty are in ``test_checks_writes``, no_fabrication in ``test_fabrication``.

Transcripts come two ways: real ``@chaos`` tools run under real plans, and, where the timing or an attribute
must be exact (a returned-error refusal, an idempotent tool, a cancelled attempt, a 2 s Retry-After), OTLP-JSON
spans written as chaoskit's engine writes them and read back with ``Trace.from_otlp_json``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from _helpers import run

import chaoskit
from chaoskit import Plan, Trace, chaos, checks

# --- a transcript written as exported spans -----------------------------------------------------------

T0 = 1_796_000_000.0  # epoch seconds of the episode start


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _ns(seconds: float) -> str:
    return str(round((T0 + seconds) * 1e9))


class Transcript:
    """One episode as its spans: an ``invoke_agent`` root and one ``execute_tool`` span per attempt."""

    TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"

    def __init__(self, name: str, *, output: str | None, outcome: str = "completed", **root: Any) -> None:
        self.name = name
        self.output = output
        self.outcome = outcome
        self.root = {f"chaoskit.episode.{k}": v for k, v in root.items()}
        self.spans: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.root_id = "a000000000000001"

    def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        at: float,
        took: float = 0.05,
        outcome: str = "ok",
        fault: dict[str, Any] | None = None,
        injected: bool = False,
        executed: bool = True,
        error: tuple[str, str] | None = None,
        key_arg: str | None = None,
        **flags: Any,
    ) -> str:
        """Record one attempt; ``fault`` holds ``chaoskit.fault.*`` attributes (``type`` first), ``flags``
        the ``chaoskit.tool.*`` ones (irreversible, idempotent, refused). Returns the span id."""
        n = self.counts[tool] = self.counts.get(tool, 0) + 1
        span_id = f"b{len(self.spans) + 1:015x}"
        hashed = {k: v for k, v in args.items() if k != key_arg}
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "chaoskit.attempt": n,
            "chaoskit.episode.id": "e" * 32,
            "chaoskit.args": json.dumps(args, sort_keys=True),
            "chaoskit.args.hash": hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16],
            "chaoskit.outcome": outcome,
            "chaoskit.tool.executed": executed,
            "chaoskit.tool.irreversible": bool(flags.pop("irreversible", False)),
        }
        if key_arg and args.get(key_arg) is not None:
            attrs["chaoskit.idempotency_key"] = str(args[key_arg])
        attrs.update({f"chaoskit.tool.{k}": v for k, v in flags.items()})
        attrs.update({f"chaoskit.fault.{k}": v for k, v in (fault or {}).items()})
        events: list[dict[str, Any]] = []
        if outcome != "ok":
            attrs["chaoskit.fault.injected"] = injected
        if error is not None:
            attrs["error.type"] = error[0]
            events.append(
                {
                    "timeUnixNano": _ns(at + took),
                    "name": "exception",
                    "attributes": [
                        {"key": "exception.type", "value": _value(error[0])},
                        {"key": "exception.message", "value": _value(error[1])},
                    ],
                }
            )
        self.spans.append(
            {
                "traceId": self.TRACE_ID,
                "spanId": span_id,
                "parentSpanId": self.root_id,
                "name": f"execute_tool {tool}",
                "kind": 1,
                "startTimeUnixNano": _ns(at),
                "endTimeUnixNano": _ns(at + took),
                "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
                "events": events,
            }
        )
        return span_id

    def trace(self) -> Trace:
        end = max([0.0, *((int(s["endTimeUnixNano"]) / 1e9) - T0 for s in self.spans)]) + 0.5
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.name,
            "chaoskit.episode.id": "e" * 32,
            "chaoskit.episode.outcome": self.outcome,
            **self.root,
        }
        if self.output is not None:
            attrs["chaoskit.episode.output"] = self.output
        root = {
            "traceId": self.TRACE_ID,
            "spanId": self.root_id,
            "name": f"invoke_agent {self.name}",
            "kind": 1,
            "startTimeUnixNano": _ns(0),
            "endTimeUnixNano": _ns(end),
            "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
        }
        return Trace.from_otlp_json(
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": []},
                        "scopeSpans": [{"scope": {"name": "chaoskit"}, "spans": [root, *self.spans]}],
                    }
                ]
            }
        )


HTTP_500_AFTER_WRITE = {"type": "http", "http.status": 500, "after_write": True}
RATE_LIMIT_2S = {"type": "rate_limit", "http.status": 429, "retry_after": 2.0}
HTTP_ERROR = ("ToolHTTPError", "issue_refund: HTTP 500 Internal Server Error")
REFUND: dict[str, Any] = {"order_id": "4832", "amount": 49.99, "reason": "damaged in transit"}

# --- real tools: a support agent and a travel agent ----------------------------------------------------

REFUNDS: list[str] = []


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    REFUNDS.clear()
    yield


@chaos(name="issue_refund", irreversible=True, idempotency_arg="idempotency_key")
def issue_refund(order_id: str, amount: float, reason: str, idempotency_key: str | None = None) -> dict[str, Any]:
    REFUNDS.append(order_id)
    return {"refund_id": f"re_{order_id}", "order_id": order_id, "amount": amount, "status": "succeeded"}


@chaos(name="search_flights")
def search_flights(origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    return [{"flight": "UA 1534", "origin": origin, "destination": destination, "date": date, "fare": 318.4}]


@chaos(name="get_order")
def get_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "delivered", "total": 49.99}


def _try(call: Any, times: int) -> Any:
    for _ in range(times):
        try:
            return call()
        except Exception:
            continue
    return None


def _ids(trace: Trace, tool: str | None = None) -> list[str]:
    return [a.span_id for a in trace.attempts if tool is None or a.tool == tool]


FLIGHTS = {"origin": "SFO", "destination": "JFK", "date": "2026-12-18"}
FLIGHTS_DOWN = Plan(
    seed=3,
    faults=[
        {
            "type": "error",
            "tool": "search_flights",
            "calls": "1-5",
            "exception": "ConnectionError",
            "error": "flights API unreachable",
        }
    ],
)


# --- max_attempts -------------------------------------------------------------------------------------


def test_max_attempts_fails_with_the_attempts_beyond_the_bound() -> None:
    trace = run(FLIGHTS_DOWN, lambda: str(_try(lambda: search_flights(**FLIGHTS), 6)))
    result = checks.max_attempts(trace, "search_flights", 4)
    assert (result.passed, result.severity) == (False, "fail")
    assert result.message.startswith("search_flights was called 6 times; at most 4 allowed")
    assert "max_retries=3" in result.message
    assert result.evidence == tuple(_ids(trace)[4:])
    assert checks.max_attempts(trace, "search_flights", 6).severity == "pass"


def test_max_attempts_star_bounds_every_tool_and_a_named_tool_overrides_it() -> None:
    def agent() -> str:
        _try(lambda: search_flights(**FLIGHTS), 6)
        get_order("4832")
        return "Found UA 1534."

    trace = run(FLIGHTS_DOWN, agent)
    results = checks.run_checks(trace, ["max_attempts"], max_attempts={"*": 5})
    assert [(r.name, r.severity) for r in results] == [
        ("max_attempts(search_flights, 5)", "fail"),
        ("max_attempts(get_order, 5)", "pass"),
    ]
    assert results[0].evidence == (_ids(trace, "search_flights")[5],)
    # a scenario's max_retries: 4 maps to {"*": 5}; an entry for one tool wins over "*"
    results = checks.run_checks(trace, ["max_attempts"], max_attempts={"*": 1, "search_flights": 6})
    assert [(r.name, r.severity) for r in results] == [
        ("max_attempts(search_flights, 6)", "pass"),
        ("max_attempts(get_order, 1)", "pass"),
    ]
    # "*" also runs with the default checks, and still reports when no tool was called at all
    empty = run(Plan(), lambda: "Nothing to do.")
    names = [r.name for r in checks.run_checks(empty, max_attempts={"*": 5})]
    assert names == [*checks.DEFAULT_CHECKS, "max_attempts(*, 5)"]
    assert checks.max_attempts(empty, "*", 5).message == "Every tool was called at most 5 times per episode."


def test_max_attempts_star_counts_each_tool_separately() -> None:
    t = Transcript("trip", output="Booked UA 1534.")
    for i in range(3):
        t.call("search_flights", FLIGHTS, at=i)
    t.call("book_flight", {"flight": "UA 1534"}, at=4)
    trace = t.trace()
    assert checks.max_attempts(trace, "*", 3).severity == "pass"  # 3 + 1 attempts, never 4 of one tool
    result = checks.max_attempts(trace, "*", 2)
    assert result.severity == "fail" and result.message.startswith("search_flights was called 3 times")
    assert result.evidence == ("b000000000000003",)


# --- min_attempts -------------------------------------------------------------------------------------

TRANSIENT = Plan(seed=3, faults=[{"type": "error", "tool": "search_flights", "on_call": 1}])


def test_min_attempts_fails_when_the_agent_gives_up_after_one_transient_error() -> None:
    trace = run(TRANSIENT, lambda: str(_try(lambda: search_flights(**FLIGHTS), 1)))
    result = checks.min_attempts(trace, "search_flights", 3)
    assert (result.passed, result.severity) == (False, "fail")
    assert "search_flights was given up after once" in result.message
    assert "ConnectionResetError" in result.message and "expected at least 3 attempts" in result.message
    assert result.evidence == tuple(_ids(trace))
    never = checks.min_attempts(run(Plan(), lambda: "I did not search."), "search_flights", 2)
    assert never.severity == "fail" and "search_flights was never called" in never.message
    assert never.evidence == ()


def test_min_attempts_passes_when_the_agent_retries_until_it_works() -> None:
    trace = run(TRANSIENT, lambda: str(_try(lambda: search_flights(**FLIGHTS), 3)))
    assert [a.outcome for a in trace.attempts] == ["error", "ok"]
    result = checks.min_attempts(trace, "search_flights", 3)
    assert (result.severity, result.evidence) == ("pass", ())


def test_a_cancelled_last_attempt_is_an_interruption_not_a_give_up() -> None:
    t = Transcript("trip", output=None, outcome="crashed")
    t.call(
        "search_flights",
        FLIGHTS,
        at=0,
        outcome="error",
        fault={"type": "timeout"},
        injected=True,
        executed=False,
        error=("ToolTimeout", "search_flights did not respond within 5s"),
    )
    t.call("search_flights", FLIGHTS, at=1, outcome="cancelled", executed=True, error=("CancelledError", ""))
    trace = t.trace()
    assert checks.min_attempts(trace, "search_flights", 3).severity == "pass"
    # without the cancellation the same two calls are a give-up
    t2 = Transcript("trip", output=None, outcome="crashed")
    t2.call(
        "search_flights",
        FLIGHTS,
        at=0,
        outcome="error",
        fault={"type": "timeout"},
        injected=True,
        executed=False,
        error=("ToolTimeout", "search_flights did not respond within 5s"),
    )
    assert checks.min_attempts(t2.trace(), "search_flights", 3).severity == "fail"


# --- no_retry_storm -----------------------------------------------------------------------------------


def test_no_retry_storm_fails_on_identical_retries_beyond_the_limit() -> None:
    trace = run(FLIGHTS_DOWN, lambda: str(_try(lambda: search_flights(**FLIGHTS), 6)))
    result = checks.no_retry_storm(trace, 3)
    assert (result.passed, result.severity) == (False, "fail")
    assert "search_flights was called 6 times in a row with identical arguments (limit 3)" in result.message
    assert "an injected ConnectionError on the first call" in result.message
    assert result.evidence == tuple(_ids(trace)[3:])


def test_no_retry_storm_passes_when_the_agent_changes_the_request() -> None:
    dates = iter(["2026-12-18", "2026-12-19", "2026-12-20", "2026-12-21", "2026-12-22", "2026-12-23"])
    trace = run(FLIGHTS_DOWN, lambda: str(_try(lambda: search_flights("SFO", "JFK", next(dates)), 6)))
    assert len(trace.attempts) == 6
    assert checks.no_retry_storm(trace, 3).severity == "pass"


def test_cancelled_attempts_do_not_make_a_storm() -> None:
    t = Transcript("trip", output="Found UA 1534 for $318.40.")
    t.call(
        "search_flights",
        FLIGHTS,
        at=0,
        outcome="error",
        fault={"type": "timeout"},
        injected=True,
        executed=False,
        error=("ToolTimeout", "timed out"),
    )
    for i in range(3):
        t.call("search_flights", FLIGHTS, at=1 + i, outcome="cancelled", error=("CancelledError", ""))
    t.call("search_flights", FLIGHTS, at=5)
    assert checks.no_retry_storm(t.trace(), 3).severity == "pass"


# --- honors_retry_after -------------------------------------------------------------------------------


def _flights_after_429(wait: float) -> Trace:
    t = Transcript("trip", output="UA 1534 leaves SFO at 07:05 for $318.40.")
    t.call(
        "search_flights",
        FLIGHTS,
        at=0,
        took=0.1,
        outcome="error",
        fault=RATE_LIMIT_2S,
        injected=True,
        executed=False,
        error=("ToolHTTPError", "search_flights: HTTP 429 Too Many Requests (Retry-After: 2)"),
    )
    t.call("search_flights", FLIGHTS, at=0.1 + wait)
    return t.trace()


def test_a_retry_sooner_than_retry_after_fails() -> None:
    trace = _flights_after_429(0.3)
    result = checks.honors_retry_after(trace)
    assert (result.passed, result.severity) == (False, "fail")
    assert result.message == (
        "search_flights was retried 0.300s after an HTTP 429 (Retry-After 2s), which asked "
        "to wait 2s: honour Retry-After before the next attempt."
    )
    assert result.evidence == tuple(_ids(trace))


def test_a_retry_after_waiting_out_retry_after_passes() -> None:
    assert checks.honors_retry_after(_flights_after_429(2.1)).severity == "pass"
    assert checks.honors_retry_after(_flights_after_429(2.0)).severity == "pass"


def test_an_immediate_identical_retry_after_a_503_is_a_warning() -> None:
    t = Transcript("trip", output="UA 1534 leaves SFO at 07:05.")
    t.call(
        "search_flights",
        FLIGHTS,
        at=0,
        outcome="error",
        fault={"type": "http", "http.status": 503},
        injected=True,
        executed=False,
        error=("ToolHTTPError", "HTTP 503 Service Unavailable"),
    )
    t.call("search_flights", FLIGHTS, at=0.052)
    result = checks.honors_retry_after(t.trace())
    assert (result.passed, result.severity) == (True, "warn")
    assert "search_flights was retried 2.0ms after an HTTP 503 with the same arguments and no backoff" in result.message
    assert result.evidence == ("b000000000000001", "b000000000000002")


# --- run_checks parameter errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "params", "message"),
    [
        (["nope"], {}, "unknown check 'nope'; known checks: max_attempts, min_attempts"),
        (None, {"max_attempt": {"search": 3}}, "unknown parameter(s) max_attempt; allowed:"),
        ("no_bluff", {}, "names must be a list of check names, not the string 'no_bluff'"),
        (["max_attempts"], {}, "max_attempts needs limits per tool, e.g. max_attempts={'search': 3}"),
        (["min_attempts"], {"min_attempts": ["search"]}, "min_attempts needs limits per tool"),
        (
            None,
            {"max_attempts": {"search": "three"}},
            "max_attempts['search'] must be a whole number >= 0, got 'three'",
        ),
        (None, {"max_attempts": {"*": -1}}, "max_attempts['*'] must be a whole number >= 0, got -1"),
        (None, {"max_attempts": {"search": True}}, "must be a whole number >= 0, got True"),
        (None, {"min_attempts": {"search": 0}}, "min_attempts['search'] must be a whole number >= 1, got 0"),
        (None, {"max_attempts": {"": 3}}, "tool names must be non-empty strings (or '*'), got ''"),
    ],
)
def test_run_checks_rejects_bad_parameters_clearly(names: Any, params: dict[str, Any], message: str) -> None:
    trace = run(Plan(), lambda: str(search_flights(**FLIGHTS)))
    with pytest.raises(chaoskit.ChaoskitError) as info:
        checks.run_checks(trace, names, **params)
    assert message in str(info.value)
