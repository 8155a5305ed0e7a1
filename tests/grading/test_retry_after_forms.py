"""A real client's Retry-After reaches the trace whatever form it comes in: seconds, header text, HTTP-date."""

from __future__ import annotations

import datetime
import email.utils
import time
from typing import Any

import pytest

import chaoskit
from chaoskit import checks, telemetry


class RateLimited(Exception):
    """What an HTTP client raises on a 429, with the header as the server sent it."""

    def __init__(self, retry_after: Any) -> None:
        super().__init__("429 Too Many Requests")
        self.status_code = 429
        self.retry_after = retry_after


def _run(retry_after: Any, *, wait: float) -> chaoskit.Trace:
    calls = {"n": 0}

    @chaoskit.chaos()
    def search_flights(route: str) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RateLimited(retry_after)
        return "3 flights"

    with telemetry.capture() as cap, chaoskit.episode("search", {"faults": []}):
        try:
            search_flights("LHR-JFK")
        except RateLimited:
            time.sleep(wait)  # the agent's backoff
            search_flights("LHR-JFK")
    return cap.trace()


def _in_two_seconds() -> str:
    return email.utils.format_datetime(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2), usegmt=True)


@pytest.mark.parametrize("value", [2, 2.0, "2", " 2 ", b"2", datetime.timedelta(seconds=2), "http-date"])
def test_an_immediate_retry_after_a_429_fails_whatever_the_form(value: Any) -> None:
    trace = _run(_in_two_seconds() if value == "http-date" else value, wait=0.0)
    first = trace.episodes[0].attempts[0]
    assert first.retry_after is not None and 1.0 < first.retry_after <= 2.0
    assert checks.honors_retry_after(trace).severity == "fail"


def test_a_retry_that_waited_passes() -> None:
    trace = _run("0.2", wait=0.25)
    assert checks.honors_retry_after(trace).passed


@pytest.mark.parametrize("value", ["soon", "", "-5", "nan", True, None, object()])
def test_a_retry_after_that_is_no_wait_is_not_recorded(value: Any) -> None:
    trace = _run(value, wait=0.0)
    assert trace.episodes[0].attempts[0].retry_after is None
    assert trace.episodes[0].attempts[0].http_status == 429
