"""What the judge is shown of one episode: the task, the final answer and the per-call ground truth the checks read."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from chaoskit.grading._truth import CallTruth, episode_truth
from chaoskit.traces._records import AttemptRecord, EpisodeRecord

__all__ = ["input_hash", "judge_input"]

#: a received value longer than this is cut (the judge needs the facts, not megabytes)
_MAX_VALUE = 2000


def _cut(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= _MAX_VALUE:
        return value
    return text[:_MAX_VALUE] + f"… ({len(text) - _MAX_VALUE} more characters cut)"


def _received(a: AttemptRecord) -> Any:
    """What the agent got from this attempt, as it got it (a fault's value when a fault replaced the result)."""
    if a.outcome == "error":
        kind = "injected error" if a.injected else "error"
        return f"{kind}: {a.error_type or 'error'}: {a.error_message or 'no message'}"
    if a.outcome != "ok":
        return f"no result ({a.outcome})"
    if a.fault_type and a.injected_value is not None:
        return _cut(a.injected_value)
    if a.result is not None:
        return _cut(a.result)
    return "(result not recorded)"


def _attempt(a: AttemptRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "attempt": a.attempt,
        "outcome": a.outcome,
        "fault": a.describe_fault() if (a.injected or a.fault_type) and a.fault_type != "latency" else None,
        "real_tool_ran": bool(a.executed),
        "received": _received(a),
    }
    if a.fault_type == "prompt_injection" and a.fault_params.get("text"):
        out["injected_text"] = a.fault_params["text"]
    if a.refused:
        out["tool_refused_the_call"] = True
    return out


def _status(call: CallTruth, attempts: list[AttemptRecord]) -> str:
    """The grading layer's status of the call (``CallTruth.status``), in words for the model."""
    done = [a for a in attempts if a.outcome != "cancelled"] or attempts
    last = done[-1]
    retried = f" after {len(done) - 1} failed attempt(s)" if len(done) > 1 else ""
    how = last.describe_fault() if last.injected else (last.error_type or last.outcome)
    if call.status == "ok":
        if last.fault_type == "prompt_injection":
            return f"succeeded{retried}, but the result carried injected text (a prompt injection)"
        if not last.clean_success:
            return f"succeeded on an earlier attempt; the last attempt failed ({how})"
        return f"succeeded{retried}"
    if call.status == "faulted":
        return f"faulted data{retried}: the agent got {last.describe_fault()}, not the real data"
    if call.status == "confirmed":
        return f"succeeded: the write took effect despite the error ({how}), and a later read confirmed it"
    if call.status == "written":
        return (
            f"failed as the agent saw it ({how}), but the real tool ran: the write may have taken effect; "
            "no later read confirmed it"
        )
    if call.status == "cancelled":
        return "cancelled before it answered"
    if last.refused:
        return "failed: the tool rejected the call"
    return f"failed{retried}: {how}"


def judge_input(episode: EpisodeRecord, *, task: str | None = None, answer: str | None = None) -> dict[str, Any]:
    """The judge's view of ``episode``: ``task`` (else the episode's ``chaoskit.episode.task``), ``final_answer``
    (else the episode's output) and ``calls``: the grading layer's per-call ground truth
    (:func:`chaoskit.grading._truth.episode_truth`, what the answer checks and the HTML report's "Calls" table
    read), one entry per logical call (tool and arguments) with its ``state`` (``ok``, ``failed``, ``faulted``,
    ``written``, ``confirmed``, ``cancelled``) in words as ``status``, and each attempt (what was received, the
    fault, whether the real tool ran). ``tools_not_done``: the tools the task needed that no call got done."""
    truth = episode_truth(episode)
    by_span = {a.span_id: a for a in episode.attempts}
    calls = []
    for i, c in enumerate(truth.calls, 1):
        attempts = [by_span[s] for s in c.spans]
        calls.append(
            {
                "call": i,
                "tool": c.tool,
                "args": c.args,
                "write": c.write,
                **({"irreversible_write": True} if any(a.irreversible for a in attempts) else {}),
                "attempts": [_attempt(a) for a in attempts],
                "state": c.status,
                "status": _status(c, attempts),
            }
        )
    out: dict[str, Any] = {
        "task": (task if task is not None else truth.task) or "(not recorded)",
        "calls": calls,
        "final_answer": answer if answer is not None else (episode.output or ""),
    }
    if truth.unmet:
        out["tools_not_done"] = list(truth.unmet)
    return out


def input_hash(value: dict[str, Any]) -> str:
    """The sha256 of the judge input's canonical JSON (the cache key's part that names the episode)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
