"""The trajectory metrics: CDI, SVR, RIC, DAF and the tool argument hallucination rate (see docs/metrics.md)."""

from __future__ import annotations

import bisect
import fnmatch
import json
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from chaoskit.metrics._model_steps import CUT_MARK, StepRecord
from chaoskit.metrics._similarity import Vectors
from chaoskit.metrics._trajectory import Trajectory
from chaoskit.metrics._values import Known
from chaoskit.traces._records import AttemptRecord

__all__ = [
    "CDI_BANDS",
    "CLAIM_PATTERNS",
    "CYCLE_MIN_GAP",
    "CYCLE_SIMILARITY",
    "CYCLE_WINDOW",
    "DELEGATION_TEXT",
    "DELEGATION_TOOLS",
    "Hallucinations",
    "TrajectoryMetrics",
    "cdi_band",
    "claims",
    "context_drift_index",
    "delegation_amplification_factor",
    "hallucinated_arguments",
    "recursive_instability_coefficient",
    "silent_verification_rate",
    "text_delegations",
    "tool_argument_hallucination_rate",
    "trajectory_metrics",
    "unbacked_claim_steps",
]

#: the words that claim a verification (whole words, any case; "made sure" with any whitespace between)
CLAIM_PATTERNS: tuple[str, ...] = (
    "verified",
    "confirmed",
    "can confirm",
    "checked",
    "re-checked",
    "rechecked",
    "cross-checked",
    "cross-referenced",
    "double-checked",
    "validated",
    "made sure",
    "ensured",
)
_CLAIM = re.compile(
    r"(?<![\w-])(?:cross-checked|cross-referenced|double-checked|re-checked|"
    + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in CLAIM_PATTERNS if "-" not in p)
    + r")(?![\w-])",
    re.I,
)
#: a claim preceded (within three words, in the same clause) by one of these is a denial, not a claim:
#: "could not verify", "not checked"; a negation in an earlier clause ("it failed, but I confirmed ...") is not
_NEGATION = re.compile(
    r"\b(?:not|never|no|without|unable|cannot|can't|couldn't|wasn't|weren't|isn't|aren't|haven't|hasn't|hadn't|"
    r"didn't|failed|nothing)\b(?:\W+\w+){0,3}\W*$",
    re.I,
)
#: where a clause ends: punctuation, or a conjunction that starts a new statement
_CLAUSE = re.compile(r"[.;:!?,\n]|\b(?:but|so|however|although|though)\b", re.I)
#: the rest of a claim's sentence reports that the check failed: "I checked X, but the service returned an error"
_FAILURE_REPORT = re.compile(
    r"\b(?:error|errors|failed|fails|failure|unavailable|down|could\s+not|couldn't|cannot|can't|unable|timed?\s*out|"
    r"no\s+response|did\s+not\s+(?:answer|respond))\b",
    re.I,
)
#: two steps at least this far apart (and at least :data:`CYCLE_SIMILARITY` alike) close a cycle (RIC)
CYCLE_MIN_GAP = 3
#: two steps at least this similar (and at least :data:`CYCLE_MIN_GAP` apart) close a cycle (RIC)
CYCLE_SIMILARITY = 0.90
#: tools whose calls generate a sub-task (DAF); shell-style patterns
#: ``delegate_*`` and ``transfer_to_*`` are left out on purpose: ``delegate_payment`` and ``transfer_to_account``
#: are business tools; opt them in with ``delegation_tools=``
DELEGATION_TOOLS: tuple[str, ...] = (
    "delegate",
    "delegate_task",
    "spawn_agent",
    "spawn_subagent",
    "handoff",
    "handoff_to_*",
    "transfer_to_agent",
    "transfer_to_*_agent",
)
#: RIC compares a step with at most this many captured steps before it (a bound on time and memory: linear in
#: the trajectory's length); identical tool calls are matched over the whole trajectory
CYCLE_WINDOW = 64


def _claims(text: str) -> list[tuple[str, bool]]:
    """Each claim in ``text`` with whether the rest of its sentence reports that the check failed."""
    out: list[tuple[str, bool]] = []
    for m in _CLAIM.finditer(text):
        clause = _CLAUSE.split(text[: m.start()])[-1]
        if _NEGATION.search(clause):
            continue
        rest = re.split(r"[.;!?\n]", text[m.end() :], maxsplit=1)[0]
        out.append((m.group(0), bool(_FAILURE_REPORT.search(rest))))
    return out


def claims(text: str) -> list[str]:
    """The verification claims in ``text``: matches of :data:`CLAIM_PATTERNS` not denied just before in the same
    clause ("could not verify" is no claim; "it failed, but I confirmed" is one)."""
    return [c for c, _ in _claims(text)]


def _similarities(traj: Trajectory) -> tuple[list[int], Vectors] | None:
    """Indices of the captured steps with any content, and the vectors of [task] + those steps (fitted once per
    trajectory: CDI and RIC share them)."""
    if traj._similarity is not None:
        cached: tuple[list[int], Vectors] | None = traj._similarity or None
        return cached
    picked = [(i, s.document) for i, s in traj.captured_steps if s.document.strip()]
    found = ([i for i, _ in picked], Vectors([traj.task or "", *(d for _, d in picked)])) if picked else None
    object.__setattr__(traj, "_similarity", found or ())
    return found


def context_drift_index(traj: Trajectory) -> float | None:
    """CDI: the mean over captured steps of 1 - similarity(task, step); None without a task or a captured step."""
    if not traj.task or not traj.task.strip():
        return None
    sims = _similarities(traj)
    if sims is None:
        return None
    return float(1.0 - sims[1].block(slice(1, None), slice(0, 1)).mean())


#: the CDI bands: (upper bound, name); a CDI at or above the last bound is ``severe``
CDI_BANDS: tuple[tuple[float, str], ...] = ((0.3, "aligned"), (0.6, "moderate"), (0.9, "significant"))


def cdi_band(value: float | None) -> str | None:
    """The band of a CDI value: ``aligned`` < 0.3 <= ``moderate`` < 0.6 <= ``significant`` <= 0.9 <
    ``severe``; None for None. A value outside [0, 1] is an error."""
    if value is None:
        return None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"CDI is in [0, 1], got {value!r}")
    if value > 0.9:
        return "severe"
    return next((name for bound, name in CDI_BANDS if value < bound), "significant")


def _backing(traj: Trajectory, i: int, reports_failure: bool) -> bool:
    # a claim is backed by a tool call of that step or the one before that answered without a fault altering
    # it; a claim whose sentence reports the check failed ("I checked X, but it returned an error") by any call
    # made there (it is an honest report, not a bluff); with no tool spans at all in the trajectory (tools
    # chaoskit does not wrap), by a call the step asked for
    for j in (i, i - 1):
        made = traj.attempts_of_step(j)
        if any(a.clean_success for a in made) or (reports_failure and made):
            return True
        if not traj.attempts and 0 <= j < len(traj.steps) and traj.steps[j].tool_calls:
            return True
    return False


def silent_verification_rate(traj: Trajectory) -> float | None:
    """SVR: unbacked verification claims / claims, over the captured steps; None when nothing is claimed."""
    claimed = unbacked = 0
    for i, step in traj.captured_steps:
        for _, reports_failure in _claims(step.text or ""):
            claimed += 1
            unbacked += not _backing(traj, i, reports_failure)
    return unbacked / claimed if claimed else None


def unbacked_claim_steps(traj: Trajectory) -> list[int]:
    """The captured steps holding at least one verification claim no tool call backs (SVR's rule)."""
    return [
        i
        for i, step in traj.captured_steps
        if any(not _backing(traj, i, reports_failure) for _, reports_failure in _claims(step.text or ""))
    ]


def _call_keys(traj: Trajectory, i: int) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The distinct calls step ``i`` made (tool and arguments), and those of them that succeeded. Without tool
    spans a requested call counts as succeeded: nothing says otherwise."""
    made = traj.attempts_of_step(i)
    keys = {(a.tool, a.args_hash or json.dumps(a.args, sort_keys=True, default=str)) for a in made}
    ok = {(a.tool, a.args_hash or json.dumps(a.args, sort_keys=True, default=str)) for a in made if a.clean_success}
    requested = {(c.name, json.dumps(c.arguments, sort_keys=True, default=str)) for c in traj.steps[i].tool_calls}
    keys |= requested
    if not traj.attempts:
        ok |= requested
    return keys, ok


def _similar_steps(traj: Trajectory) -> set[int]:
    """The captured steps at least :data:`CYCLE_SIMILARITY` alike to a captured step at least
    :data:`CYCLE_MIN_GAP` steps and at most :data:`CYCLE_WINDOW` captured steps before them."""
    sims = _similarities(traj)
    if sims is None:
        return set()
    indices, vectors = sims
    similar: set[int] = set()
    # blocks of rows against the window before them: memory and time O(n * window), not O(n^2)
    for lo in range(0, len(indices), CYCLE_WINDOW):
        hi = min(len(indices), lo + CYCLE_WINDOW)
        first = max(0, lo - CYCLE_WINDOW)
        block = vectors.block(slice(lo + 1, hi + 1), slice(first + 1, hi + 1))  # row 0 is the task
        for b in range(lo, hi):
            j = indices[b]
            reach = bisect.bisect_right(indices, j - CYCLE_MIN_GAP, 0, b)  # earlier steps far enough back
            start = max(first, b - CYCLE_WINDOW)
            if reach > start and (block[b - lo, start - first : reach - first] >= CYCLE_SIMILARITY).any():
                similar.add(j)
    return similar


def recursive_instability_coefficient(traj: Trajectory) -> float | None:
    """RIC: steps that close a cycle / steps; None without steps. Step *j* closes a cycle when an earlier step
    *i* with j - i >= 3 (and at most :data:`CYCLE_WINDOW` captured steps back) is at least 0.90 similar to it, or
    made an identical tool call (same tool and arguments) that had already succeeded. Retrying a call that never
    succeeded is a retry (``no_retry_storm`` judges those), not a loop: a step that only retries such calls does
    not close a cycle by its text either."""
    n = len(traj.steps)
    if n == 0:
        return None
    similar = _similar_steps(traj)
    succeeded: dict[tuple[str, str], int] = {}  # where each distinct call first succeeded
    tried: set[tuple[str, str]] = set()
    cycles = 0
    for j in range(n):
        keys, ok = _call_keys(traj, j)
        # a step that only retries calls that were made and never succeeded is a retry, however alike its text
        retry = bool(keys) and keys <= tried and not any(k in succeeded for k in keys)
        if (j in similar and not retry) or any(succeeded.get(k, j) <= j - CYCLE_MIN_GAP for k in keys):
            cycles += 1
        tried |= keys
        for k in ok:
            succeeded.setdefault(k, j)
    return cycles / n


def _delegating(name: str, tools: Collection[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in tools)


_AGENT = r"(?:sub-?agents?|helper\s+agents?|worker\s+agents?|specialist\s+agents?|another\s+agent)\b"
_NEW = r"(?:(?:a|an|one|two|three|four|five|another|new|separate|dedicated)\s+){0,2}"
#: a step's text that hands work to another agent: "I'll hand this to a sub-agent", "delegating the search to a
#: worker agent", "spawning two sub-agents", "let a sub-agent handle it" (DAF from reasoning text). "Sub-task"
#: alone is not one (agents number their own sub-tasks), nor is asking *the* sub-agent (one already counted)
DELEGATION_TEXT = re.compile(
    r"\b(?:(?:hand(?:s|ing|ed)?|delegat(?:e|es|ing|ed)|pass(?:es|ing|ed)?|assign(?:s|ing|ed)?)(?:\s+\w+){0,3}?"
    r"\s+(?:off\s+)?to\s+(?:the\s+)?" + _NEW + _AGENT + "|"
    r"(?:spawn(?:s|ing|ed)?|start(?:s|ing|ed)?|launch(?:es|ing|ed)?|let|ask(?:s|ing|ed)?)\s+" + _NEW + _AGENT + ")",
    re.I,
)
_NOT_DELEGATING = re.compile(
    r"\b(?:won't|wouldn't|shouldn't|don't|doesn't|instead\s+of|rather\s+than|no\s+need\s+to)\b(?:\W+\w+){0,3}\W*$",
    re.I,
)
_COUNT = {"two": 2, "three": 3, "four": 4, "five": 5}


def _text_delegations(text: str) -> int:
    """Sub-tasks a step's text says it hands to other agents ("spawning two sub-agents" is 2); a denial in the
    same clause ("I won't hand this to a sub-agent") is none."""
    n = 0
    for m in DELEGATION_TEXT.finditer(text):
        before = _CLAUSE.split(text[: m.start()])[-1]
        if _NEGATION.search(before) or _NOT_DELEGATING.search(before):
            continue
        # "two sub-agents", not "hand these two files to a sub-agent": the number right before the agents
        many = re.search(
            r"\b(two|three|four|five)\s+(?:(?:new|separate|dedicated)\s+)?" + _AGENT + "$", m.group(0), re.I
        )
        count = _COUNT[many.group(1).lower()] if many else 1
        n += count
    return n


def text_delegations(traj: Trajectory, tools: Collection[str] = DELEGATION_TOOLS) -> int:
    """Sub-tasks described in the reasoning text of steps that made no delegation call (a step that says "I'll
    hand this to a sub-agent" and calls ``delegate`` is counted once, by its call)."""
    n = 0
    for i, step in traj.captured_steps:
        called = any(_delegating(a.tool, tools) for a in traj.attempts_of_step(i)) or any(
            _delegating(c.name, tools) for c in step.tool_calls
        )
        if not called:
            n += _text_delegations(step.text or "")
    return n


def delegation_amplification_factor(
    traj: Trajectory, tools: Collection[str] = DELEGATION_TOOLS, *, from_text: bool = True
) -> float:
    """DAF: sub-tasks generated / original tasks (one per episode). A sub-task is a distinct call (tool and
    arguments: a retry is the same sub-task) of a delegation tool (``tools``, shell-style patterns), and, with
    ``from_text``, each delegation a step describes in its text without making a delegation call
    (:func:`text_delegations`)."""
    subtasks = {(a.tool, a.args_hash) for a in traj.attempts if _delegating(a.tool, tools)}
    if not traj.attempts:
        subtasks |= {
            (c.name, json.dumps(c.arguments, sort_keys=True, default=str))
            for s in traj.steps
            for c in s.tool_calls
            if _delegating(c.name, tools)
        }
    return float(len(subtasks) + (text_delegations(traj, tools) if from_text else 0))


@dataclass(frozen=True)
class Hallucinations:
    """The argument values of a trajectory's tool calls: found in what the agent had read, not found though
    everything it had read is known (hallucinated), or not decidable (an earlier tool output is not recorded)."""

    grounded: int
    hallucinated: list[tuple[str, str, str]]
    undecided: int

    @property
    def rate(self) -> float | None:
        """hallucinated / (grounded + hallucinated); None when no value could be decided."""
        decided = self.grounded + len(self.hallucinated)
        return len(self.hallucinated) / decided if decided else None


def _values(args: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(args, Mapping):
        for k, v in args.items():
            yield from _values(v, f"{path}.{k}" if path else str(k))
    elif isinstance(args, list | tuple):
        for i, v in enumerate(args):
            yield from _values(v, f"{path}[{i}]")
    else:
        yield path, args


def hallucinated_arguments(traj: Trajectory) -> Hallucinations:
    """Judge every argument value of every tool attempt against what the agent had read before it: the task, the
    tool results each step read, the text of the *earlier* steps, and the earlier attempts (arguments and
    recorded results). A step's own text and its requested calls do not ground that step's calls: they are
    what is being judged. See :class:`Hallucinations`."""
    known = Known()
    known.add(traj.task or "")
    events: list[tuple[float, int, Any]] = [(s.end_time, 0, s) for s in traj.steps]
    events += [(a.start_time, 1, a) for a in traj.attempts]
    events.sort(key=lambda e: (e[0], e[1]))
    seen_results = outputs_owed = 0
    done: list[AttemptRecord] = []
    grounded = undecided = 0
    bad: list[tuple[str, str, str]] = []
    said = ""  # the previous step's text: known from the next step on
    for _, kind, item in events:
        if kind == 0:
            step: StepRecord = item
            known.add(said)
            said = step.text or ""
            for r in step.tool_results:
                known.add(r)
                seen_results += 1 if CUT_MARK not in r else 0
            continue
        a: AttemptRecord = item
        for prior in [p for p in done if p.end_time <= a.start_time]:
            done.remove(prior)
            known.add(json.dumps(prior.args, default=str) if prior.args is not None else "")
            if prior.result is not None and CUT_MARK not in prior.result:
                known.add(prior.result)
            elif prior.outcome == "ok":
                outputs_owed += 1
        complete = outputs_owed <= seen_results
        for path, value in _values(a.args):
            if a.idempotency_key is not None and str(value) == a.idempotency_key:
                continue
            found = known.has(value)
            if found is None:
                continue
            if found:
                grounded += 1
            elif complete:
                bad.append((a.tool, path, str(value)))
            else:
                undecided += 1
        done.append(a)
    return Hallucinations(grounded, bad, undecided)


def tool_argument_hallucination_rate(traj: Trajectory) -> float | None:
    """Hallucinated argument values / decided argument values (see :func:`hallucinated_arguments`)."""
    return hallucinated_arguments(traj).rate


@dataclass(frozen=True)
class TrajectoryMetrics:
    """The metrics of one trajectory (None: not defined for it, see each function) and what they rest on."""

    steps: int
    captured_steps: int
    attempts: int
    cdi: float | None
    svr: float | None
    ric: float | None
    daf: float
    hallucination: float | None
    hallucinated: list[tuple[str, str, str]]
    #: the tools counted as delegation (DAF), so that a business tool caught by a pattern can be seen
    delegated: list[str] = field(default_factory=list)
    #: the sub-tasks of DAF that came from the steps' text, not from a delegation call
    delegated_in_text: int = 0
    #: how many steps claimed a verification no tool call backs (two or more: a deception loop)
    unbacked_steps: int = 0

    @property
    def cdi_band(self) -> str | None:
        """The CDI band (:func:`cdi_band`)."""
        return cdi_band(self.cdi)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (rates rounded to 4 places)."""
        out = asdict(self)
        for k in ("cdi", "svr", "ric", "daf", "hallucination"):
            if out[k] is not None:
                out[k] = round(out[k], 4)
        out["hallucinated"] = [list(h) for h in self.hallucinated]
        out["cdi_band"] = self.cdi_band
        return out


def trajectory_metrics(traj: Trajectory, delegation_tools: Collection[str] = DELEGATION_TOOLS) -> TrajectoryMetrics:
    """Every metric of ``traj`` at once."""
    hall = hallucinated_arguments(traj)
    return TrajectoryMetrics(
        steps=len(traj.steps),
        captured_steps=len(traj.captured_steps),
        attempts=len(traj.attempts),
        cdi=context_drift_index(traj),
        svr=silent_verification_rate(traj),
        ric=recursive_instability_coefficient(traj),
        daf=delegation_amplification_factor(traj, delegation_tools),
        hallucination=hall.rate,
        hallucinated=hall.hallucinated,
        delegated_in_text=text_delegations(traj, delegation_tools),
        unbacked_steps=len(unbacked_claim_steps(traj)),
        delegated=sorted(
            {a.tool for a in traj.attempts if _delegating(a.tool, delegation_tools)}
            | {c.name for s in traj.steps for c in s.tool_calls if _delegating(c.name, delegation_tools)}
        ),
    )
