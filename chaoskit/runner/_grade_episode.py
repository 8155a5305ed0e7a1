"""Grading one episode: the scenario's task criteria, then its checks and score through the one grading path."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import chaoskit.engine._attrs as _attrs
from chaoskit.grading._contracts import trace_findings
from chaoskit.grading._evidence import evidence_gaps
from chaoskit.grading._modelcalls import model_calls
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import score
from chaoskit.grading._truth import episode_truth
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, run_checks
from chaoskit.scenarios._scenario import Scenario
from chaoskit.traces._trace import Trace

__all__ = [
    "TIMELINE_MAX",
    "calls_of",
    "contract_findings",
    "episode_passed",
    "grade",
    "grade_or_refuse",
    "model_timeline",
    "not_injected",
    "run_oracle",
    "snapshot",
    "task_criteria",
    "timeline",
    "wants_initial",
]

#: the most attempts an episode's ``attempts.timeline`` lists (the first ones)
TIMELINE_MAX = 200


def _criterion(name: str, passed: bool, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "passed": passed,
        "severity": "pass" if passed else "fail",
        "message": message,
        "evidence": [],
    }


def task_criteria(
    scenario: Scenario, *, output: str | None, outcome: str, error: str | None, oracle: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The scenario's own success criteria (how the run ended, its output, its end state): together they are
    the ``success`` that the checks and the score are given. They judge the task, not the recovery."""
    s = scenario.success
    out: list[dict[str, Any]] = []
    if outcome == "completed":
        out.append(_criterion("outcome", True, "the agent finished"))
    else:
        verb = {"timeout": "timed out", "crashed": "crashed"}.get(outcome, f"ended as {outcome!r}")
        # an integration's own reason ("agent crashed on a tool error: ...") already says what happened
        detail = (
            error
            if error and error.startswith("agent ")
            else (f"the agent {verb}: {error}" if error else f"the agent {verb}")
        )
        out.append(_criterion("outcome", False, detail))
    text = (output or "").lower()
    for needle in s.output_contains:
        ok = needle.lower() in text
        out.append(_criterion("output_contains", ok, f"output {'contains' if ok else 'lacks'} {needle!r}"))
    for needle in s.output_not_contains:
        ok = needle.lower() not in text
        out.append(
            _criterion("output_not_contains", ok, f"output {'does not contain' if ok else 'contains'} {needle!r}")
        )
    if oracle is not None:
        if oracle.get("error"):
            msg = f"{s.state} raised {oracle['error']} while checking the end state"
        elif oracle["ok"]:
            msg = f"{s.state} verified the end state"
        else:
            msg = f"{s.state} rejected the end state"
        out.append(_criterion("end_state", bool(oracle["ok"]), msg))
    return out


def _run_check(
    trace: Trace, name: str, params: dict[str, Any], required: list[str] | None, success: bool
) -> list[CheckResult]:
    try:
        if params:
            # run_checks forwards only its shared parameters (n, required_tools, success); a scenario's own
            # parameters (min_backoff, ...) must reach the check, or it would grade with other settings
            return [REGISTRY[name](trace, **params)]
        return run_checks(trace, [name], required_tools=required, success=success)
    except Exception as exc:  # a check that breaks is a failed check, never a pass and never a runner crash
        return [CheckResult(name, False, "fail", f"check raised {type(exc).__name__}: {exc}")]


def grade(
    scenario: Scenario, trace: Trace, criteria: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], float, dict[str, Any]]:
    """Grade one episode's trace: the scenario's checks through :func:`chaoskit.grading.checks.run_checks`, the
    score through :func:`chaoskit.score`, with ``criteria`` (from :func:`task_criteria`) as the task's success.
    Returns (criteria and check results as dicts, score, attempt summary)."""
    s = scenario.success
    success = all(c["passed"] for c in criteria)
    required = list(s.required_tools) if s.required_tools is not None else None
    # an episode chaos did not reach has no verdict but "cannot grade" (the same rule as run_checks and check)
    results: list[CheckResult] = evidence_gaps(trace)
    if not results:
        results = _checks(trace, s, required, success)
    value = score(trace, success=success, checks=results, required_tools=required).value
    unfired = not_injected(trace, scenario.faults)
    root = trace.episodes[0].start_time if trace.episodes else None
    by_tool: dict[str, int] = {}
    for a in trace.attempts:
        by_tool[a.tool] = by_tool.get(a.tool, 0) + 1
    summary = {
        "total": len(trace.attempts),
        "by_tool": by_tool,
        "faults": sum(a.fault_type is not None for a in trace.attempts),
        # 1 when no_duplicate_writes failed: that check is the only judge of a repeated write
        "duplicate_writes": int(any(r.name == "no_duplicate_writes" and not r.passed for r in results)),
        "timeline": timeline(trace, root),
        "model_timeline": model_timeline(trace, root),
        # the per-call ground truth the answer checks read: what was asked, done, received and faulted
        "calls": calls_of(trace, required),
        "contract_findings": contract_findings(trace),
        # every (tool, fault type) the episode met, data faults included, for the readiness table
        "faults_met": [list(pair) for pair in sorted(_met(trace))],
    }
    checks = [*criteria, *(r.to_dict() for r in results), *unfired]
    summary["faults_failed"] = [list(pair) for pair in sorted(_blamed(trace, checks))]
    return checks, round(float(value), 2), summary


def _checks(trace: Trace, s: Any, required: list[str] | None, success: bool) -> list[CheckResult]:
    """The scenario's checks (its attempt limits, its named checks or the defaults, and no_duplicate_writes)."""
    results: list[CheckResult] = []
    limits = {n: v for n, v in (("max_attempts", s.max_attempts), ("min_attempts", s.min_attempts)) if v}
    if limits:
        results.extend(run_checks(trace, list(limits), **limits))
    specs = s.check_specs()
    if specs is None:
        specs = [(n, {}) for n in DEFAULT_CHECKS]
    if "no_duplicate_writes" not in {n for n, _ in specs}:
        specs = [*specs, ("no_duplicate_writes", {})]  # the CI gate's absolute rule is always graded
    for name, params in specs:
        results.extend(_run_check(trace, name, params, required, success))
    return results


def _met(trace: Trace) -> set[tuple[str, str]]:
    return {(a.tool, a.fault_type) for a in trace.attempts if a.fault_type and not a.fault_skipped}


def _blamed(trace: Trace, checks: Sequence[dict[str, Any]]) -> set[tuple[str, str]]:
    """The (tool, fault) pairs a failure is on: those of the tools whose spans a failed check names as evidence.
    A failure that names no span (the outcome, the end state) cannot be placed, so every fault met shares it."""
    met = _met(trace)
    failed = [c for c in checks if not c["passed"] and c.get("severity", "fail") == "fail"]
    if not failed:
        return set()
    if any(not c.get("evidence") for c in failed):
        return met
    spans = {s for c in failed for s in c["evidence"]}
    tools = {a.tool for a in trace.attempts if a.span_id in spans}
    return {(tool, fault) for tool, fault in met if tool in tools}


def not_injected(trace: Trace, planned: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """A failed ``fault_not_injected`` criterion for each of the scenario's own ``planned`` faults that was
    skipped on a tool (``chaoskit.fault.skipped``) and never applied to it in the episode: the case never
    tested what it is about, so it must not pass as if it had (a data fault behind a callback handler, which
    cannot replace a result). Not counted: a skip on a call the tool itself refused (it returned an error, so
    there was no result to fault), and background faults of ``--intensity``, which the scenario did not plan."""
    applied = _met(trace)
    skipped: dict[tuple[str, str], list[str]] = {}
    for a in trace.attempts:
        kind = a.fault_skipped
        if not kind or a.refused or (a.tool, kind) in applied:
            continue
        if not any(getattr(f, "type", None) == kind and f.targets(a.tool) for f in planned):
            continue
        skipped.setdefault((a.tool, kind), []).append(a.span_id)
    return [
        {
            "name": "fault_not_injected",
            "passed": False,
            "severity": "fail",
            "message": f"the planned {fault} fault on {tool} was never injected: the tool's entry point could not "
            f"produce it (chaoskit.fault.skipped on {len(spans)} span(s)), so this episode tested nothing of it; "
            "instrument the tool with an entry point that can (chaos_tool, ChaosMiddleware, @chaos), or drop "
            "the fault",
            "evidence": spans,
        }
        for (tool, fault), spans in sorted(skipped.items())
    ]


def contract_findings(trace: Trace) -> list[dict[str, Any]]:
    """The tool-contract findings the episode's own trace shows ("fix in the tool", apart from the checks):
    the tools' own uninformative errors and 429s without Retry-After (never an error chaoskit injected)."""
    episode = trace.episodes[0].name if trace.episodes else None
    return [f.to_dict() for f in trace_findings(trace.attempts, episode)]


def grade_or_refuse(
    scenario: Scenario, trace: Trace | None, criteria: list[dict[str, Any]], read_error: str | None
) -> tuple[list[dict[str, Any]], float, dict[str, Any]]:
    """:func:`grade`, or, for a trace that could not be read (``trace`` None), a failed ``trace`` criterion:
    a trace that cannot be graded is reported as such, never as a pass."""
    if trace is not None:
        return grade(scenario, trace, criteria)
    checks = [
        *criteria,
        {
            "name": "trace",
            "passed": False,
            "severity": "fail",
            "evidence": [],
            "message": f"the episode's trace cannot be graded: {read_error}",
        },
    ]
    return checks, 0.0, {"total": 0, "by_tool": {}, "faults": 0, "duplicate_writes": 0, "timeline": []}


def episode_passed(checks: Sequence[dict[str, Any]]) -> bool:
    """An episode passes when every criterion and check passed (warnings do not count)."""
    return all(c["passed"] for c in checks if c["severity"] in ("fail", "pass"))


def calls_of(trace: Trace, required: list[str] | None = None) -> list[dict[str, Any]]:
    """Each logical call of the episode (tool and arguments) with its status, faults and attempts: the same
    :func:`chaoskit.grading._truth.episode_truth` the answer checks grade from, capped at :data:`TIMELINE_MAX`."""
    return [c for ep in trace.episodes for c in episode_truth(ep, required).to_dict()["calls"]][:TIMELINE_MAX]


def _on_timeline(start: float, end: float, t0: float) -> dict[str, float]:
    """Where a span sits on the episode's timeline: its start from ``t0`` (``t_ms``) and its duration (``ms``)."""
    return {"t_ms": round((start - t0) * 1000.0, 3), "ms": round(max(end - start, 0.0) * 1000.0, 3)}


def timeline(trace: Trace, root: float | None = None) -> list[dict[str, Any]]:
    """The episode's first :data:`TIMELINE_MAX` attempts in time order: tool, attempt, start (``t_ms``, from
    ``root``, the episode's start, else the first attempt's) and duration in ms, outcome, injected fault type
    (None when nothing was injected), and whether the real tool ran."""
    attempts = sorted(trace.attempts, key=lambda a: (a.start_time, a.attempt, a.span_id))[:TIMELINE_MAX]
    if not attempts:
        return []
    t0 = root if root is not None else attempts[0].start_time
    return [
        {
            "tool": a.tool,
            "attempt": a.attempt,
            **_on_timeline(a.start_time, a.end_time, t0),
            "outcome": a.outcome,
            "fault": a.fault_type if a.injected else None,
            "executed": bool(a.executed),
        }
        for a in attempts
    ]


def model_timeline(trace: Trace, root: float | None = None) -> list[dict[str, Any]]:
    """The episode's first :data:`TIMELINE_MAX` model calls in time order, as the timeline shows them beside
    the tool attempts: model, call number, start (``t_ms``, from ``root``) and duration in ms, outcome, and the
    fault decided for the call (None when none was; a fault its entry point could not apply is ``skipped``)."""
    calls = []
    for ep in trace.episodes:
        found = model_calls(ep)
        if isinstance(found, list):
            calls += found
    calls = sorted(calls, key=lambda c: (c.start, c.call, c.span_id))[:TIMELINE_MAX]
    if not calls:
        return []
    t0 = root if root is not None else calls[0].start
    return [
        {
            "model": c.model,
            "call": c.call,
            **_on_timeline(c.start, c.end, t0),
            "outcome": c.outcome,
            "fault": c.fault,
            **({"skipped": c.skipped} if c.skipped else {}),
        }
        for c in calls
    ]


class _CopyFailed:
    """What :func:`snapshot` returns for an env that cannot be deep-copied: the oracle reports the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def snapshot(env: Any) -> Any:
    """A deep copy of ``env`` (the initial state an (initial, final) oracle gets); never raises."""
    try:
        return copy.deepcopy(env)
    except Exception as exc:
        return _CopyFailed(f"cannot copy the initial state with copy.deepcopy: {type(exc).__name__}: {exc}")


def wants_initial(oracle: Callable[..., Any]) -> bool:
    """Whether an oracle takes (initial, final): two required positional parameters; one gets the final env."""
    try:
        params = inspect.signature(oracle).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds and p.default is inspect.Parameter.empty for p in params) >= 2


def run_oracle(oracle: Callable[..., Any] | None, env: Any, initial: Any = None) -> dict[str, Any] | None:
    """An oracle returns a bool, or ``(ok, end_state)``; the end state is what perturbed runs must match.
    It is called with the final env, or with (``initial``, final env) when ``initial`` is given."""
    if oracle is None:
        return None
    if isinstance(initial, _CopyFailed):
        return {"ok": False, "state": None, "error": initial.reason}
    try:
        value = oracle(env) if initial is None else oracle(initial, env)
    except Exception as exc:
        return {"ok": False, "state": None, "error": f"{type(exc).__name__}: {exc}"}
    if isinstance(value, tuple) and len(value) == 2:
        ok, state = bool(value[0]), value[1]
    else:
        ok, state = bool(value), bool(value)
    return {"ok": ok, "state": _attrs.canonical_json(state), "error": None}
