"""Grade an agent's recovery from its exported trace file (no network, no API key).

    python examples/grade_trace.py [OUT.jsonl]

A tiny refund agent runs under a fault plan: its refund call fails with an HTTP 500 *after* the refund
was written, and it retries without an idempotency key. Its spans go to an OTLP-JSON Lines file (the
same format an OTel Collector's file exporter writes); the file is then read back and graded, exactly as
``chaoskit check OUT.jsonl`` would do in CI.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import chaoskit
from chaoskit import Plan, Trace, chaos, checks, telemetry

PLAN = Plan.from_yaml("""
seed: 7
faults:
  - {type: http, tool: issue_refund, on_call: 1, status: 500, after_write: true}
  - {type: rate_limit, tool: lookup_order, on_call: 1, retry_after: 0.2}
""")

LEDGER: list[str] = []


@chaos
def lookup_order(order_id: str) -> dict[str, object]:
    return {"order_id": order_id, "status": "pending", "amount": 25}


@chaos(irreversible=True, idempotency_arg="idempotency_key")
def issue_refund(order_id: str, amount: float, idempotency_key: str | None = None) -> dict[str, object]:
    LEDGER.append(order_id)
    return {"refund_id": f"R-{order_id}", "amount": amount}


def naive_agent(order_id: str) -> str:
    """Retries everything at once, and never sends an idempotency key."""
    order = None
    for _ in range(3):
        try:
            order = lookup_order(order_id)
            break
        except chaoskit.ToolHTTPError:
            continue
    if order is None:
        return "I could not find the order."
    for _ in range(3):
        try:
            issue_refund(order_id, float(order["amount"]))  # type: ignore[arg-type]
            break
        except chaoskit.ToolHTTPError:
            continue
    return f"Done: order {order_id} was refunded."


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "traces.jsonl"
    writer = telemetry.write_jsonl(out)
    with chaoskit.episode("refund-4832", plan=PLAN) as ep:
        ep.finish(naive_agent("4832"))
    telemetry.remove_processor(writer)  # flushes the batch to the file

    trace = Trace.load(out)
    print(f"read {len(trace.attempts)} attempts from {out}; the refund was written {len(LEDGER)} times\n")
    results = checks.run_checks(trace, max_attempts={"issue_refund": 2})
    for r in results:
        print(f"{r.severity.upper():<5} {r.name}: {r.message}")
    print()
    print(chaoskit.score(trace, checks=results))
    print(f"\nsame from the command line: chaoskit check {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
