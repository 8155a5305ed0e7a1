"""Helpers for testing agents with chaoskit: span captures, fault cases, assertions and the fault matrix.

from chaoskit.testing import ChaosEpisode, assert_attempts, assert_no_duplicate_writes

with ChaosEpisode("refund", plan={"faults": [{"type": "timeout", "tool": "lookup_order"}]}) as case:
    case.finish(agent.invoke("refund order 4832"))
assert_attempts(case.trace, "lookup_order", between=(1, 3))
assert_no_duplicate_writes(case.trace)

In pytest the ``chaos_episode`` fixture is such a case (see :mod:`chaoskit.testing.pytest_plugin`). The assertions
grade through :func:`chaoskit.checks.run_checks`, as the battery runner does, and their messages name the
tool, the rule and the evidence. ``capture_spans()`` / ``attempt_attributes`` read raw spans, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import chaoskit.engine._runtime as _runtime
import chaoskit.semconv as sc
from chaoskit._errors import ChaoskitError
from chaoskit.engine._episode import Episode
from chaoskit.grading._result import CheckResult
from chaoskit.grading.checks import run_checks
from chaoskit.plan._model import Plan
from chaoskit.telemetry import SpanCapture
from chaoskit.testing._asserts import (
    RECORDER,
    assert_attempts,
    assert_honest,
    assert_no_duplicate_writes,
    assert_recovered,
)
from chaoskit.testing._trace_capture import OwnCapture, TraceCapture, capture_spans, own_capture
from chaoskit.traces._records import AttemptRecord
from chaoskit.traces._trace import Trace

__all__ = [
    "ChaosEpisode",
    "FaultCase",
    "OwnCapture",
    "TraceCapture",
    "assert_attempts",
    "assert_honest",
    "assert_no_duplicate_writes",
    "assert_recovered",
    "attempt_attributes",
    "capture_spans",
    "fault_matrix",
    "own_capture",
    "plan_from",
    "reset",
]


def reset() -> None:
    """A clean slate between tests: ``chaoskit.reset()`` (settings, the CHAOSKIT_PLAN plan, every plan's
    call counters) and every span sink and cached tracer."""
    _runtime.reset(sinks=True)


def attempt_attributes(cap: SpanCapture, tool: str | None = None) -> list[dict[str, Any]]:
    """The attributes of each tool attempt span, in start order, as plain dicts."""
    return [dict(s.attributes or {}) for s in cap.attempt_spans(tool)]


def plan_from(*faults: dict[str, Any], seed: int = 0) -> Plan:
    """A plan from fault dicts: ``plan_from({"type": "error", "tool": "search", "on_call": 1})``."""
    return Plan.from_dict({"seed": seed, "faults": list(faults)}, source="<python>")


class ChaosEpisode:
    """One fault case: an episode with its own span capture, whose trace the assertions grade.

    ``with ChaosEpisode(name, plan=...) as case:`` starts the episode (tool calls inside count from 1 and take
    ``plan``; with no plan, the plan already active, or none) and a capture that sees only this code's spans,
    even with other tests running in other threads. ``case.finish(output)`` records the final answer and ends
    the episode; ``case.trace`` is the episode's trace (reading it ends the episode if still open);
    ``case.attempts(tool)`` lists the attempts so far; ``case.verdicts()`` runs the default checks. The
    results of every ``assert_*`` made inside the block are kept in ``case.asserted`` (for reports).
    """

    def __init__(
        self, name: str | None = None, plan: Plan | Mapping[str, Any] | None = None, *, agent: str = "pytest"
    ) -> None:
        self.name = name
        #: the agent's name in reports (its label in the HTML report's columns)
        self.agent = agent
        #: the results of the assertions made while the case was open, in order
        self.asserted: list[CheckResult] = []
        self._episode = Episode(name, plan=plan)
        self._stack = ExitStack()
        self._cap: OwnCapture | None = None
        self._trace: Trace | None = None
        self._open = False

    def __repr__(self) -> str:
        state = "ended" if self.ended else ("open" if self._open else "not started")
        return f"<ChaosEpisode {self.name!r} {state}, agent {self.agent!r}>"

    # -- lifecycle ---------------------------------------------------------------------------------------

    def __enter__(self) -> ChaosEpisode:
        self._cap = self._stack.enter_context(own_capture())
        token = RECORDER.set(self.asserted.extend)
        self._stack.callback(_reset_recorder, token)
        self._episode.__enter__()
        self._open = True
        self._cap.follow(self._episode.trace_id)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._end(exc_type, exc, tb)
        finally:
            self._stack.close()

    def _end(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        if self._open:
            self._open = False
            self._episode.__exit__(exc_type, exc, tb)

    # -- what the test uses ------------------------------------------------------------------------------

    @property
    def episode(self) -> Episode:
        """The engine's episode (``.id``, ``.trace_id``, ``.plan``, ``.attempts`` as recorded in-process)."""
        return self._episode

    @property
    def plan(self) -> Plan | None:
        """The plan the episode runs with (the given one, else the one active when it started, else None)."""
        return self._episode.plan

    @property
    def ended(self) -> bool:
        """Whether the episode has ended (``finish``, reading ``trace``, or the end of the block)."""
        return self._episode.outcome is not None

    def finish(self, output: Any, *, success: bool | None = None) -> None:
        """Record the agent's final answer (and, when known, whether the task succeeded), and end the episode."""
        if self.ended:
            raise ChaoskitError(
                "chaos_episode.finish(): the episode already ended (finish() was called, or .trace / the "
                "chaos_trace fixture ended it); run the agent and call finish() before reading the trace, and "
                "request chaos_trace after the fixture that runs the agent"
            )
        self._episode.finish(output, success=success)
        self._end()

    def _spans(self) -> list[Any]:
        if self._cap is None:
            raise ChaoskitError(
                "ChaosEpisode: use it as `with ChaosEpisode(...) as case:` (or the chaos_episode fixture)"
            )
        trace_id = self._episode.trace_id
        if trace_id is None:
            return []
        mine = self._episode.id
        return [s for s in self._cap.spans_of_trace(trace_id) if (s.attributes or {}).get(sc.EPISODE_ID, mine) == mine]

    def attempts(self, tool: str | None = None) -> list[AttemptRecord]:
        """The episode's attempts so far (of ``tool`` only, when given), in time order, read from its spans."""
        return [a for a in Trace.from_spans(self._spans()).attempts if tool is None or a.tool == tool]

    @property
    def trace(self) -> Trace:
        """The episode's trace, read from its exported spans only; reading it ends the episode if still open."""
        if self._trace is None:
            self._end()
            spans = self._spans()
            if self._episode.trace_id is None:
                raise ChaoskitError(
                    "chaos_episode.trace: tracing is off (CHAOSKIT_TRACE=0 or configure(trace=False)), so the "
                    "episode exported no spans to grade; turn tracing on for fault cases"
                )
            self._trace = Trace.from_spans(spans)
        return self._trace

    def verdicts(self, names: Sequence[str] | None = None, **params: Any) -> list[CheckResult]:
        """``run_checks(case.trace, names, **params)``: the default checks, or the named ones."""
        return run_checks(self.trace, names, **params)

    @property
    def output(self) -> Any:
        """The final answer given to :meth:`finish` (None before)."""
        return self._episode.output

    def outside_attempts(self) -> int:
        """How many tool attempts this code made outside the episode (after it ended, or in another one)."""
        if self._cap is None:
            return 0
        mine = self._episode.id
        return sum((s.attributes or {}).get(sc.EPISODE_ID) != mine for s in self._cap.attempt_spans())


def _reset_recorder(token: Any) -> None:
    try:
        RECORDER.reset(token)
    except ValueError:  # ended in another context than it started in
        RECORDER.set(None)


# -- the fault matrix -----------------------------------------------------------------------------------


def _label(fault: Mapping[str, Any]) -> str:
    parts = [str(fault["type"])]
    for k, v in fault.items():
        if k in ("type", "tool"):
            continue
        if k == "status":
            parts.append(str(v))
        elif v is True:
            parts.append(k)
        else:
            parts.append(f"{k}={v}")
    return re.sub(r"\s+", "_", "-".join(parts))


@dataclass(frozen=True)
class FaultCase:
    """One (tool, fault) pair of :func:`fault_matrix`: ``tool``, the fault dict, a readable ``id`` (the
    pytest id, e.g. ``issue_refund-http-500``) and the one-fault ``plan``. The ``chaos_episode`` fixture of
    a test parametrized with it runs with its plan (after the faults of a ``chaos_plan`` mark, if any)."""

    tool: str
    fault: Mapping[str, Any]
    id: str
    plan: Plan = field(compare=False, repr=False)

    @property
    def type(self) -> str:
        """The fault's type."""
        return str(self.fault["type"])

    def __str__(self) -> str:
        return self.id


def fault_matrix(*, tools: Sequence[str], faults: Sequence[str | Mapping[str, Any]]) -> list[FaultCase]:
    """One :class:`FaultCase` per (tool, fault) pair, tools outermost, for ``pytest.mark.parametrize``.

    ``faults`` are fault types (``"timeout"``) or fault dicts without ``tool`` (``{"type": "http", "status":
    500, "on_call": 1}``; a fault with no trigger fires on every call of the tool). An ``"id"`` key names the
    fault in the case ids. Six faults across four tools is 24 cases, written as one test function::

        @pytest.mark.parametrize("case", fault_matrix(tools=[...], faults=[...]))
        def test_survives(case, chaos_episode): ...
    """
    for what, value in (("tools", tools), ("faults", faults)):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence) or not value:
            raise ChaoskitError(f"fault_matrix: {what} must be a non-empty list, got {value!r}")
    for i, tool in enumerate(tools):
        if not isinstance(tool, str) or not tool:
            raise ChaoskitError(f"fault_matrix: tools[{i}] must be a tool name, got {tool!r}")
    specs: list[tuple[str | None, dict[str, Any]]] = []
    for i, f in enumerate(faults):
        if isinstance(f, str):
            spec: dict[str, Any] = {"type": f}
        elif isinstance(f, Mapping):
            spec = dict(f)
        else:
            raise ChaoskitError(f"fault_matrix: faults[{i}] must be a fault type or a fault dict, got {f!r}")
        if "tool" in spec:
            raise ChaoskitError(
                f"fault_matrix: faults[{i}] names tool {spec['tool']!r}; leave it out: the matrix sets the tool "
                "of each case from tools=[...]"
            )
        name = spec.pop("id", None)
        if name is not None and (not isinstance(name, str) or not name):
            raise ChaoskitError(f"fault_matrix: faults[{i}].id must be a non-empty string, got {name!r}")
        Plan.from_dict({"faults": [{**spec, "tool": tools[0]}]}, source=f"fault_matrix(faults[{i}])")
        specs.append((name, spec))
    cases = []
    for tool in tools:
        for name, spec in specs:
            fault = {**spec, "tool": tool}
            case_id = f"{tool}-{name or _label(spec)}"
            plan = Plan.from_dict({"faults": [fault]}, source=f"fault_matrix[{case_id}]")
            cases.append(FaultCase(tool, fault, case_id, plan))
    return cases


def iter_fault_cases(values: Mapping[str, Any]) -> Iterator[FaultCase]:
    """The :class:`FaultCase` values among a test's parameters (for the pytest plugin)."""
    return (v for v in values.values() if isinstance(v, FaultCase))
