"""Model calls as the episode span lists them, and the checks on how an agent retries them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass

from chaoskit.grading._result import CheckResult, Finding, combine, where
from chaoskit.semconv import EPISODE_MODEL_CALLS
from chaoskit.traces._records import EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = [
    "ModelCallRecord",
    "bounded_model_retries",
    "cost_under_faults",
    "model_calls",
    "model_retry_after",
    "model_storms",
    "recovers_from_malformed_tool_call",
]

#: slack for clocks at microsecond precision (as for tool attempts)
_TOLERANCE_S = 0.001
#: faults (and error names) after which an immediate retry had no backoff at all
_TRANSIENT = ("overloaded", "http", "timeout")


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One model call: its model and number, times (epoch seconds), outcome, fault and Retry-After."""

    model: str
    call: int
    start: float
    end: float
    outcome: str
    fault: str | None
    retry_after: float | None
    error: str | None
    span_id: str
    #: tokens the provider reported for the call (None: not reported)
    tokens: int | None = None
    #: a fault decided for the call that its entry point could not apply (``chaoskit.fault.skipped``)
    skipped: str | None = None

    def describe(self) -> str:
        """``an injected rate_limit`` / ``a ModelAPIError``: what made the call fail."""
        if self.fault:
            return f"an injected {self.fault}" + (f" (Retry-After {self.retry_after:g}s)" if self.retry_after else "")
        return f"a {self.error or 'failure'}"


def model_calls(ep: EpisodeRecord) -> list[ModelCallRecord] | str:
    """The model calls of ``ep`` in time order ([] when none were recorded); a string says why the list on
    its span cannot be read (then no model-call verdict may pass)."""
    raw = ep.attributes.get(EPISODE_MODEL_CALLS)
    if raw is None:
        return []
    try:
        items = json.loads(raw) if isinstance(raw, str) else None
        if not isinstance(items, list):
            raise ValueError("not a JSON list")
        out = [
            ModelCallRecord(
                model=str(c["model"] or "model"),
                call=int(c["call"]),
                start=float(c["start"]),
                end=float(c["end"]),
                outcome=str(c["outcome"]),
                fault=c.get("fault"),
                retry_after=None if c.get("retry_after") is None else float(c["retry_after"]),
                error=c.get("error"),
                span_id=str(c["span_id"]),
                tokens=_tokens(c),
                skipped=c.get("skipped"),
            )
            for c in items
        ]
    except (ValueError, TypeError, KeyError) as exc:
        return f"its {EPISODE_MODEL_CALLS} attribute cannot be read ({type(exc).__name__}: {exc})"
    return sorted(out, key=lambda c: (c.start, c.call))


def _tokens(c: dict[str, object]) -> int | None:
    counts = [c.get("input_tokens"), c.get("output_tokens")]
    if all(n is None for n in counts):
        return None
    return sum(int(n) for n in counts if isinstance(n, int | float | str))


def _by_model(calls: list[ModelCallRecord]) -> dict[str, list[ModelCallRecord]]:
    out: dict[str, list[ModelCallRecord]] = {}
    for c in calls:
        out.setdefault(c.model, []).append(c)
    return out


def _retry_runs(calls: list[ModelCallRecord]) -> Iterator[list[ModelCallRecord]]:
    """Each run of calls of one model where every call but the first follows a failed one (a retry)."""
    run: list[ModelCallRecord] = []
    for c in calls:
        if run and run[-1].outcome == "error":
            run.append(c)
            continue
        if run:
            yield run
        run = [c]
    if run:
        yield run


def _unreadable(trace: Trace, ep: EpisodeRecord, why: str) -> Finding:
    return Finding("fail", f"{where(trace, ep)}cannot grade the model calls: {why}.", (ep.span_id or "",))


def model_retry_after(trace: Trace, ep: EpisodeRecord, min_backoff: float) -> list[Finding]:
    """``honors_retry_after`` for the model calls of ``ep``: a retry sooner than the Retry-After fails, an
    immediate retry after an overload, a 5xx or a timeout warns."""
    calls = model_calls(ep)
    if isinstance(calls, str):
        return [_unreadable(trace, ep, calls)]
    found: list[Finding] = []
    for model, seq in _by_model(calls).items():
        for prev, nxt in itertools.pairwise(seq):
            if prev.outcome != "error":
                continue
            gap = nxt.start - prev.end
            if prev.retry_after is not None:
                if gap + _TOLERANCE_S < prev.retry_after:
                    found.append(
                        Finding(
                            "fail",
                            f"{where(trace, ep)}model {model} was called again {gap:.3f}s after {prev.describe()}, "
                            f"which asked to wait {prev.retry_after:g}s: honour Retry-After before the next model "
                            "call (LangChain's ModelRetryMiddleware does not read it).",
                            (prev.span_id, nxt.span_id),
                        )
                    )
                continue
            transient = prev.fault in _TRANSIENT or "Timeout" in (prev.error or "")
            if transient and gap < min_backoff:
                found.append(
                    Finding(
                        "warn",
                        f"{where(trace, ep)}model {model} was called again {gap * 1000:.1f}ms after {prev.describe()} "
                        "with no backoff: wait (exponential backoff with jitter) before retrying.",
                        (prev.span_id, nxt.span_id),
                    )
                )
    return found


def model_storms(trace: Trace, ep: EpisodeRecord, n: int) -> list[Finding]:
    """``no_retry_storm`` for the model calls of ``ep``: more than ``n`` calls of one model in a row, each
    after the previous one failed (the same request asked again)."""
    calls = model_calls(ep)
    if isinstance(calls, str):
        return [_unreadable(trace, ep, calls)]
    found: list[Finding] = []
    for model, seq in _by_model(calls).items():
        for run in _retry_runs(seq):
            if len(run) > n:
                found.append(
                    Finding(
                        "fail",
                        f"{where(trace, ep)}model {model} was called {len(run)} times in a row, each after the "
                        f"previous call failed (limit {n}); after {run[0].describe()} it kept asking: bound the "
                        "model retries and back off.",
                        tuple(c.span_id for c in run[n:]),
                    )
                )
    return found


def bounded_model_retries(trace: Trace, max_retries: int = 3) -> CheckResult:
    """After a failed model call, the agent (or its framework's retry middleware) called that model again at
    most ``max_retries`` times in a row before it succeeded or gave up. Fails with the calls beyond the bound
    as evidence; fails as "cannot grade" when no episode of the trace recorded its model calls (chaoskit saw
    them only through ``ChaosMiddleware``'s model hook). Blind spot: a retry loop that changes the model
    between attempts is counted per model.
    """
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"bounded_model_retries: max_retries must be a whole number >= 0, got {max_retries!r}")
    name = "bounded_model_retries"
    findings: list[Finding] = []
    seen = False
    for ep in trace.episodes:
        calls = model_calls(ep)
        if isinstance(calls, str):
            findings.append(_unreadable(trace, ep, calls))
            continue
        seen = seen or bool(calls)
        for model, seq in _by_model(calls).items():
            for run in _retry_runs(seq):
                if len(run) - 1 > max_retries:
                    findings.append(
                        Finding(
                            "fail",
                            f"{where(trace, ep)}model {model} was retried {len(run) - 1} times in a row after "
                            f"{run[0].describe()}; at most {max_retries} allowed: bound the model retries "
                            f"(ModelRetryMiddleware(max_retries={max_retries})).",
                            tuple(c.span_id for c in run[max_retries + 1 :]),
                        )
                    )
    if not seen and not findings:
        return CheckResult(
            name,
            False,
            "fail",
            "cannot grade: no episode recorded its model calls; put ChaosMiddleware in the agent's middleware "
            "(its model hook records each model call) to grade model retries.",
        )
    return combine(name, findings, f"Every model was retried at most {max_retries} times in a row after a failure.")


def recovers_from_malformed_tool_call(trace: Trace) -> CheckResult:
    """After a model call whose tool calls came back malformed (a ``malformed_tool_call`` fault: arguments that
    are not JSON), the agent asked the model again (it re-asked, or repaired and went on) and did not crash.
    Fails when the episode ended on that call: the user got the broken turn as the answer, or the run
    crashed. Passes with nothing to grade when no such fault fired. Blind spots: whether the next call
    repaired the arguments or asked for something else; a tool run with made-up arguments instead.
    """
    name = "recovers_from_malformed_tool_call"
    findings: list[Finding] = []
    fired = 0
    for ep in trace.episodes:
        calls = model_calls(ep)
        if isinstance(calls, str):
            findings.append(_unreadable(trace, ep, calls))
            continue
        for i, c in enumerate(calls):
            if c.fault != "malformed_tool_call":
                continue
            fired += 1
            if ep.outcome == "crashed":
                findings.append(
                    Finding(
                        "fail",
                        f"{where(trace, ep)}the run crashed after model {c.model} call {c.call} came back with "
                        "tool call arguments that are not valid JSON: catch the parse error and ask the model again.",
                        (c.span_id,),
                    )
                )
            elif not any(later.start >= c.end for later in calls[i + 1 :]):
                findings.append(
                    Finding(
                        "fail",
                        f"{where(trace, ep)}after model {c.model} call {c.call} came back with tool call arguments "
                        "that are not valid JSON, the agent never asked the model again: it ended on the broken "
                        "turn. Send the parse error back to the model (LangChain keeps such calls in "
                        "AIMessage.invalid_tool_calls, which create_agent does not answer).",
                        (c.span_id,),
                    )
                )
    ok = (
        "After every malformed tool call the agent asked the model again."
        if fired
        else "No malformed_tool_call fault fired: nothing to recover from."
    )
    return combine(name, findings, ok)


def _faults_in(ep: EpisodeRecord, calls: list[ModelCallRecord]) -> int:
    """The faults injected in ``ep``: model calls with a fault, tool attempts with an applied fault."""
    return sum(c.fault is not None for c in calls) + sum(a.fault_type is not None for a in ep.attempts)


def cost_under_faults(trace: Trace, max_tokens_per_fault: int | None = None) -> CheckResult:
    """Tokens spent per injected fault: each episode with faults against the mean of the trace's episodes
    without any (the same agent and task run clean, e.g. a battery's intensity 0), ``(tokens - baseline) /
    faults``. With ``max_tokens_per_fault`` an episode above it fails; without, the figures are reported and
    the check passes. Fails as "cannot grade" without a clean episode or without token usage on every model
    call (the provider reported none, or the calls were not seen through ``ChaosMiddleware``). Blind spots:
    a baseline of other tasks is compared all the same; tokens only, no price.
    """
    name = "cost_under_faults"
    clean: list[int] = []
    faulted: list[tuple[EpisodeRecord, int, int]] = []
    for ep in trace.episodes:
        calls = model_calls(ep)
        # a call that failed (a 429, a timeout) returned no usage and is billed nothing: it counts 0
        if isinstance(calls, str) or not calls or any(c.tokens is None and c.outcome == "ok" for c in calls):
            why = calls if isinstance(calls, str) else "not every answered model call has its token usage recorded"
            return CheckResult(name, False, "fail", f"{where(trace, ep)}cannot grade the cost: {why}.", ())
        tokens = sum(c.tokens or 0 for c in calls)
        n = _faults_in(ep, calls)
        if n:
            faulted.append((ep, tokens, n))
        else:
            clean.append(tokens)
    if not clean or not faulted:
        what = "no episode without faults to compare with" if not clean else "no episode with an injected fault"
        return CheckResult(name, False, "fail", f"cannot grade the cost: {what}.", ())
    baseline = sum(clean) / len(clean)
    findings: list[Finding] = []
    figures: list[str] = []
    for ep, tokens, n in faulted:
        per = (tokens - baseline) / n
        figures.append(f"{where(trace, ep)}{per:+.0f} tokens per fault ({tokens} for {n} fault(s))")
        if max_tokens_per_fault is not None and per > max_tokens_per_fault:
            findings.append(
                Finding(
                    "fail",
                    f"{where(trace, ep)}{per:.0f} tokens per injected fault ({tokens} tokens, {n} fault(s), against "
                    f"{baseline:.0f} without faults); at most {max_tokens_per_fault} allowed.",
                    (ep.span_id or "",),
                )
            )
    summary = f"Against {baseline:.0f} tokens without faults: " + "; ".join(figures[:5]) + "."
    return combine(name, findings, summary)
