"""Helpers for testing agents with chaoskit (also used by chaoskit's own tests).

    from chaoskit.testing import capture_spans, attempt_attributes

    with capture_spans() as cap, chaoskit.episode("t", plan=plan):
        agent("refund order 4832")
    assert [a["chaoskit.outcome"] for a in attempt_attributes(cap, "issue_refund")] == ["error", "ok"]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit.plan._model import Plan
from chaoskit.telemetry import SpanCapture

__all__ = ["attempt_attributes", "capture_spans", "plan_from", "reset"]


def reset() -> None:
    """Forget settings, sinks and the CHAOSKIT_PLAN plan: a clean slate between tests."""
    _config.reset()
    telemetry.reset()


@contextmanager
def capture_spans() -> Iterator[SpanCapture]:
    """Capture every span finished in the block (``cap.spans``, ``cap.attempt_spans(tool)``)."""
    with telemetry.capture() as cap:
        yield cap


def attempt_attributes(cap: SpanCapture, tool: str | None = None) -> list[dict[str, Any]]:
    """The attributes of each tool attempt span, in start order, as plain dicts."""
    return [dict(s.attributes or {}) for s in cap.attempt_spans(tool)]


def plan_from(*faults: dict[str, Any], seed: int = 0) -> Plan:
    """A plan from fault dicts: ``plan_from({"type": "error", "tool": "search", "on_call": 1})``."""
    return Plan.from_dict({"seed": seed, "faults": list(faults)}, source="<python>")
