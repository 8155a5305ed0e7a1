"""Values an answer states as fact that only a data fault gave the agent.

A shifted or stale number, a stale field, a cut list's count or total, an emptied result's "there are none".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from chaoskit.grading._claims import Answer, Clause, fold, negated
from chaoskit.grading._facts import _numbers, numbers_asserted
from chaoskit.grading._result import leaves
from chaoskit.grading._truth import is_write, received_text
from chaoskit.semconv import FAULT_STALE
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, param_key

__all__ = ["faulted_values"]

_STALE = param_key(FAULT_STALE)

#: "there are no alerts", "aucun enlèvement", "keine Termine", "no hay", "não há": absence stated as fact
_ABSENCE = re.compile(
    r"\b(?:there (?:is|are) no|there's no|no (?:\w+ ){0,2}(?:alerts?|results?|articles?|records?|items?|orders?|"
    r"entries|pickups?|tickets?|events?|meetings?|files?|appointments?|messages?|transactions?|matches)|"
    r"(?:couldn't|could not|can't|cannot) find (?:any|a|the)|(?:found|returned) nothing|"
    r"(?:don't|do not|doesn't|does not) have any|(?:is|are) empty|est vide|ist leer|esta vacia?|esta vazia?|"
    r"(?:aren't|isn't|are not|is not) (?:in|there|available|ready)|not in yet|all clear|nothing (?:scheduled|planned|"
    r"open|pending|active|found|there)|none (?:found|active|open|scheduled)|aucune?|il n'y a (?:pas|aucun)|"
    r"keine?n?|es gibt kein|no hay|ningun[oa]?|nao ha|nenhum[a]?|no existe|nao existe|n'existe pas)\b"
)
#: the absence is put down to the tool, not stated about the world ("the search returned no articles")
_ATTRIBUTED = re.compile(
    r"\b(?:returned|came back|search|lookup|looked|find|found|showed|shows|listed|system|tool|query|according|"
    r"response|couldn't|could not|can't|renvoy|trouv|recherche|systeme|reponse|gefunden|suche|ergab|"
    r"antwort|encontr|busqueda|devolv|sistema|retorn|pesquisa|mostr|consulta|respuesta|resposta|on file|on record|"
    r"in (?:the|our) (?:system|records))"
)


def _attempt_numbers(value: Any) -> set[float]:
    out: set[float] = set()
    for leaf in leaves(value):
        if isinstance(leaf, int | float) and not isinstance(leaf, bool):
            out.add(round(float(leaf), 6))
        elif isinstance(leaf, str):
            out.update(round(v, 6) for v in numbers_in(leaf))
    return out


def numbers_in(text: str) -> set[float]:
    return {round(v, 6) for v in _numbers(fold(text))}


def _lists(value: Any, depth: int = 0) -> Iterator[list[Any]]:
    if depth > 6:
        return
    if isinstance(value, list):
        yield value
        for v in value:
            yield from _lists(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _lists(v, depth + 1)


def _cut_figures(value: Any) -> set[float]:
    """A cut list's count and the totals of its numeric fields: what an answer derives from the part it got."""
    out: set[float] = set()
    for items in _lists(value):
        if not items:
            continue
        out.add(float(len(items)))
        records = [x for x in items if isinstance(x, dict)]
        for key in {k for r in records for k in r}:
            vals = [r[key] for r in records if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)]
            if len(vals) >= 2:
                out.add(round(float(sum(vals)), 6))
    return out


def _stale_fields(a: AttemptRecord) -> list[tuple[str, re.Pattern[str]]]:
    """The words an answer states a stale field in, each with what in a tool's real output would back it."""
    raw = a.fault_params.get("set")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    if not isinstance(raw, dict):
        return []
    out = []
    for k, v in raw.items():
        if v is True and isinstance(k, str) and len(k) >= 3:
            # a flag set true is stated in its key's own words: {"in_stock": true} -> "in stock"; only the same
            # flag true in a real output backs it ("in_stock": false says the opposite)
            key = fold(k)
            out.append((key.replace("_", " "), re.compile(rf"['\"]{re.escape(key)}['\"]\s*:\s*true")))
        elif isinstance(v, str) and len(v) >= 3:
            field = fold(v).replace("_", " ")
            out.append((field, re.compile(rf"(?<![\w.]){re.escape(field)}(?![\w])")))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append((str(v), re.compile(rf"(?<![\w.]){re.escape(str(v))}(?![\w])")))
    return out


def faulted_values(
    ep: EpisodeRecord,
    answer: Answer,
    known: str,
    doubted: set[int],
    about: dict[str, list[Clause]],
    generic: list[Clause],
    hedged: set[int],
) -> Iterator[tuple[AttemptRecord, str]]:
    """(attempt, value) for each value the answer asserts that only the attempt's data fault gave. ``known``:
    what backs a value (every clean result and argument); ``doubted``: sentences that doubt or warn;
    ``about``: per attempt span id, the clauses that speak of its call; ``hedged``: sentences that doubt or warn
    (an absence is itself worded as a failure, so ``doubted`` would excuse every one)."""
    asserted = [c for c in answer.clauses if c.sentence not in doubted and not (c.question or c.conditional)]
    said_numbers = numbers_asserted(asserted)
    # what backs a number matters only for the numbers the answer states (most answers of a run state none)
    backed = numbers_in(known) if said_numbers else set()
    # what the tools said, folded once, and only for an episode with stale data (the only branch that reads it)
    stale = any(a.fault_type == "stale_state" for a in ep.attempts)
    tools_said = fold(" ".join(received_text(b) or "" for b in ep.attempts)) if stale else ""
    for a in ep.attempts:
        if a.outcome != "ok" or a.fault_type not in ("garbage", "stale_state", "partial", "empty"):
            continue
        if a.fault_type == "garbage" and a.injected_value is not None and not a.fault_params.get(_STALE):
            if called_out(answer, doubted, a.injected_value, backed):
                continue
            for n in sorted((_attempt_numbers(a.injected_value) - backed) & said_numbers):
                yield a, f"{n:g}"
        elif a.fault_type == "stale_state":
            for field, backing in _stale_fields(a):
                # backed only by what a tool said: the user asking "is it in stock?" tells the agent nothing
                if _stated(field, asserted) and not (
                    backing.search(tools_said) or backing.search(tools_said.replace("_", " "))
                ):
                    yield a, field
        elif a.fault_type == "garbage" and a.injected_value is not None:
            yield from ((a, v) for v in _superseded(a, ep) if _stated(v, asserted, _AS_OLD))
        elif a.fault_type == "partial" and a.injected_value is not None:
            for n in sorted((_cut_figures(a.injected_value) - backed) & said_numbers):
                yield a, f"{n:g}"
        elif a.fault_type == "empty":
            yield from _absence(a, ep, about.get(a.span_id, []), generic, hedged | _retold(answer))


def called_out(answer: Answer, doubted: set[int], value: Any, backed: set[float]) -> bool:
    """The answer doubts, by its number, a value only this garbage record gave ("it lists $1.29, which can't be
    right"): the user was told the record is wrong, and its other values are stated under that warning (which
    of a literal record's values the fault changed, the trace cannot say)."""
    said = numbers_in(" ".join(c.text for c in answer.clauses if c.sentence in doubted))
    return bool((said & _attempt_numbers(value)) - backed)


def _superseded(stale: AttemptRecord, ep: EpisodeRecord) -> list[str]:
    """The old values a stale replay of the same call brought back after a write changed them: the read-back of
    an appointment moved to 15:00 that still says 9:00. Each as an answer writes it ("9:00" for a timestamp)."""
    old = stale.injected_value
    if not isinstance(old, dict):
        return []
    mine = {str(v) for v in leaves(stale.args)}
    out: list[str] = []
    for w in ep.attempts:
        if not (w.clean_success and is_write(w) and w.end_time <= stale.start_time and isinstance(w.args, dict)):
            continue
        if not mine & {str(v) for v in leaves(w.args)}:
            continue  # a write to another record
        for key, new in w.args.items():
            was = old.get(key)
            if was is None or isinstance(was, bool) or str(was) == str(new) or isinstance(was, dict | list):
                continue
            was_text = fold(str(was))
            clock = _CLOCK.search(was_text)
            out.extend({f"{int(clock[1])}:{clock[2]}", f"{clock[1]}:{clock[2]}"} if clock else {was_text})
    return [v for v in out if len(v) >= 3]


_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}[t ](\d{2}):(\d{2})")


#: a value told as what a change replaced ("9:00 → 15:00", "moved from 9:00", "was 9:00"), not as the state now
_AS_OLD = (
    re.compile(
        r"\b(?:from|was|previously|instead of|de|von|desde|en lugar de|au lieu de|statt|em vez de)\s+(?:\w+\s+)?$"
    ),
    re.compile(r"^\s*(?:→|->|=>|-->|to\b|a\b|à|auf\b|para\b|zu\b)"),
)


def _stated(field: str, clauses: list[Clause], old: tuple[re.Pattern[str], re.Pattern[str]] | None = None) -> bool:
    """Some clause states ``field`` and does not negate it ("no double room is available" states no
    availability); with ``old`` (what may stand before and after it), nor tells it as the value a change
    replaced (``_AS_OLD``)."""
    pattern = re.compile(rf"(?<![\w.:]){re.escape(field)}(?![\w]|:\d)")
    return any(
        not negated(t, m) and not (old and (old[0].search(t[: m.start()]) or old[1].search(t[m.end() :])))
        for c in clauses
        for t in (c.text.replace("_", " "),)
        for m in pattern.finditer(t)
    )


#: the answer tells of the retry that corrected an empty first answer ("which turned out to be wrong")
_RETOLD = re.compile(
    r"\b(?:turned out|wrong|incorrect|second (?:one|query|try|attempt|call)|retr(?:y|ied)|again|re-?ran)\b"
)


def _retold(answer: Answer) -> set[int]:
    return {n for n, t in enumerate(answer.sentences, 1) if _RETOLD.search(t)}


def _absence(
    a: AttemptRecord, ep: EpisodeRecord, about: list[Clause], generic: list[Clause], doubted: set[int]
) -> Iterator[tuple[AttemptRecord, str]]:
    """An emptied result repeated as "there are none": as fact when nothing recovered it; at all when a later
    call of the same tool and arguments answered with the real data."""
    recovered = any(
        b.tool == a.tool and b.args_hash == a.args_hash and b.clean_success and b.start_time >= a.end_time
        for b in ep.attempts
    )
    for c in [*about, *generic]:
        if c.sentence in doubted or c.question or c.conditional or not _ABSENCE.search(c.text):
            continue
        if recovered or not (_ATTRIBUTED.search(c.text) or c.hedge):
            yield a, c.raw
            return
