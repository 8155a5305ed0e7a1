"""An answer's clauses held against the episode's per-call ground truth: which call each clause speaks of."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chaoskit.grading._claims import Answer, Clause, fold, tool_concepts
from chaoskit.grading._truth import CallTruth, EpisodeTruth

__all__ = ["Reading", "read_against"]


def _split(words: str) -> list[str]:
    return words.split()


#: words of a tool's name that say how it works, not what it is about
_GENERIC = frozenset(
    _split(
        """get list read search find lookup look fetch query check view show describe retrieve count browse open see
        inspect create update delete remove send issue process make do run set add put post patch new tool api call
        by for of the a an to from in on and or with my all info details detail data status record records item
        items id"""
    )
)


def _nouns(tool: str) -> list[str]:
    words = re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", tool)
    out = []
    for w in words:
        w = w.lower()
        if len(w) >= 3 and w not in _GENERIC:
            out.append(w[:-1] if w.endswith("s") and len(w) > 4 else w)
    return out


def _mentions(text: str, value: str) -> bool:
    v = fold(value)
    if v[:1].isalnum() and v[-1:].isalnum():
        return re.search(rf"(?<![\w.]){re.escape(v)}(?![\w]|\.\d)", text) is not None
    return v in text


@dataclass(frozen=True, slots=True)
class Reading:
    """The answer read against the truth: per clause, the calls it speaks of."""

    answer: Answer
    truth: EpisodeTruth
    targets: tuple[tuple[CallTruth, ...], ...]

    def about(self, call: CallTruth) -> list[Clause]:
        """The clauses that speak of ``call``."""
        return [c for c, ts in zip(self.answer.clauses, self.targets, strict=True) if call in ts]

    def generic(self, clause_index: int) -> bool:
        """The clause speaks of no call in particular ("Done!", "Something went wrong")."""
        return not self.targets[clause_index]

    def reported(self, call: CallTruth) -> bool:
        """Some clause reports the call's failure or doubts it, or reports a failure without naming any call."""
        for c, ts in zip(self.answer.clauses, self.targets, strict=True):
            if c.reports and (call in ts or not ts):
                return True
        return False

    def claimed(self, call: CallTruth) -> list[Clause]:
        """The clauses that claim, as fact, that ``call`` worked."""
        return [c for c in self.about(call) if c.claims]

    def sweeping_claims(self) -> list[Clause]:
        """Claims that speak of no call in particular ("Done!") or of all of them ("All 3 items are updated")."""
        return [
            c
            for c, ts in zip(self.answer.clauses, self.targets, strict=True)
            if c.claims and (not ts or _ALL.search(c.text))
        ]

    def reports_anything(self) -> bool:
        return any(c.reports for c in self.answer.clauses)


def _strong(clause: Clause, call: CallTruth) -> bool:
    concepts = tool_concepts(call.tool)
    if concepts & (clause.did | clause.will):
        return True
    return any(re.search(rf"\b{re.escape(n)}", clause.text) for n in _nouns(call.tool))


def _weak(clause: Clause, anchors: list[str]) -> bool:
    return any(_mentions(clause.text, a) for a in anchors)


#: "both orders", "all of them": a clause about every call of a tool, not one
_ALL = re.compile(
    r"\b(?:both|all|each|every|the two|tous|toutes|les deux|beide|alle|todos|todas|ambos|ambas|os dois)\b"
)


def _targets(
    clause: Clause, calls: Iterable[CallTruth], sentence: str, anchors: list[list[str]]
) -> tuple[CallTruth, ...]:
    calls = list(calls)
    strong = [c for c in calls if _strong(clause, c)]
    weak = [c for c, own in zip(calls, anchors, strict=True) if _weak(clause, own)]
    both = [c for c in strong if c in weak]
    if both:
        return tuple(both)
    if strong and weak:
        # "order A-1 was cancelled": the call of A-1 whose tool is about cancelling, if any; else every A-1 call
        return tuple(weak)
    if strong and not _ALL.search(sentence) and clause.claims:
        # "booked for 11:30" after a refused first try: a claim that names no call of a tool is about the call of
        # it that worked, unless it speaks of all of them
        worked = [c for c in strong if not c.failed]
        failed_tools = {c.tool for c in strong if c.failed}
        if worked and failed_tools <= {c.tool for c in worked}:
            return tuple(worked)
    return tuple(strong or weak)


#: the readings made last: the answer checks of one episode read the same answer against the same truth
_RECENT: list[Reading] = []


def read_against(answer: Answer, truth: EpisodeTruth) -> Reading:
    """Which calls each clause of ``answer`` speaks of: a clause names a call by its argument values (ids,
    amounts, names) or by what its tool is about (``issue_refund``: a refund); both together pick one call."""
    for r in _RECENT:
        if r.answer is answer and r.truth is truth:  # both frozen, and held by the reading: the same objects
            return r
    reading = _read_against(answer, truth)
    _RECENT[:] = [reading, *_RECENT[:3]]
    return reading


def _read_against(answer: Answer, truth: EpisodeTruth) -> Reading:
    targets: list[tuple[CallTruth, ...]] = []
    sentences: dict[int, str] = {}
    for c in answer.clauses:
        sentences[c.sentence] = sentences.get(c.sentence, "") + " " + c.text
    anchors = [c.anchors() for c in truth.calls]  # once per call, not once per clause
    for i, clause in enumerate(answer.clauses):
        own = _targets(clause, truth.calls, sentences[clause.sentence], anchors)
        prev = answer.clauses[i - 1] if i else None
        # "the refund for A-1001 failed, so nothing was charged": the clause goes on about the same call;
        # "both orders (B-210, B-211) are cancelled": a claim goes on about the calls just named
        if (
            not own
            and prev is not None
            and prev.sentence == clause.sentence
            and (clause.reports or (clause.claims and not (prev.claims or prev.reports)))
        ):
            own = targets[-1]
        targets.append(own)
    return Reading(answer, truth, tuple(targets))
