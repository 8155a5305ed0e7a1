"""pytest fixtures for chaoskit, loaded automatically when chaoskit is installed.

- ``chaoskit_spans``: a :class:`chaoskit.testing.TraceCapture` of the spans finished during the test
  (``.spans``, ``.attempt_spans(tool)``, ``.trace()``).
- ``chaoskit_plan``: a factory ``chaoskit_plan(*fault_dicts, seed=0)`` that returns an activated plan for
  the rest of the test (fresh call counters).

Nothing here is autouse: installing chaoskit never changes a test suite that does not ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

import chaoskit.testing as testing
from chaoskit.plan._model import Plan
from chaoskit.testing import TraceCapture


@pytest.fixture
def chaoskit_spans() -> Iterator[TraceCapture]:
    """The spans finished during the test (``chaoskit_spans.trace()`` reads them as a ``chaoskit.Trace``)."""
    with testing.capture_spans() as cap:
        yield cap


@pytest.fixture
def chaoskit_plan() -> Iterator[Callable[..., Plan]]:
    """A factory ``chaoskit_plan(*fault_dicts, seed=0)`` returning a plan active for the rest of the test."""
    with ExitStack() as stack:

        def make(*faults: dict[str, Any], seed: int = 0) -> Plan:
            plan = testing.plan_from(*faults, seed=seed)
            stack.enter_context(plan.activate())
            return plan

        yield make
