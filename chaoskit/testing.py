"""Helpers for testing agents with chaoskit (also used by chaoskit's own tests).

from chaoskit.testing import capture_spans, attempt_attributes

with capture_spans() as cap, chaoskit.episode("t", plan=plan):
    agent("refund order 4832")
assert [a["chaoskit.outcome"] for a in attempt_attributes(cap, "issue_refund")] == ["error", "ok"]
trace = cap.trace()  # the same spans as a chaoskit.Trace, for the checks
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import chaoskit.engine._runtime as _runtime
import chaoskit.telemetry as telemetry
from chaoskit.grading._trace import Trace
from chaoskit.plan._model import Plan
from chaoskit.telemetry import SpanCapture

__all__ = ["TraceCapture", "attempt_attributes", "capture_spans", "plan_from", "reset"]


def reset() -> None:
    """A clean slate between tests: ``chaoskit.reset()`` (settings, the CHAOSKIT_PLAN plan, every plan's
    call counters) and every span sink and cached tracer."""
    _runtime.reset(sinks=True)


class TraceCapture(SpanCapture):
    """A :class:`~chaoskit.telemetry.SpanCapture` that also reads its spans as a :class:`chaoskit.Trace`."""

    def trace(self) -> Trace:
        """The captured spans as a :class:`chaoskit.Trace` (episodes, attempts) for the checks."""
        return Trace.from_spans(self.spans)


@contextmanager
def capture_spans() -> Iterator[TraceCapture]:
    """Capture every span finished in the block (``cap.spans``, ``cap.attempt_spans(tool)``, ``cap.trace()``)."""
    cap = TraceCapture()
    with telemetry.capture(cap):
        yield cap


def attempt_attributes(cap: SpanCapture, tool: str | None = None) -> list[dict[str, Any]]:
    """The attributes of each tool attempt span, in start order, as plain dicts."""
    return [dict(s.attributes or {}) for s in cap.attempt_spans(tool)]


def plan_from(*faults: dict[str, Any], seed: int = 0) -> Plan:
    """A plan from fault dicts: ``plan_from({"type": "error", "tool": "search", "on_call": 1})``."""
    return Plan.from_dict({"seed": seed, "faults": list(faults)}, source="<python>")
