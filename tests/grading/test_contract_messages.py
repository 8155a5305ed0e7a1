"""Trace findings must not accuse a tool whose own errors do inform the agent: in another script, as a domain
exception that repeats its name, or with the wait to honour said in words; and must catch the empty ones that
pass for words ("None", "null", "[object Object]", "E_UNKNOWN").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.grading._contracts import states_wait, uninformative
from chaoskit.runner._battery import run_battery


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("Заказ не найден: товаров нет", "ApiError"),
        ("注文 42 が見つかりません", "ApiError"),
        ("找不到订单 42", "ApiError"),
        ("Pedido 42 no encontrado", "ApiError"),
        ("insufficient funds", "InsufficientFundsError"),
        ("Order not found", "OrderNotFoundError"),
        ("Card declined", "CardDeclinedError"),
        ("Invoice already paid", "InvoiceAlreadyPaidError"),
    ],
)
def test_errors_that_say_what_failed_are_informative(message: str, error_type: str) -> None:
    assert not uninformative(message, error_type)


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("None", "RuntimeError"),
        ("null", None),
        ("undefined", None),
        ("[object Object]", None),
        ("Invalid request", "ValueError"),
        ("invalid_request", None),
        ("E_UNKNOWN", None),
        ("Runtime error", "RuntimeError"),
    ],
)
def test_errors_that_only_look_like_words_are_uninformative(message: str, error_type: str | None) -> None:
    assert uninformative(message, error_type)


def test_a_wait_said_in_words_is_a_retry_after() -> None:
    assert states_wait("Rate limit exceeded: retry after 30 seconds")
    assert states_wait("Rate limit exceeded (Retry-After: 30)")
    assert states_wait("Too many requests, try again in 2 s")
    assert not states_wait("HTTP 429: too many requests")
    assert not states_wait("Rate limit exceeded, retry later")


def test_an_api_whose_errors_inform_gives_no_trace_finding(tmp_path: Path) -> None:
    # each tool fails with an informative error: a domain exception, a 429 that says how long to wait, Russian
    (tmp_path / "all.yaml").write_text(
        'name: api-all\ntask: "Summarise orders and products, and pay INV-1."\n'
        "agent: examples.suggest.pitfalls:api_agent\nsuccess:\n  checks: [no_bluff]\n",
        encoding="utf-8",
    )
    result = run_battery([tmp_path], contracts=False)  # the trace's findings alone, not the tools' declarations
    (e,) = result.episodes
    assert e.attempts["total"] == 3 and e.attempts["contract_findings"] == []
    assert result.summary.contracts == []
