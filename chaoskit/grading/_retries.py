"""Checks on how an agent retries: bounded attempts, no identical retry storm, waiting as Retry-After asks."""

from __future__ import annotations

import itertools
import re

from chaoskit.grading._escalation import auth_error
from chaoskit.grading._modelcalls import model_retry_after, model_storms
from chaoskit.grading._result import CheckResult, Finding, by_tool, combine, short, times, where
from chaoskit.traces._records import AttemptRecord
from chaoskit.traces._trace import Trace

__all__ = [
    "IMMEDIATE_S",
    "adapts_retries",
    "honors_retry_after",
    "max_attempts",
    "min_attempts",
    "no_retry_storm",
    "rejection",
]


def max_attempts(trace: Trace, tool: str, n: int) -> CheckResult:
    """``tool`` was attempted at most ``n`` times in each episode; ``tool="*"`` bounds every tool.

    Fails with the attempts beyond the n-th as evidence. Cancelled attempts count: the agent made those
    calls. Blind spot: calls with different arguments count too; use :func:`no_retry_storm` for identical
    retries only.
    """
    name = f"max_attempts({tool}, {n})"
    findings = []
    for ep in trace.episodes:
        for one, atts in by_tool(ep).items():
            if tool in ("*", one) and len(atts) > n:
                findings.append(
                    Finding(
                        "fail",
                        f"{where(trace, ep)}{one} was called {len(atts)} times; at most {n} allowed: bound the "
                        f"retries (max_retries={max(n - 1, 0)}) or stop retrying errors that will not go away.",
                        tuple(a.span_id for a in atts[n:]),
                    )
                )
    what = "every tool was" if tool == "*" else f"{tool} was"
    return combine(name, findings, f"{what[0].upper()}{what[1:]} called at most {n} times per episode.")


def min_attempts(trace: Trace, tool: str, n: int) -> CheckResult:
    """``tool`` was attempted at least ``n`` times in each episode, unless it succeeded earlier.

    Catches giving up on a transient fault: an agent that stops after one failed call to a tool whose
    fault clears on the next attempt. An episode that never called ``tool`` fails. When the last attempt
    was cancelled the run was interrupted, not given up: no finding. Blind spot: it cannot tell a
    deliberate, well-reasoned give-up (e.g. after a 401) from a lazy one.
    """
    name = f"min_attempts({tool}, {n})"
    findings = []
    for ep in trace.episodes:
        atts = [a for a in ep.attempts if a.tool == tool]
        if any(a.outcome == "ok" for a in atts) or len(atts) >= n or (atts and atts[-1].outcome == "cancelled"):
            continue
        if not atts:
            msg = f"{where(trace, ep)}{tool} was never called; expected at least {n} attempts."
            evidence: tuple[str, ...] = ()
        else:
            last = atts[-1]
            msg = (
                f"{where(trace, ep)}{tool} was given up after {times(len(atts))} (last: {last.describe_fault()}"
                f"{', ' + last.error_type if last.error_type else ''}); expected at least {n} attempts before "
                "giving up on a transient fault: retry with backoff."
            )
            evidence = tuple(a.span_id for a in atts)
        findings.append(Finding("fail", msg, evidence))
    return combine(name, findings, f"{tool} was retried at least {n} times or succeeded before that.")


def no_retry_storm(trace: Trace, n: int = 3) -> CheckResult:
    """No tool was called more than ``n`` times in a row with identical arguments (same args hash).

    "In a row" means consecutive attempts of that tool; calls to other tools in between do not break the
    run. A cancelled attempt neither extends nor breaks a run: the interruption came from outside. Blind
    spot: attempts without recorded arguments are not compared; polling loops that legitimately repeat the
    same call are flagged too. Model calls (recorded by ``ChaosMiddleware``'s model hook) count too: more than
    ``n`` calls of one model in a row, each after the previous one failed.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"no_retry_storm: n must be a whole number >= 1, got {n!r}")
    name = "no_retry_storm"
    findings = []
    for ep in trace.episodes:
        for tool, atts in by_tool(ep).items():
            run: list[AttemptRecord] = []
            for a in [*(x for x in atts if x.outcome != "cancelled"), None]:
                if a is not None and run and a.args_hash is not None and a.args_hash == run[-1].args_hash:
                    run.append(a)
                    continue
                if len(run) > n:
                    findings.append(
                        Finding(
                            "fail",
                            f"{where(trace, ep)}{tool} was called {len(run)} times in a row with identical arguments "
                            f"(limit {n}); after {run[0].describe_fault()} on the first call it kept retrying: "
                            "add a retry limit and backoff, or change the request.",
                            tuple(x.span_id for x in run[n:]),
                        )
                    )
                run = [a] if a is not None else []
        findings += model_storms(trace, ep, n)
    return combine(name, findings, f"No tool was called more than {n} times in a row with the same arguments.")


#: slack for clocks at microsecond precision and exporters that round
_TOLERANCE_S = 0.001
#: below this gap a retry counts as immediate (no backoff at all)
IMMEDIATE_S = 0.01


def honors_retry_after(trace: Trace, *, min_backoff: float = IMMEDIATE_S) -> CheckResult:
    """After a fault that carried ``retry_after`` (a 429, or any HTTP fault with Retry-After), the next
    attempt of that tool starts no earlier than ``retry_after`` seconds after the failed attempt ended
    (**fail** otherwise). An identical retry less than ``min_backoff`` seconds (default 10 ms) after a
    timeout or a 5xx (no backoff at all) is a **warn**. A cancelled attempt asked for no wait.

    Real HTTP errors count too: an exception with ``status`` / ``status_code`` and ``retry_after`` is
    recorded on the span (``http.response.status_code``, ``chaoskit.retry_after``). Blind spots: a real
    error that does not expose its Retry-After that way is only seen as its status; a retry with different
    arguments after a timeout is not flagged; the gap is measured between spans, so it includes any time the
    agent spent thinking. Model calls (recorded by ``ChaosMiddleware``'s model hook) are held to the same
    rules: the next call of a model after a failed one that asked to wait.
    """
    name = "honors_retry_after"
    findings: list[Finding] = []
    for ep in trace.episodes:
        for tool, atts in by_tool(ep).items():
            for prev, nxt in itertools.pairwise(atts):
                if prev.outcome != "error":
                    continue
                gap = nxt.start_time - prev.end_time
                ra = prev.retry_after
                if ra is not None:
                    if gap + _TOLERANCE_S < ra:
                        findings.append(
                            Finding(
                                "fail",
                                f"{where(trace, ep)}{tool} was retried {gap:.3f}s after {prev.describe_fault()}, which "
                                f"asked to wait {ra:g}s: honour Retry-After before the next attempt.",
                                (prev.span_id, nxt.span_id),
                            )
                        )
                    continue
                status = prev.http_status
                transient = (
                    prev.fault_type == "timeout"
                    or (status is not None and status >= 500)
                    or (prev.error_type is not None and "Timeout" in prev.error_type)
                )
                if transient and gap < min_backoff and nxt.args_hash is not None and nxt.args_hash == prev.args_hash:
                    findings.append(
                        Finding(
                            "warn",
                            f"{where(trace, ep)}{tool} was retried {gap * 1000:.1f}ms after {prev.describe_fault()} "
                            f"{'(' + prev.error_type + ') ' if prev.fault_type is None and prev.error_type else ''}"
                            "with the same arguments and no backoff: wait (exponential backoff with jitter) before "
                            "retrying.",
                            (prev.span_id, nxt.span_id),
                        )
                    )
        findings += model_retry_after(trace, ep, min_backoff)
    return combine(name, findings, "Every retry after a Retry-After waited long enough, and none was immediate.")


#: error names and texts of a failure that passes by itself (a retry as it was may succeed)
_TRANSIENT_TEXT = re.compile(
    r"timeout|timed out|temporar|unavailable|connection|reset|overload|rate.?limit|too many requests|try again|"
    r"throttl|busy|econn|broken pipe",
    re.I,
)
#: 4xx statuses a retry as it was may pass or that new arguments cannot fix: timeout, rate limit, auth
_NOT_REJECTIONS = frozenset({401, 403, 407, 408, 425, 429})


def rejection(a: AttemptRecord) -> bool:
    """The call failed because of what it asked, so the same request will fail again: an HTTP 4xx (401, 403,
    408 and 429 aside), or the tool's own error (raised or returned) that does not read as transient or auth."""
    if a.outcome == "cancelled" or (a.outcome != "error" and not a.refused):
        return False
    status = a.http_status
    if status is not None:
        return 400 <= status < 500 and status not in _NOT_REJECTIONS
    if a.injected or a.fault_type is not None:
        return False  # an injected error is chance, not the request's fault: retrying it as it was is sound
    text = f"{a.error_type or ''} {a.error_message or ''}"
    return not _TRANSIENT_TEXT.search(text) and not auth_error(a)


def adapts_retries(trace: Trace) -> CheckResult:
    """A retry after the tool rejected the request changed the request: **warn** when it was sent again unchanged.

    A rejection is an HTTP 4xx (401, 403, 408 and 429 aside: those ask for credentials or for waiting, not for other
    arguments), or the tool's own error, raised or returned (``{"error": "invalid date"}``), that does not read
    as transient (timeout, connection, unavailable, rate limit) or as an authentication error. The next attempt
    of that tool with the same arguments hash is the same request again; with other arguments it adapted. Scoring:
    this check is part of *bounded retries* (:mod:`chaoskit.grading._score`), so an unchanged retry after a
    rejection earns half of that part's points and a changed one all of them; after a transient failure (a timeout,
    a 5xx, a 429) both are sound and neither costs anything. Injected ``error`` faults are chance, not the
    request's fault, and are left out.

    Blind spots: a tool whose own errors for bad arguments read like transient ones; a change that does not
    fix anything (a new request id) counts as adapting; attempts without recorded arguments are not compared.
    """
    findings: list[Finding] = []
    adapted = 0
    for ep in trace.episodes:
        for tool, atts in by_tool(ep).items():
            live = [a for a in atts if a.outcome != "cancelled"]
            for prev, nxt in itertools.pairwise(live):
                if not rejection(prev) or prev.args_hash is None or nxt.args_hash is None:
                    continue
                if nxt.args_hash != prev.args_hash:
                    adapted += 1
                    continue
                why = prev.describe_fault() if prev.http_status is not None else f"{prev.error_type or 'an error'}"
                findings.append(
                    Finding(
                        "warn",
                        f"{where(trace, ep)}{tool} was sent again with the same arguments after the tool rejected them "
                        f"({why}: {short(prev.error_message, 60)}); the same request fails the same way: change the "
                        "arguments, or stop and report the error.",
                        (prev.span_id, nxt.span_id),
                    )
                )
    ok = "Every retry after a rejected request changed the request"
    count = f" ({adapted} {'retry' if adapted == 1 else 'retries'} changed)" if adapted else ""
    return combine("adapts_retries", findings, f"{ok}{count}.")
