"""Ground truth per logical call (tool + arguments): what the agent asked for, got, and what a fault changed."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chaoskit.grading._attack_text import name_words
from chaoskit.grading._result import as_text, leaves, required_of
from chaoskit.semconv import EPISODE_REQUIRED_TOOLS, EPISODE_TASK, FAULT_AFTER_WRITE, FAULT_STALE, FAULT_TEXT
from chaoskit.traces._records import ANSWER_KEPT, AttemptRecord, EpisodeRecord, param_key

__all__ = ["DATA_FAULTS", "CallTruth", "EpisodeTruth", "episode_truth", "is_write", "received_text"]


def _split(words: str) -> list[str]:
    return words.split()


#: faults after which the agent did not get the real data (``garbage`` covers ``stale`` and ``off_by_one``)
DATA_FAULTS = frozenset({"empty", "partial", "garbage", "schema_drift", "stale_state"})
_TEXT = param_key(FAULT_TEXT)
_AFTER_WRITE = param_key(FAULT_AFTER_WRITE)
_STALE = param_key(FAULT_STALE)

#: a tool whose name starts with one of these is a read whatever follows; every other tool counts as a write
_READ_VERBS = frozenset(
    _split(
        """get list read search find lookup look fetch query check view show describe retrieve count download browse
        open see inspect peek preview validate verify summarize summarise track estimate calculate quote"""
    )
)


def is_write(a: AttemptRecord) -> bool:
    """Declared ``irreversible=True``, or not named like a read: a tool whose name starts with a read verb
    (``get_sent_emails``, ``search_flights``) is a read; any other is taken as a write (``send_email``, and
    also ``make_payment`` or ``wire_funds``, whatever verb a tool's author chose)."""
    return a.irreversible or _named_as_write(a.tool)


@functools.lru_cache(maxsize=1024)
def _named_as_write(tool: str) -> bool:
    words = name_words(tool)
    return bool(words) and words[0] not in _READ_VERBS


def received_text(a: AttemptRecord) -> str | None:
    """What the agent got from an attempt that was real data, as text: a clean result, the tool's own error
    message, the injected text taken out of a prompt injection. None for a fault's invention."""
    if a.outcome == "error":
        return None if a.injected or a.fault_type else a.error_message
    if a.outcome != "ok":
        return None
    if a.clean_success:
        return a.result
    if a.fault_type == "prompt_injection":
        seen = a.injected_value if a.injected_value is not None else a.result
        text = str(a.fault_params.get(_TEXT) or "")
        whole = as_text(seen) if seen is not None else ""
        for form in (text, json.dumps(text, ensure_ascii=False)[1:-1]) if text else ():
            whole = whole.replace(form, " ")
        return whole or None
    return None


@dataclass(frozen=True, slots=True)
class CallTruth:
    """One logical call: every attempt of one tool with the same arguments, and how it ended.

    ``status``: ``ok`` (the last attempt answered with real data), ``failed`` (it raised, timed out or was
    refused), ``faulted`` (a data fault: the agent got empty, cut, wrong, outdated or reshaped data),
    ``written`` (a write that took effect but answered with an error, never confirmed by a later read),
    ``confirmed`` (such a write, confirmed by a later clean read), ``cancelled`` (interrupted from outside).
    """

    tool: str
    args: Any
    write: bool
    status: str
    faults: tuple[str, ...]
    spans: tuple[str, ...]
    error: str | None
    #: the faulted value the agent got last (data faults only)
    faulted_value: Any
    start_time: float
    end_time: float
    #: a ``garbage: stale`` fault served an earlier result for other arguments
    stale: bool = False
    #: a data fault took data away (empty, partial, a schema drift that dropped fields), not only reshaped it
    lost: bool = False

    @property
    def failed(self) -> bool:
        """The agent did not get what it asked for: an error, a data fault, or a write it cannot know happened."""
        return self.status in ("failed", "faulted", "written")

    def anchors(self) -> list[str]:
        """The call's distinctive argument values (ids, names, amounts, a path's file name): what an answer
        names it by."""
        out = []
        for v in leaves(self.args):
            s = str(v).strip()
            if isinstance(v, bool) or len(s) < 2 or len(s) > 80:
                continue
            if isinstance(v, int | float) or re.search(r"\d", s) or (len(s) >= 4 and len(s.split()) <= 4):
                out.append(s)
            # "2024-06-20T11:30" is named "11:30" (and "11:30" also "11h30")
            for hh, mm in re.findall(r"(?:T|\s|^)(\d{2}):(\d{2})", s):
                out.extend({f"{int(hh)}:{mm}", f"{hh}:{mm}"})
            base = s.rstrip("/").rsplit("/", 1)[-1]
            if "/" in s and len(base) >= 3 and base != s:
                out.append(base)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the HTML report's per-episode call table and the answer checks read the same fields."""
        return {
            "tool": self.tool,
            "args": self.args,
            "write": self.write,
            "status": self.status,
            "faults": list(self.faults),
            "attempts": len(self.spans),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class EpisodeTruth:
    """The structured summary of one episode the answer checks read: the task, each logical call with what
    was done, received and faulted, the tools the task needed that never answered, and the injected texts."""

    task: str
    calls: tuple[CallTruth, ...]
    unmet: tuple[str, ...]
    injections: tuple[str, ...]

    @property
    def failed(self) -> list[CallTruth]:
        """The calls that stayed failed (errors, data faults, unconfirmed writes)."""
        return [c for c in self.calls if c.failed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``attempts.calls`` in the runner's results)."""
        return {
            "calls": [c.to_dict() for c in self.calls],
            "unmet": list(self.unmet),
            "injections": len(self.injections),
        }


def _key(a: AttemptRecord) -> str:
    """Tool and arguments, without the idempotency key (a retry under a fresh key is the same call)."""
    args = a.args
    if isinstance(args, dict) and a.idempotency_key is not None:
        args = {k: v for k, v in args.items() if v != a.idempotency_key}
    if args is None:
        return f"{a.tool}\x00{a.args_hash or a.span_id}"
    return f"{a.tool}\x00{json.dumps(args, sort_keys=True, default=str, ensure_ascii=False)}"


def _confirmed(write: AttemptRecord, later: Iterable[AttemptRecord], anchors: list[str]) -> bool:
    """A clean read after the write that looked at what it wrote (shares an argument value with it, or any
    clean read when the write's arguments give nothing to match)."""
    for b in later:
        if b.start_time < write.end_time or not b.clean_success or is_write(b):
            continue
        seen = as_text(b.args) + "\n" + (b.result or "")
        if not anchors or any(x.lower() in seen.lower() for x in anchors):
            return True
    return False


def _status(atts: list[AttemptRecord], ep: EpisodeRecord, anchors: list[str]) -> str:
    last = [a for a in atts if a.outcome != "cancelled"]
    if not last:
        return "cancelled"
    # any clean answer of this call, even before a later failed retry, is what the agent received
    if any(a.clean_success or (a.fault_type == "prompt_injection" and a.outcome == "ok") for a in last):
        return "ok"
    if last[-1].outcome == "ok":
        return "faulted"
    wrote = [a for a in last if a.executed and a.outcome == "error" and a.fault_params.get(_AFTER_WRITE)]
    if wrote:
        return "confirmed" if _confirmed(wrote[0], ep.attempts, anchors) else "written"
    return "failed"


def _lost(a: AttemptRecord) -> bool:
    if a.fault_type in ("empty", "partial"):
        return True
    drop = a.fault_params.get("drop")
    return a.fault_type == "schema_drift" and bool(drop) and drop not in ("[]", [])


#: the truths of the episodes graded last, by ``id(episode)``: the episode itself (held, so that its id is not
#: reused while it is here) and its truth per ``required_tools``; three checks read one episode's truth
_RECENT: dict[int, tuple[EpisodeRecord, dict[tuple[str, ...] | None, tuple[Any, Any, EpisodeTruth]]]] = {}
_RECENT_MAX = 8


def episode_truth(ep: EpisodeRecord, required_tools: Iterable[str] | None = None) -> EpisodeTruth:
    """The per-call ground truth of one episode (see :class:`EpisodeTruth`). Computed once per episode and
    ``required_tools`` for the episodes read last: no_bluff, reports_failure and no_fabrication share it."""
    key = None if required_tools is None else tuple(required_tools)
    held = _RECENT.get(id(ep))
    if held is None or held[0] is not ep:
        if len(_RECENT) >= _RECENT_MAX:
            _RECENT.clear()
        held = _RECENT[id(ep)] = (ep, {})
    # the two attributes the truth reads: a caller that changed them in the record's dict gets a fresh truth
    task, required = ep.attributes.get(EPISODE_TASK), ep.attributes.get(EPISODE_REQUIRED_TOOLS)
    known = held[1].get(key)
    if known is not None and known[0] == task and known[1] == required:
        return known[2]
    truth = _episode_truth(ep, key)
    held[1][key] = (task, required, truth)
    return truth


def _episode_truth(ep: EpisodeRecord, required_tools: Iterable[str] | None) -> EpisodeTruth:
    groups: dict[str, list[AttemptRecord]] = {}
    for a in ep.attempts:
        groups.setdefault(_key(a), []).append(a)
    calls = []
    for atts in groups.values():
        first = atts[0]
        probe = CallTruth(first.tool, first.args, False, "", (), (), None, None, 0.0, 0.0)
        status = _status(atts, ep, probe.anchors())
        faults = tuple(dict.fromkeys(a.fault_type for a in atts if a.fault_type and a.fault_type not in ANSWER_KEPT))
        last = atts[-1]
        calls.append(
            CallTruth(
                tool=first.tool,
                args=first.args,
                write=any(is_write(a) for a in atts),
                status=status,
                faults=faults,
                spans=tuple(a.span_id for a in atts),
                error=next((a.error_message or a.error_type for a in reversed(atts) if a.outcome == "error"), None),
                faulted_value=last.injected_value if status == "faulted" else None,
                start_time=first.start_time,
                end_time=last.end_time,
                stale=any(a.fault_type == "garbage" and a.fault_params.get(_STALE) for a in atts),
                lost=any(_lost(a) for a in atts),
            )
        )
    required = required_of(ep, required_tools) or []
    ok_tools = {c.tool for c in calls if c.status in ("ok", "confirmed")}
    unmet = tuple(t for t in required if t not in ok_tools)
    task = ep.attributes.get(EPISODE_TASK)
    injections = tuple(str(a.fault_params.get(_TEXT) or "") for a in ep.attempts if a.fault_type == "prompt_injection")
    return EpisodeTruth(task if isinstance(task, str) else "", tuple(calls), unmet, injections)
