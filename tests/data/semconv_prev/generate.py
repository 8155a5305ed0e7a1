"""Writes ``trace.jsonl`` and ``graded.json``: a trace in the span shape of the release before issue 27 part 1
(the ``exception`` span event, ``chaoskit.args`` only, ``gen_ai.tool.call.result`` on refused attempts, no
status on cancelled attempts, ``gen_ai.agent.name`` = the scenario name), and how that release read and graded it.

Run with the earlier release's code first on the path (the committed files came from commit 260bd79)::

    git archive 260bd79 | tar -x -C /tmp/prev
    PYTHONPATH=/tmp/prev python tests/data/semconv_prev/generate.py tests/data/semconv_prev

``tests/telemetry/test_semconv_genai.py`` reads the trace with today's readers and checks that it reads and grades
exactly as recorded in ``graded.json``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import chaoskit
from chaoskit import Plan, Trace, chaos, telemetry
from chaoskit.grading.checks import run_checks

PLAN = Plan(
    seed=3,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 0.5},
        {"type": "garbage", "tool": "search", "on_call": 2, "garbage": {"price": 12.5}},
        {"type": "error", "tool": "lookup", "on_call": 1},
    ],
)


@chaos(name="issue_refund", irreversible=True, idempotency_arg="key")
def issue_refund(order_id: str, amount: float, key: str | None = None, api_key: str = "") -> dict[str, Any]:
    return {"refunded": order_id, "amount": amount}


@chaos
def search(q: str) -> list[str]:
    return [q, "second"]


@chaos
def lookup(order_id: str) -> dict[str, Any]:
    if order_id == "99":
        raise ValueError(f"no such order {order_id}")
    return {"order_id": order_id, "status": "shipped"}


@chaos(error_result="error")
def cancel_order(order_id: str) -> dict[str, Any]:
    return {"error": f"order {order_id} has already shipped and cannot be cancelled"}


@chaos
def slow(x: int) -> int:
    raise asyncio.CancelledError()


def _agent() -> str:
    for _ in range(2):
        try:
            issue_refund("4832", 25.0, key="rf-1", api_key="sk-secret")
        except chaoskit.ToolHTTPError:
            pass
    for q in ("kettle", "kettle", "mug"):
        try:
            search(q)
        except chaoskit.ToolHTTPError:
            pass
    for order in ("4832", "4832", "99"):
        try:
            lookup(order)
        except (ConnectionResetError, ValueError):
            pass
    cancel_order("4832")
    try:
        slow(1)
    except asyncio.CancelledError:
        pass
    return "Refunded 25.0 for order 4832; order 4832 has shipped and could not be cancelled."


def main(out: Path) -> None:
    chaoskit.configure(record_results=True)
    with telemetry.capture() as cap:
        with chaoskit.episode("refund-and-cancel", plan=PLAN, task="Refund order 4832 and cancel it") as ep:
            ep.finish(_agent(), success=True)
        try:
            with chaoskit.episode("crashes", plan=PLAN):
                lookup("4832")  # the injected ConnectionResetError ends the agent: a crashed episode
        except ConnectionResetError:
            pass
    spans = cap.spans
    exporter = telemetry.JsonLinesSpanExporter(out / "trace.jsonl")
    exporter.export(spans)
    exporter.shutdown()
    trace = Trace.load(out / "trace.jsonl")
    graded = {
        "episodes": [
            {
                "name": e.name,
                "outcome": e.outcome,
                "error": e.error,
                "attempts": [_plain(dataclasses.asdict(a)) for a in e.attempts],
            }
            for e in trace.episodes
        ],
        "checks": [r.to_dict() for r in run_checks(trace)],
    }
    (out / "graded.json").write_text(json.dumps(graded, indent=1, sort_keys=True, default=str) + "\n")


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    # the times and ids differ run to run only in the trace itself: kept, they are what the file holds
    return json.loads(json.dumps(record, sort_keys=True, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
