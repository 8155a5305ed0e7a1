"""The recovery checks by name: REGISTRY, DEFAULT_CHECKS, run_checks, and every check (public as ``chaoskit.checks``).

Each check is a ``(trace, **params) -> CheckResult`` function that reads only exported spans (a
:class:`chaoskit.Trace`), never in-process state: ``fail``, ``warn`` (passed, but a person should look) or
``pass``, with a sentence a person can act on and the span ids of the attempts that prove it. A check over a
trace with several episodes fails if it fails in any of them. The checks are heuristics over what the spans
record; each docstring says what its check cannot see, and ``docs/checks.md`` lists them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.grading._attacks import no_injection_followed
from chaoskit.grading._data_use import no_silent_default, no_truncated_overwrite, verifies_odd_values
from chaoskit.grading._escalation import no_credential_escalation
from chaoskit.grading._evidence import CANNOT_GRADE, evidence_gaps
from chaoskit.grading._honesty import no_bluff, no_fabrication, reports_failure, unmet_tools
from chaoskit.grading._modelcalls import bounded_model_retries, cost_under_faults, recovers_from_malformed_tool_call
from chaoskit.grading._result import CheckResult, tool_list
from chaoskit.grading._retries import adapts_retries, honors_retry_after, max_attempts, min_attempts, no_retry_storm
from chaoskit.grading._wording import claims_success, reports_failure_text
from chaoskit.grading._writes import no_duplicate_writes
from chaoskit.traces._trace import Trace

__all__ = [
    "CANNOT_GRADE",
    "DEFAULT_CHECKS",
    "REGISTRY",
    "CheckResult",
    "adapts_retries",
    "bounded_model_retries",
    "claims_success",
    "cost_under_faults",
    "evidence_gaps",
    "honors_retry_after",
    "max_attempts",
    "min_attempts",
    "no_bluff",
    "no_credential_escalation",
    "no_duplicate_writes",
    "no_fabrication",
    "no_injection_followed",
    "no_retry_storm",
    "no_silent_default",
    "no_truncated_overwrite",
    "recovers_from_malformed_tool_call",
    "reports_failure",
    "reports_failure_text",
    "run_checks",
    "unmet_tools",
    "verifies_odd_values",
]

#: every check by the name scenarios, ``chaoskit check --checks`` and :func:`run_checks` use
REGISTRY: dict[str, Callable[..., CheckResult]] = {
    "max_attempts": max_attempts,
    "min_attempts": min_attempts,
    "no_duplicate_writes": no_duplicate_writes,
    "honors_retry_after": honors_retry_after,
    "no_retry_storm": no_retry_storm,
    "no_bluff": no_bluff,
    "no_fabrication": no_fabrication,
    "reports_failure": reports_failure,
    "no_injection_followed": no_injection_followed,
    "bounded_model_retries": bounded_model_retries,
    "recovers_from_malformed_tool_call": recovers_from_malformed_tool_call,
    "cost_under_faults": cost_under_faults,
    "no_truncated_overwrite": no_truncated_overwrite,
    "verifies_odd_values": verifies_odd_values,
    "adapts_retries": adapts_retries,
    "no_credential_escalation": no_credential_escalation,
    "no_silent_default": no_silent_default,
}

#: the checks that need no parameters (``no_retry_storm`` uses its default n)
DEFAULT_CHECKS: tuple[str, ...] = (
    "no_duplicate_writes",
    "honors_retry_after",
    "no_retry_storm",
    "no_bluff",
    "no_fabrication",
    "reports_failure",
    "no_injection_followed",
    "no_truncated_overwrite",
    "adapts_retries",
    "no_credential_escalation",
    "no_silent_default",
)

_PARAMS: dict[str, tuple[str, ...]] = {
    "no_retry_storm": ("n",),
    "bounded_model_retries": ("max_retries",),
    "cost_under_faults": ("max_tokens_per_fault",),
    "honors_retry_after": ("min_backoff",),
    "no_bluff": ("required_tools", "success"),
    "reports_failure": ("required_tools", "success"),
    "no_injection_followed": ("required_tools",),
}
_LIMITS = ("max_attempts", "min_attempts")
_KNOWN_PARAMS = frozenset({*(p for ps in _PARAMS.values() for p in ps), *_LIMITS})


def run_checks(trace: Trace, names: Iterable[str] | None = None, **params: Any) -> list[CheckResult]:
    """Run checks by name (default: :data:`DEFAULT_CHECKS`).

    ``params`` go to the checks that accept them: ``n`` (no_retry_storm), ``min_backoff``
    (honors_retry_after), ``required_tools`` (a list of tool names, never a bare string: no_bluff,
    reports_failure, no_injection_followed) and
    ``success`` (no_bluff, reports_failure). ``max_attempts`` /
    ``min_attempts`` take ``{tool: n}`` mappings as ``max_attempts={"search": 3}`` and run once per tool
    (also when ``names`` is None); the key ``"*"`` stands for every tool in the trace that has no entry of
    its own (``max_attempts={"*": 5, "search": 3}``). Naming them without such a mapping, an unknown
    parameter or a limit that is not a whole number is a :class:`~chaoskit.ChaoskitError`.

    A trace with an episode that cannot be graded gets, instead of any verdict, one failed result named
    :data:`CANNOT_GRADE` (``"cannot_grade"``) per such episode, saying why (:func:`evidence_gaps`): its plan's
    faults name tools but no attempt of them went through chaoskit, or the model asked for tools the faults
    target and those calls ran without chaoskit. A trace with nothing to grade is never a pass.
    """
    unknown = sorted(set(params) - _KNOWN_PARAMS)
    if unknown:
        raise ChaoskitError(
            f"run_checks: unknown parameter(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KNOWN_PARAMS))}"
        )
    if "required_tools" in params:
        params["required_tools"] = tool_list(params["required_tools"], "run_checks")
    if names is None:
        names = [*DEFAULT_CHECKS, *(n for n in _LIMITS if params.get(n))]
    elif isinstance(names, str):
        raise ChaoskitError(f"run_checks: names must be a list of check names, not the string {names!r}")
    results: list[CheckResult] = []
    for name in names:
        func = REGISTRY.get(name)
        if func is None:
            raise ChaoskitError(f"unknown check {name!r}; known checks: {', '.join(REGISTRY)}")
        if name in _LIMITS:
            results.extend(func(trace, tool, n) for tool, n in _limits(trace, name, params.get(name)))
            continue
        kwargs = {k: params[k] for k in _PARAMS.get(name, ()) if params.get(k) is not None}
        results.append(func(trace, **kwargs))
    # after the checks ran, so that a bad parameter is still reported; their verdicts are then void
    return evidence_gaps(trace) or results


def _limits(trace: Trace, name: str, limits: Any) -> list[tuple[str, int]]:
    """``{tool: n}`` checked and with ``"*"`` expanded to every other tool the trace called."""
    if not isinstance(limits, dict) or not limits:
        raise ChaoskitError(f"{name} needs limits per tool, e.g. {name}={{'search': 3}} or {name}={{'*': 5}}")
    low = 0 if name == "max_attempts" else 1
    for tool, n in limits.items():
        if not isinstance(tool, str) or not tool:
            raise ChaoskitError(f"{name}: tool names must be non-empty strings (or '*'), got {tool!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < low:
            raise ChaoskitError(f"{name}[{tool!r}] must be a whole number >= {low}, got {n!r}")
    out = [(tool, n) for tool, n in limits.items() if tool != "*"]
    if "*" in limits:
        called = dict.fromkeys(a.tool for a in trace.attempts)
        rest = [t for t in called if t not in limits]
        # with no other tool called, one "*" result still says the bound was checked
        out.extend([(t, limits["*"]) for t in rest] or [("*", limits["*"])])
    return out
