"""An agent that runs out of process and reaches its tool, a REST API, through the HTTP chaos proxy.

    CHAOSKIT_HTTP_URL=http://127.0.0.1:8080 python examples/http/agent.py [--naive] Refund order A-1001 in full.

A scripted agent, no model. It looks the order up, then refunds it. The careful agent (the default) sends an
``Idempotency-Key`` and on a 5xx or 429 waits as long as ``Retry-After`` asks, then retries with the same key,
three tries at most, and says plainly when it could not. ``--naive`` retries at once, without a key: after an
``after_write`` fault that is a second refund, which ``chaoskit check`` reports as a duplicate write.
"""

from __future__ import annotations

import os
import re
import sys
import time

import httpx


def run(task: str, *, naive: bool = False) -> str:
    base = os.environ.get("CHAOSKIT_HTTP_URL", "http://127.0.0.1:8080")
    found = re.search(r"[A-Z]-\d{4}", task)
    if found is None:
        return "I could not find an order id in the request."
    order_id = found.group()
    with httpx.Client(base_url=base, timeout=10) as api:
        order = api.get(f"/orders/{order_id}")
        if order.status_code != 200:
            return f"I could not refund order {order_id}: the lookup failed (HTTP {order.status_code})."
        total = order.json()["total"]
        headers = {} if naive else {"Idempotency-Key": f"refund-{order_id}"}
        for _ in range(3):
            refund = api.post("/refunds", json={"order_id": order_id, "amount": total}, headers=headers)
            if refund.status_code in (200, 201):
                return f"Done: refunded {total:.2f} on order {order_id} ({refund.json()['refund_id']})."
            if refund.status_code < 500 and refund.status_code != 429:
                break
            if not naive:
                time.sleep(float(refund.headers.get("retry-after", "0.1")))
        return f"I could not refund order {order_id}: the refund failed (HTTP {refund.status_code})."


def main() -> None:
    args = sys.argv[1:]
    naive = "--naive" in args
    print(run(" ".join(a for a in args if a != "--naive"), naive=naive))


if __name__ == "__main__":
    main()
