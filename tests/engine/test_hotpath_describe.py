"""The faster argument description changes nothing a check reads: the same ``chaoskit.args`` and
``chaoskit.args.hash`` as before (pinned values, in this process and in another), secret-looking keys in any
row of a table redacted, and a table of any size described by its first rows at a bounded cost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import chaoskit
from chaoskit import chaos
from chaoskit.testing import capture_spans, plan_from


@chaos
def lookup_order(order_id: str, verbose: bool = False) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "delivered"}


@chaos
def refund_note(order_id: str, note: str) -> str:
    """Write a note on a refund."""
    return f"noted on {order_id}"


@chaos
def import_rows(rows: list[dict[str, Any]]) -> int:
    """Import rows of a spreadsheet (the commonest large argument)."""
    return len(rows)


PLAN = plan_from({"type": "error", "tool": ["lookup_order", "refund_note", "import_rows"], "on_call": 999})


def _table(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "qty": i % 7, "sku": f"SKU-{i:04d}"} for i in range(n)]


def _described(call: Any) -> tuple[str, str]:
    """``(chaoskit.args, chaoskit.args.hash)`` of the one attempt ``call()`` makes, inside an episode."""
    with capture_spans() as cap, chaoskit.episode("orders", plan=PLAN):
        call()
    (span,) = cap.attempt_spans()
    attrs = span.attributes or {}
    return str(attrs["chaoskit.args"]), str(attrs["chaoskit.args.hash"])


# hashes taken with the code before the hot-path work (git df3ef28): one digest for one set of arguments,
# whichever SHA-256 implementation computes it and whichever walk finds that they fit the cap
PINNED = [
    (lambda: lookup_order("4832"), "59cd397a40bfdac3"),
    (lambda: refund_note("4832", "please refund the whole order, the parcel arrived broken"), "d1bd315daf55be7d"),
    (lambda: import_rows(_table(10)), "b9da8fd040c5fb9e"),
    (lambda: import_rows(_table(40)), "8cc78e242b23ad8d"),
]


@pytest.mark.parametrize(("call", "expected"), PINNED, ids=["short", "long", "10 rows", "40 rows"])
def test_the_args_hash_is_the_one_recorded_before(call: Any, expected: str) -> None:
    text, digest = _described(call)
    assert digest == expected
    # a description that fits the cap is the arguments whole, as canonical JSON
    assert json.loads(text) == json.loads(json.dumps(json.loads(text), sort_keys=True))


def test_another_process_gives_the_same_hashes() -> None:
    code = textwrap.dedent(
        """
        import chaoskit
        from chaoskit import chaos
        from chaoskit.testing import capture_spans

        @chaos
        def lookup_order(order_id, verbose=False):
            return order_id

        @chaos
        def import_rows(rows):
            return len(rows)

        with capture_spans() as cap, chaoskit.episode("orders"):
            lookup_order("4832")
            import_rows([{"id": i, "qty": i % 7, "sku": f"SKU-{i:04d}"} for i in range(40)])
        print(" ".join(s.attributes["chaoskit.args.hash"] for s in cap.attempt_spans()))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["59cd397a40bfdac3", "8cc78e242b23ad8d"]


def test_a_secret_looking_key_in_any_row_of_a_table_is_redacted() -> None:
    def rows(secret: str) -> list[dict[str, Any]]:
        table = _table(12)
        table[7] = {"id": 7, "api_key": secret, "qty": 1}
        return table

    text_a, hash_a = _described(lambda: import_rows(rows("sk-live-1111")))
    text_b, hash_b = _described(lambda: import_rows(rows("sk-live-2222")))
    assert "sk-live" not in text_a and "sk-live" not in text_b
    assert json.loads(text_a)["rows"][7] == {"api_key": "[REDACTED]", "id": 7, "qty": 1}
    # the hash never sees the secret: a refreshed key is the same call
    assert hash_a == hash_b
    # and every other row is kept as it was
    assert json.loads(text_a)["rows"][:7] == _table(7)


def test_rows_with_nested_values_or_odd_keys_are_described_whole() -> None:
    table: list[dict[Any, Any]] = _table(5)
    table[1] = {"id": 1, "tags": ["gift", "fragile"], "dims": {"w": 2, "h": 3}}
    table[3] = {1: "int key", "id": 3}
    text, _ = _described(lambda: import_rows(table))
    rows = json.loads(text)["rows"]
    assert rows[1] == {"dims": {"h": 3, "w": 2}, "id": 1, "tags": ["gift", "fragile"]}
    assert rows[3] == {"1": "int key", "id": 3}
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 4]


def test_a_200000_row_table_is_described_by_its_first_rows() -> None:
    big = [{"id": i, "qty": i % 7} for i in range(200_000)]
    text, digest = _described(lambda: import_rows(big))
    rows = json.loads(text)["rows"]
    assert rows[:16] == big[:16]
    assert rows[16] == "…[+199984 items]"
    assert digest == "52abbddef487ba17"  # as before the hot-path work


def test_a_wrapped_bound_method_is_called_with_its_receiver_and_does_not_record_it() -> None:
    class Desk:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def escalate(self, ticket: str, urgent: bool = False) -> str:
            self.calls.append(ticket)
            return f"{ticket} escalated"

    desk = Desk()
    escalate = chaos(desk.escalate)
    text, _ = _described(lambda: escalate("T-7", urgent=True))
    assert desk.calls == ["T-7"]
    assert json.loads(text) == {"ticket": "T-7", "urgent": True}
    # outside any episode or plan the wrapper still calls straight through
    assert escalate("T-8") == "T-8 escalated"
