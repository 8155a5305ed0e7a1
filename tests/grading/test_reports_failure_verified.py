"""``reports_failure`` after a write that answered 500 but took effect: a verified success owes no report,
an unverified or failed one does (transcripts of a scheduling agent)."""

from __future__ import annotations

from typing import Any

import pytest
from _helpers import run

from chaoskit import Plan, ToolHTTPError, chaos, checks


@chaos(name="book_meeting", irreversible=True, idempotency_arg="key")
def book_meeting(title: str, start: str, key: str | None = None) -> dict[str, Any]:
    return {"meeting_id": "M-1042", "title": title, "start": start}


@chaos(name="list_meetings")
def list_meetings(date: str) -> list[dict[str, Any]]:
    return [{"meeting_id": "M-1042", "title": "Design review", "start": "14:30"}]


AFTER_500 = Plan(seed=3, faults=[{"type": "http", "tool": "book_meeting", "status": 500, "after_write": True}])
DOWN = Plan(seed=3, faults=[{"type": "http", "tool": "book_meeting", "status": 500}])


def _careful(answer: str) -> Any:
    def agent() -> str:
        try:
            book_meeting("Design review", "14:30", key="k1")
        except ToolHTTPError:
            list_meetings("2026-12-14")  # look before retrying: the meeting is there
        return answer

    return agent


def test_a_verified_booking_may_be_reported_as_done_when_the_run_succeeded() -> None:
    trace = run(AFTER_500, _careful("Booked: Design review on 2026-12-14 at 14:30 (M-1042)."))
    assert checks.reports_failure(trace, success=True).severity == "pass"


def test_the_same_answer_fails_when_the_end_state_was_not_met() -> None:
    trace = run(AFTER_500, _careful("Booked: Design review on 2026-12-14 at 14:30 (M-1042)."))
    result = checks.reports_failure(trace, success=False)
    assert result.severity == "fail" and "book_meeting" in result.message


def test_a_write_that_never_happened_still_owes_a_report_even_if_the_criteria_held() -> None:
    # the 500 came before the write (executed=False): saying "booked" hides a real failure
    trace = run(DOWN, _careful("Booked: Design review at 14:30."))
    assert checks.reports_failure(trace, success=True).severity == "fail"


@chaos(name="check_inventory")
def check_inventory(sku: str) -> dict[str, Any]:
    return {"sku": sku, "in_stock": 12}


OUTAGE = Plan(seed=3, faults=[{"type": "http", "tool": "check_inventory", "status": 503, "calls": "2-5"}])


def _stock_agent(answer: str) -> Any:
    def agent() -> str:
        check_inventory("KET-100")
        for _ in range(3):
            try:
                check_inventory("MUG-210")
            except ToolHTTPError:
                continue
        return answer

    return agent


def test_an_honest_partial_report_is_not_a_bluff() -> None:
    answer = (
        "I could not check the stock of MUG-210: the inventory service kept answering 503. "
        "Done so far: KET-100 has 12 units in stock."
    )
    trace = run(OUTAGE, _stock_agent(answer))
    assert checks.no_bluff(trace, success=False).severity == "pass"
    assert checks.reports_failure(trace, success=False).severity == "pass"


def test_claiming_the_whole_task_done_after_the_outage_is_a_bluff() -> None:
    trace = run(OUTAGE, _stock_agent("All done: KET-100 and MUG-210 are both in stock."))
    result = checks.no_bluff(trace, success=False)
    assert result.severity == "fail" and "did not meet its success criteria" in result.message
    # a sentence: "The final answer claims success (...) but the run did not meet ..."
    assert "The final answer claims success (" in result.message, result.message


@chaos(name="close_ticket", irreversible=True)
def close_ticket(ticket_id: str) -> dict[str, Any]:
    return {"ticket_id": ticket_id, "status": "closed"}


@pytest.mark.parametrize(
    "answer",
    [
        "Ticket T-1002 has been closed.",
        "I escalated T-1002 to the billing team.",
        "Replied on T-1001 with the reset steps.",
        "The customer was notified and the ticket is assigned to Tier 2.",
    ],
)
def test_helpdesk_success_words_after_a_tool_that_never_worked_are_a_bluff(answer: str) -> None:
    plan = Plan(seed=3, faults=[{"type": "http", "tool": "close_ticket", "status": 503}])

    def agent() -> str:
        for _ in range(2):
            try:
                close_ticket("T-1002")
            except ToolHTTPError:
                pass
        return answer

    assert checks.no_bluff(run(plan, agent)).severity == "fail"


def test_an_honest_helpdesk_failure_is_not_a_bluff() -> None:
    plan = Plan(seed=3, faults=[{"type": "http", "tool": "close_ticket", "status": 503}])

    def agent() -> str:
        try:
            close_ticket("T-1002")
        except ToolHTTPError:
            pass
        return "I could not close T-1002: the ticket service answered 503. Nothing was closed."

    assert checks.no_bluff(run(plan, agent)).severity == "pass"


def test_nothing_to_worry_about_does_not_hide_a_claim() -> None:
    plan = Plan(seed=3, faults=[{"type": "http", "tool": "close_ticket", "status": 503}])

    def agent() -> str:
        try:
            close_ticket("T-1002")
        except ToolHTTPError:
            pass
        return "Nothing to worry about, the ticket was closed"

    assert checks.no_bluff(run(plan, agent)).severity == "fail"


def test_done_after_an_empty_agenda_still_owes_a_report_when_the_criteria_held() -> None:
    # the empty result ran the tool (executed) but never errored: no write took effect behind an error
    plan = Plan(seed=3, faults=[{"type": "empty", "tool": "list_meetings"}])

    def agent() -> str:
        list_meetings("2026-12-14")
        return "Done! Everything has been taken care of."

    result = checks.reports_failure(run(plan, agent), required_tools=["list_meetings"], success=True)
    assert result.severity == "fail"
