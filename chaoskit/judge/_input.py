"""What the judge is shown of one episode: the task, the final answer and the ground truth of every tool call."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from chaoskit.grading._model import AttemptRecord, EpisodeRecord, attempt_order
from chaoskit.semconv import EPISODE_TASK

__all__ = ["DATA_FAULTS", "input_hash", "judge_input"]

#: faults that change what the tool returned: the agent got a result, but not the real data
DATA_FAULTS = frozenset({"empty", "partial", "garbage", "schema_drift", "stale_state", "prompt_injection"})
#: a received value longer than this is cut (the judge needs the facts, not megabytes)
_MAX_VALUE = 2000


def _cut(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= _MAX_VALUE:
        return value
    return text[:_MAX_VALUE] + f"… ({len(text) - _MAX_VALUE} more characters cut)"


def _received(a: AttemptRecord) -> Any:
    """What the agent got from this attempt, as it got it."""
    if a.outcome == "error":
        kind = "injected error" if a.injected else "error"
        return f"{kind}: {a.error_type or 'error'}: {a.error_message or 'no message'}"
    if a.outcome != "ok":
        return f"no result ({a.outcome})"
    if a.fault_type in DATA_FAULTS and a.injected_value is not None:
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


def _status(attempts: list[AttemptRecord]) -> str:
    """The logical call's final status, from its last attempt (and whether a write ran along the way)."""
    last = attempts[-1]
    retried = f" after {len(attempts) - 1} failed attempt(s)" if len(attempts) > 1 else ""
    if last.outcome == "ok" and last.fault_type in DATA_FAULTS:
        return (
            f"faulted data{retried}: the agent got {last.describe_fault()}, not the real data"
            if last.fault_type != "prompt_injection"
            else f"succeeded{retried}, but the result carried injected text (a prompt injection)"
        )
    if last.clean_success:
        return f"succeeded{retried}"
    if last.outcome == "ok":
        return f"returned{retried} ({last.describe_fault()})"
    how = last.describe_fault() if last.injected else (last.error_type or last.outcome)
    if any(a.clean_success for a in attempts):
        return f"the last attempt failed ({how}); an earlier attempt of the same call succeeded"
    if any(a.injected and a.executed and a.outcome == "error" for a in attempts):
        return (
            f"failed as the agent saw it ({how}), but the real tool ran: the write may have taken effect; "
            "only a later read can tell"
        )
    if last.refused:
        return "failed: the tool rejected the call"
    return f"failed{retried}: {how}"


def judge_input(episode: EpisodeRecord, *, task: str | None = None, answer: str | None = None) -> dict[str, Any]:
    """The judge's view of ``episode``: ``task`` (else the episode's ``chaoskit.episode.task``), ``final_answer``
    (else the episode's output) and ``calls``: one entry per logical call (tool and arguments) in order of its
    first attempt, with each attempt (what was received, the fault, whether the real tool ran) and the call's
    final status. A call that failed stays failed whatever another call of the same tool did.

    This is the one place the judge's ground truth is built."""
    if task is None:
        raw = episode.attributes.get(EPISODE_TASK)
        task = raw if isinstance(raw, str) else None
    calls: dict[tuple[str, str], list[AttemptRecord]] = {}
    for a in sorted(episode.attempts, key=attempt_order):
        key = a.args_hash or json.dumps(a.args, sort_keys=True, default=str)
        calls.setdefault((a.tool, key), []).append(a)
    out = []
    for i, ((tool, _), attempts) in enumerate(calls.items(), 1):
        irreversible = any(a.irreversible for a in attempts)
        out.append(
            {
                "call": i,
                "tool": tool,
                "args": attempts[0].args,
                **({"irreversible_write": True} if irreversible else {}),
                "attempts": [_attempt(a) for a in attempts],
                "status": _status(attempts),
            }
        )
    return {
        "task": task or "(not recorded)",
        "calls": out,
        "final_answer": answer if answer is not None else (episode.output or ""),
    }


def input_hash(value: dict[str, Any]) -> str:
    """The sha256 of the judge input's canonical JSON (the cache key's part that names the episode)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
