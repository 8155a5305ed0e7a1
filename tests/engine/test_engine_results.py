"""What the engine records about how an attempt ended: returned errors (refusals), idempotent tools,
cancellation, skipped faults that keep their budget, and episodes exited in another context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from _helpers import run

import chaoskit
from chaoskit import AttemptInfo, Plan, ToolSpec, chaos, telemetry
from chaoskit.testing import attempt_attributes, capture_spans

# -- tools as an agent would meet them ----------------------------------------------------------------------

BANK: dict[str, list[dict[str, Any]]] = {}


@chaos(irreversible=True)
def send_money(recipient: str, amount: float, reference: str) -> dict[str, Any]:
    """Transfer money; the bank refuses a transfer it has already made, by returning an error."""
    sent = BANK.setdefault(recipient, [])
    if any(t["reference"] == reference for t in sent):
        return {"error": f"duplicate transfer: reference {reference} was already paid to {recipient}"}
    sent.append({"amount": amount, "reference": reference})
    return {"status": "sent", "amount": amount, "recipient": recipient, "reference": reference}


@pytest.fixture(autouse=True)
def _empty_bank() -> Iterator[None]:
    BANK.clear()
    yield
    BANK.clear()


# -- returned errors --------------------------------------------------------------------------------------------


def test_a_duplicate_refused_by_the_tool_is_recorded_as_a_refused_error_and_returned_unchanged() -> None:
    def agent() -> str:
        first = send_money("GB29NWBK60161331926819", 120.0, "INV-2024-118")
        second = send_money("GB29NWBK60161331926819", 120.0, "INV-2024-118")
        assert second == {
            "error": "duplicate transfer: reference INV-2024-118 was already paid to GB29NWBK60161331926819"
        }
        return f"Paid {first['amount']} once; the bank refused the repeat."

    with capture_spans() as cap:
        trace = run(Plan(), agent)
    ok, refused = attempt_attributes(cap, "send_money")
    assert ok["chaoskit.outcome"] == "ok" and "chaoskit.tool.refused" not in ok
    assert refused["chaoskit.outcome"] == "error"
    assert refused["chaoskit.tool.executed"] is True
    assert refused["chaoskit.fault.injected"] is False
    assert refused["chaoskit.tool.refused"] is True
    assert refused["error.type"] == "ReturnedError"
    # the trace reader gets the same record, message included
    records = trace.episodes[0].attempts
    assert [(r.outcome, r.refused, r.error_type) for r in records] == [
        ("ok", False, None),
        ("error", True, "ReturnedError"),
    ]
    assert records[1].error_message == (
        "duplicate transfer: reference INV-2024-118 was already paid to GB29NWBK60161331926819"
    )
    assert records[1].may_have_written is False


def test_an_mcp_result_with_is_error_is_a_returned_error_as_dict_and_as_object() -> None:
    @chaos
    def create_issue(repo: str, title: str) -> Any:
        return {"content": [{"type": "text", "text": "403: Resource not accessible by integration"}], "isError": True}

    @chaos
    def list_files(path: str) -> Any:
        block = SimpleNamespace(type="text", text=f"ENOENT: no such directory {path}")
        return SimpleNamespace(content=[block], isError=True)

    with telemetry.capture() as cap, chaoskit.episode("mcp") as ep:
        out = create_issue("acme/shop", "Checkout fails on Safari")
        listing = list_files("/srv/app/config")
    assert out["isError"] is True and listing.isError is True  # unchanged for the caller
    trace = cap.trace()
    [issue] = [a for a in trace.episodes[0].attempts if a.tool == "create_issue"]
    [files] = [a for a in trace.episodes[0].attempts if a.tool == "list_files"]
    assert (issue.outcome, issue.refused, issue.error_message) == (
        "error",
        True,
        "403: Resource not accessible by integration",
    )
    assert (files.outcome, files.refused, files.error_message) == (
        "error",
        True,
        "ENOENT: no such directory /srv/app/config",
    )
    assert [(a.tool, a.outcome, a.refused, a.error_type) for a in ep.attempts] == [
        ("create_issue", "error", True, "ReturnedError"),
        ("list_files", "error", True, "ReturnedError"),
    ]


def test_results_that_merely_mention_errors_are_successes() -> None:
    @chaos
    def search_logs(query: str) -> Any:
        # a search *for* errors, an MCP success, a list of error records: all answers, none a refusal
        return {"error": "timeout", "count": 3} if query == "count" else [{"error": "ECONNRESET", "at": "12:01"}]

    @chaos
    def mcp_read(uri: str) -> Any:
        return {"content": [{"type": "text", "text": "error budget: 2%"}], "isError": False}

    @chaos
    def blank(query: str) -> Any:
        return {"error": None}

    with chaoskit.episode("logs") as ep:
        search_logs("count")
        search_logs("list")
        mcp_read("file:///slo.md")
        blank("x")
    assert [(a.outcome, a.refused) for a in ep.attempts] == [("ok", False)] * 4


@pytest.mark.parametrize(
    ("error_result", "result", "expected"),
    [
        ("errors", {"errors": ["amount must be positive"], "data": None}, "amount must be positive"),
        ("errors", {"errors": [], "data": {"id": 7}}, None),
        (lambda r: r.get("ok") is False, {"ok": False, "reason": "card declined"}, "card declined"),
        (lambda r: "card declined" if r.get("code") == 402 else None, {"code": 402}, "card declined"),
        (lambda r: r.get("ok") is False, {"ok": True}, None),
        # False turns the defaults off: this tool's {"error": ...} is data
        (False, {"error": "E42"}, None),
    ],
    ids=["key-hit", "key-empty", "predicate-true", "predicate-message", "predicate-false", "off"],
)
def test_error_result_per_tool(error_result: Any, result: Any, expected: str | None) -> None:
    @chaos(error_result=error_result)
    def charge(card: str, amount: float) -> Any:
        return result

    with chaoskit.episode("pay") as ep:
        assert charge("4242424242424242", 30.0) is result
    (info,) = ep.attempts
    assert (info.outcome, info.refused, info.error_message) == (
        ("ok", False, None) if expected is None else ("error", True, expected)
    )


def test_a_broken_predicate_is_logged_once_and_the_call_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    @chaos(error_result=lambda r: r["status"] == "failed")
    def lookup(order_id: str) -> Any:
        return ["4832"]

    with chaoskit.episode("x") as ep:
        assert lookup("4832") == ["4832"]
        assert lookup("4833") == ["4832"]
    assert [a.outcome for a in ep.attempts] == ["ok", "ok"]
    lines = [r.getMessage() for r in caplog.records if "error_result" in r.getMessage()]
    assert lines == [
        "chaoskit: the error_result predicate of lookup raised TypeError: list indices must be "
        "integers or slices, not str; its results are taken as successes"
    ]
    assert all(r.exc_info is None for r in caplog.records)


def test_a_refused_call_gets_no_data_fault_and_the_fault_keeps_its_budget() -> None:
    # the write is faulted once, from the second call on (the first transfer goes through)
    plan = Plan(
        faults=[{"type": "http", "tool": "send_money", "status": 500, "after_write": True, "times": 1, "calls": "2-"}]
    )

    def agent() -> None:
        send_money("DE89370400440532013000", 40.0, "R-1")
        with pytest.warns(
            chaoskit.ChaosWarning,
            match=r"\(http\) on send_money call 2 was not injected: the tool "
            r"returned an error instead of a result \(duplicate",
        ):
            refused = send_money("DE89370400440532013000", 40.0, "R-1")
        assert refused["error"].startswith("duplicate transfer")
        # the budget was not used up by the refused call: the next real write gets the fault
        with pytest.raises(chaoskit.ToolHTTPError):
            send_money("DE89370400440532013000", 15.0, "R-2")

    trace = run(plan, agent)
    records = trace.episodes[0].attempts
    assert [(r.outcome, r.refused, r.fault_type, r.fault_skipped, r.injected) for r in records] == [
        ("ok", False, None, None, False),
        ("error", True, None, "http", False),
        ("error", False, "http", None, True),
    ]


# -- idempotent tools --------------------------------------------------------------------------------------------


def test_idempotent_is_recorded_only_when_declared() -> None:
    @chaos(idempotent=True, irreversible=True)
    def lock_doors(vehicle_id: str) -> dict[str, Any]:
        return {"vehicle_id": vehicle_id, "locked": True}

    with capture_spans() as cap, chaoskit.episode("car") as ep:
        lock_doors("VIN-5YJ3E1EA7KF")
        lock_doors("VIN-5YJ3E1EA7KF")
        send_money("FR1420041010050500013M02606", 9.5, "parking")
    locks = attempt_attributes(cap, "lock_doors")
    assert [a["chaoskit.tool.idempotent"] for a in locks] == [True, True]
    (pay,) = attempt_attributes(cap, "send_money")
    assert "chaoskit.tool.idempotent" not in pay
    assert [(a.tool, a.idempotent) for a in ep.attempts] == [
        ("lock_doors", True),
        ("lock_doors", True),
        ("send_money", False),
    ]
    trace = cap.trace()
    assert [(a.tool, a.idempotent) for a in trace.episodes[0].attempts] == [
        ("lock_doors", True),
        ("lock_doors", True),
        ("send_money", False),
    ]


# -- cancellation ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_a_base_exception_in_a_sync_tool_is_re_raised_untouched_and_recorded_as_cancelled(
    exc_type: type[BaseException],
) -> None:
    stop = exc_type()

    @chaos
    def long_report(quarter: str) -> str:
        raise stop

    seen: list[AttemptInfo] = []
    chaoskit.configure(on_attempt=seen.append)
    with capture_spans() as cap, pytest.raises(exc_type) as raised:
        long_report("2024-Q3")
    assert raised.value is stop
    (attrs,) = attempt_attributes(cap, "long_report")
    assert attrs["chaoskit.outcome"] == "cancelled"
    assert attrs["error.type"] == exc_type.__qualname__
    assert attrs["chaoskit.tool.executed"] is True and attrs["chaoskit.fault.injected"] is False
    assert [(i.outcome, i.error_type) for i in seen] == [("cancelled", exc_type.__qualname__)]
    assert cap.trace().episodes[0].attempts[0].outcome == "cancelled"


def test_a_cancelled_async_tool_is_recorded_as_cancelled_not_error() -> None:
    started = asyncio.Event()

    @chaos
    async def fetch_page(url: str) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    async def main() -> None:
        task = asyncio.create_task(fetch_page("https://status.example.com/incidents"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with capture_spans() as cap:
        asyncio.run(main())
    (attrs,) = attempt_attributes(cap, "fetch_page")
    assert (attrs["chaoskit.outcome"], attrs["error.type"]) == ("cancelled", "CancelledError")


# -- skipped faults keep their budget ----------------------------------------------------------------------------


def test_a_fault_the_entry_point_cannot_inject_keeps_its_times_budget() -> None:
    spec = ToolSpec(name="lookup_order")
    order = {"order_id": "4832", "items": ["kettle", "mug"], "status": "shipped"}
    plan = Plan(faults=[{"type": "empty", "tool": "lookup_order", "times": 1}])
    cannot = {"on": True}

    def veto(fault: Any) -> str | None:
        return "this entry point cannot replace results" if cannot["on"] else None

    with chaoskit.episode("orders", plan=plan):
        with pytest.warns(chaoskit.ChaosWarning, match="call 1 was not injected: this entry point cannot"):
            first = chaoskit.begin(spec, {"order_id": "4832"}, cannot_inject=veto)
        assert first.fault is None and first.skipped == "empty"
        first.succeed(order)
        cannot["on"] = False
        second = chaoskit.begin(spec, {"order_id": "4832"}, cannot_inject=veto)
        # before the fix the skipped call used up times: 1 and the second call ran unfaulted
        assert second.fault is not None and second.fault.type == "empty"
        assert second.run_sync(lambda: order, (), {}) == {"order_id": "4832", "items": [], "status": "shipped"}
        third = chaoskit.begin(spec, {"order_id": "4832"}, cannot_inject=veto)
        assert third.fault is None
        third.succeed(order)


# -- episodes exited somewhere else ---------------------------------------------------------------------------


def _exit_in_thread(ep: chaoskit.Episode) -> None:
    errors: list[BaseException] = []

    def close() -> None:
        try:
            ep.__exit__(None, None, None)
        except BaseException as exc:  # pragma: no cover - the failure this test guards against
            errors.append(exc)

    t = threading.Thread(target=close)
    t.start()
    t.join()
    assert errors == []


def test_an_episode_exited_in_another_thread_ends_with_its_spans() -> None:
    with telemetry.capture() as cap:
        ep = chaoskit.episode("callback-run").__enter__()
        send_money("NL91ABNA0417164300", 12.0, "T-1")
        _exit_in_thread(ep)
        assert chaoskit.current_episode() is None  # the ended episode no longer collects this thread's calls
        send_money("NL91ABNA0417164300", 13.0, "T-2")
    assert ep.outcome == "completed"
    roots = [s for s in cap.spans if s.name == "invoke_agent callback-run"]
    assert len(roots) == 1 and roots[0].attributes["chaoskit.episode.attempts"] == 1
    assert [a.tool for a in ep.attempts] == ["send_money"]


def test_an_episode_after_one_exited_in_another_thread_starts_its_own_trace() -> None:
    with telemetry.capture() as cap:
        ep = chaoskit.episode("callback-run").__enter__()
        _exit_in_thread(ep)
        with chaoskit.episode("next-run"):
            send_money("NL91ABNA0417164300", 14.0, "T-3")
    (first,) = [s for s in cap.spans if s.name == "invoke_agent callback-run"]
    (second,) = [s for s in cap.spans if s.name == "invoke_agent next-run"]
    # the ended episode's span stayed current in this thread; the next episode is not its child
    assert second.parent is None
    assert second.context.trace_id != first.context.trace_id


def test_an_episode_in_a_generator_resumed_in_another_context_ends_cleanly() -> None:
    def steps() -> Iterator[str]:
        with chaoskit.episode("streamed") as ep:
            send_money("IT60X0542811101000000123456", 5.0, "S-1")
            yield ep.id
            yield "paid"

    gen = steps()
    with telemetry.capture() as cap:
        contextvars.copy_context().run(next, gen)
        # LangChain callbacks and streaming servers resume generators from a fresh context
        assert contextvars.copy_context().run(next, gen) == "paid"
        with pytest.raises(StopIteration):
            contextvars.copy_context().run(next, gen)
    (root,) = [s for s in cap.spans if s.name == "invoke_agent streamed"]
    assert root.attributes["chaoskit.episode.outcome"] == "completed"
    assert root.attributes["chaoskit.episode.attempts"] == 1


def test_an_episode_exited_in_another_asyncio_task_ends_cleanly() -> None:
    async def main() -> chaoskit.Episode:
        ep = await chaoskit.episode("tasks").__aenter__()
        send_money("ES9121000418450200051332", 8.0, "A-1")
        await asyncio.create_task(ep.__aexit__(None, None, None))
        return ep

    with telemetry.capture() as cap:
        ep = asyncio.run(main())
    assert ep.outcome == "completed" and len(ep.attempts) == 1
    assert [s.name for s in cap.spans if s.name.startswith("invoke_agent")] == ["invoke_agent tasks"]
