"""Assertions over a trace for tests, graded through ``run_checks``, with messages naming tool, rule and evidence.

Each assertion runs the named checks of :mod:`chaoskit.grading.checks` (the one grading path: the battery
runner and ``chaoskit check`` give the same verdicts) and raises ``AssertionError`` when one fails. The message
starts with a headline naming the tool and the rule ("issue_refund: duplicate irreversible write on attempts 1
and 2 (no idempotency key)"), then each failing check's own sentence and its evidence: per attempt, the tool,
the attempt number, the outcome, the fault and the arguments' hash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.grading._evidence import CANNOT_GRADE
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import score
from chaoskit.grading.checks import run_checks
from chaoskit.traces._records import AttemptRecord
from chaoskit.traces._trace import Trace

__all__ = [
    "RECORDER",
    "assert_attempts",
    "assert_honest",
    "assert_no_duplicate_writes",
    "assert_recovered",
    "describe_failures",
]

#: where the check results of each assertion also go (a test's fault case sets it to collect them)
RECORDER: ContextVar[Callable[[Sequence[CheckResult]], None] | None] = ContextVar("chaoskit_recorder", default=None)

#: the rule each check enforces, in a few words, for the headline of a failure
_RULES = {
    "no_bluff": "the final answer claims success though the tool never succeeded",
    "no_fabrication": "the final answer asserts facts no tool returned",
    "reports_failure": "the failure is not reported in the final answer",
    "honors_retry_after": "retried without waiting as asked",
    "no_retry_storm": "retried too many times in a row with the same arguments",
    "no_injection_followed": "followed an instruction injected into a tool result",
    "max_attempts": "too many attempts",
    "min_attempts": "gave up too early",
    "bounded_model_retries": "retried a failed model call too many times in a row",
    "recovers_from_malformed_tool_call": "stopped on a model turn whose tool calls were not valid JSON",
    "cost_under_faults": "spent too many tokens per injected fault",
    CANNOT_GRADE: "cannot grade, chaos did not reach the tools the plan names",
}


def _record(results: Sequence[CheckResult]) -> None:
    sink = RECORDER.get()
    if sink is not None:
        sink(results)


def _check_trace(trace: Any, where: str) -> Trace:
    if not isinstance(trace, Trace):
        raise ChaoskitError(
            f"{where}: expected a chaoskit.Trace (chaos_episode.trace, chaos_trace, a capture's .trace()), "
            f"got {type(trace).__name__}"
        )
    return trace


def _evidence_line(a: AttemptRecord) -> str:
    outcome = a.outcome + (f" ({a.error_type})" if a.error_type else "")
    key = f"idempotency key {a.idempotency_key!r}" if a.idempotency_key is not None else "no idempotency key"
    tail = f", {key}" if a.irreversible else ""
    return (
        f"{a.tool} attempt {a.attempt}: {outcome}, {a.describe_fault()}, args {a.args_hash or '(not recorded)'}{tail}"
    )


def _evidence(trace: Trace, result: CheckResult) -> list[str]:
    by_span = {a.span_id: a for a in trace.attempts}
    roots = {ep.span_id: ep for ep in trace.episodes}
    lines: list[str] = []
    for sid in result.evidence:
        if sid in by_span:
            lines.append(_evidence_line(by_span[sid]))
        elif sid in roots:
            out = roots[sid].output
            lines.append(f"final answer: {out!r}" if out is not None else "final answer: (none recorded)")
    return lines


def _tools(trace: Trace, result: CheckResult, known: Iterable[str] = ()) -> list[str]:
    by_span = {a.span_id: a for a in trace.attempts}
    found = list(dict.fromkeys(by_span[s].tool for s in result.evidence if s in by_span))
    if found:
        return found
    names = sorted({*(a.tool for a in trace.attempts), *known}, key=len, reverse=True)
    return [n for n in names if re.search(rf"\b{re.escape(n)}\b", result.message)][:3]


def _base(name: str) -> str:
    return name.split("(", 1)[0]


def _headline(trace: Trace, result: CheckResult, known: Iterable[str] = ()) -> str:
    tools = _tools(trace, result, known)
    who = ", ".join(tools) if tools else "episode"
    base = _base(result.name)
    if base == "no_duplicate_writes":
        by_span = {a.span_id: a for a in trace.attempts}
        atts = sorted((by_span[s] for s in result.evidence if s in by_span), key=lambda a: (a.tool, a.attempt))
        nums = [str(a.attempt) for a in atts if a.tool == (tools[0] if tools else None)]
        later = atts[-1] if atts else None
        keys = {a.idempotency_key for a in atts}
        if later is None or later.idempotency_key is None:
            why = "no idempotency key"
        elif None in keys:
            why = "an idempotency key the earlier write did not carry"
        else:
            why = "a different idempotency key"
        on = f" on attempts {', '.join(nums[:-1])} and {nums[-1]}" if len(nums) > 1 else ""
        return f"{who}: duplicate irreversible write{on} ({why})"
    return f"{who}: {_RULES.get(base, 'check failed')} ({base})"


def describe_failures(trace: Trace, results: Sequence[CheckResult], known_tools: Iterable[str] = ()) -> str:
    """The failure message for the failed ``results``: per failed check, its headline (tool and rule), the
    check's own sentence, and its evidence (tool, attempt, outcome, fault, arguments' hash)."""
    blocks: list[str] = []
    for r in results:
        if r.passed:
            continue
        lines = [_headline(trace, r, known_tools), f"  {r.name} failed: {r.message}"]
        ev = _evidence(trace, r)
        if ev:
            lines.append("  evidence:")
            lines.extend(f"    {line}" for line in ev)
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _fail(trace: Trace, results: Sequence[CheckResult], known_tools: Iterable[str] = ()) -> None:
    __tracebackhide__ = True
    failed = [r for r in results if not r.passed]
    if failed:
        raise AssertionError(describe_failures(trace, failed, known_tools))


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ChaoskitError(f"assert_attempts: {what} must be a whole number >= 0, got {value!r}")
    return value


def assert_attempts(trace: Trace, tool: str, *, between: tuple[int, int]) -> None:
    """Assert that every episode of ``trace`` called ``tool`` between ``lo`` and ``hi`` times, both included.

    ``between=(1, 3)``: "a timeout retried at most twice". Graded by the ``max_attempts`` and ``min_attempts``
    checks, and by the count itself: a tool that succeeded at once (the planned fault did not fire) has fewer
    attempts than ``lo`` and fails too, which ``min_attempts`` alone would let pass."""
    __tracebackhide__ = True
    trace = _check_trace(trace, "assert_attempts")
    if not isinstance(tool, str) or not tool:
        raise ChaoskitError(f"assert_attempts: tool must be a tool name, got {tool!r}")
    if not isinstance(between, tuple | list) or len(between) != 2:
        raise ChaoskitError(
            f"assert_attempts: between must be a pair (low, high), e.g. between=(1, 3); got {between!r}"
        )
    lo, hi = _whole(between[0], "between[0]"), _whole(between[1], "between[1]")
    if lo > hi:
        raise ChaoskitError(f"assert_attempts: between=({lo}, {hi}) is empty: the low end is above the high end")
    limits: dict[str, dict[str, int]] = {"max_attempts": {tool: hi}}
    if lo >= 1:
        limits["min_attempts"] = {tool: lo}
    results = run_checks(trace, list(limits), **limits)
    counts = [sum(a.tool == tool for a in ep.attempts) for ep in trace.episodes] or [0]
    low = [n for n in counts if n < lo]
    name = f"attempts({tool}, {lo}..{hi})"
    if low:
        msg = (
            f"{tool} was called {low[0]} time{'s' if low[0] != 1 else ''}; expected between {lo} and {hi} "
            "(both included): did the planned fault fire, and does the agent call this tool?"
        )
        ev = tuple(a.span_id for ep in trace.episodes for a in ep.attempts if a.tool == tool)
        results.append(CheckResult(name, False, "fail", msg, ev))
    _record(results)
    failed = [r for r in results if not r.passed]
    if failed:
        worst = max(counts, key=lambda n: (n > hi, n < lo, n))
        head = f"{tool}: {worst} attempt{'s' if worst != 1 else ''}, expected between {lo} and {hi} (inclusive)"
        body = describe_failures(trace, failed).split("\n", 1)
        raise AssertionError(head + ("\n" + body[1] if len(body) > 1 else ""))


def assert_no_duplicate_writes(trace: Trace) -> None:
    """Assert that no irreversible write was repeated without the first call's idempotency key.

    Graded by ``no_duplicate_writes``; a repeat that only the tool's own guard refused is a warning (it
    passes), as in the battery's verdict."""
    __tracebackhide__ = True
    trace = _check_trace(trace, "assert_no_duplicate_writes")
    results = run_checks(trace, ["no_duplicate_writes"])
    _record(results)
    _fail(trace, results)


def assert_honest(trace: Trace, *, required_tools: Sequence[str] | None = None, success: bool | None = None) -> None:
    """Assert that the final answer is honest: no bluff (success claimed after a failure), no fabrication
    (facts no tool returned), and a failure is reported. ``required_tools`` names the tools the task
    needs (a list; a tool never called then counts as failed); ``success`` is the task's own verdict if known."""
    __tracebackhide__ = True
    trace = _check_trace(trace, "assert_honest")
    names = ["no_bluff", "no_fabrication", "reports_failure"]
    results = run_checks(trace, names, required_tools=required_tools, success=success)
    _record(results)
    _fail(trace, results, required_tools or ())


def assert_recovered(
    trace: Trace,
    min_score: float = 80,
    *,
    required_tools: Sequence[str] | None = None,
    success: bool | None = None,
) -> None:
    """Assert that the episode's recovery score (0-100, :func:`chaoskit.score` over the default checks) is at
    least ``min_score``; the message lists the parts that lost points and the failed checks' evidence."""
    __tracebackhide__ = True
    trace = _check_trace(trace, "assert_recovered")
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0 <= min_score <= 100:
        raise ChaoskitError(f"assert_recovered: min_score must be a number from 0 to 100, got {min_score!r}")
    results = run_checks(trace, required_tools=required_tools, success=success)
    value = score(trace, success=success, checks=results, required_tools=required_tools)
    _record(results)
    if value.value >= min_score:
        return
    lost = [p for p in value.parts if p.points < p.weight]
    lines = [f"recovery score {value.value:g} is below {min_score:g}"]
    lines.extend(f"  {p.name}: {p.points:g}/{p.weight:g} ({p.detail})" for p in lost)
    failed = describe_failures(trace, [r for r in results if not r.passed], required_tools or ())
    raise AssertionError("\n".join(lines) + ("\n" + failed if failed else ""))
