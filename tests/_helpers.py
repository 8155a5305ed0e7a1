"""What the trace, reader, check, score and ``chaoskit check`` tests (and ``benchmarks/bench_trace.py``) share:
three ``@chaos`` tools and a way to run one episode and read its spans back.

Imported as ``from _helpers import ...``, like ``_lc_helpers``: pytest's default (prepend) import mode puts
``tests/`` on ``sys.path``. Resetting chaoskit between tests is the autouse fixture in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

import chaoskit
from chaoskit import Plan, Trace, chaos, telemetry

__all__ = ["issue_refund", "read_page", "run", "run_spans", "search"]


@chaos(name="issue_refund", irreversible=True, idempotency_arg="key")
def issue_refund(order_id: str, key: str | None = None) -> dict[str, Any]:
    return {"ok": True}


@chaos
def search(q: str) -> list[str]:
    return [q]


@chaos
def read_page(url: str) -> str:
    return "page"


def run_spans(
    plan: Plan, agent: Callable[[], str | None], *, name: str = "task", **attrs: Any
) -> tuple[Trace, tuple[ReadableSpan, ...]]:
    """Run ``agent`` in one episode under ``plan``; that episode's spans, and them read back as a Trace.

    Only this episode's spans are kept: a span that some other thread ends while the capture is open (a
    worker left behind by an earlier test) must not add an episode and change a verdict.
    """
    with telemetry.capture() as cap:
        with chaoskit.episode(name, plan=plan, **attrs) as ep:
            out = agent()
            if out is not None:
                ep.finish(out)
    mine = tuple(s for s in cap.spans if (s.attributes or {}).get("chaoskit.episode.id") == ep.id)
    return Trace.from_spans(mine), mine


def run(plan: Plan, agent: Callable[[], str | None], **attrs: Any) -> Trace:
    return run_spans(plan, agent, **attrs)[0]
