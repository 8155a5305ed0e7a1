"""Values an answer states as fact that only a data fault gave the agent.

A shifted or stale number, a stale field, a cut list's count or total, an emptied result's "there are none".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from chaoskit.grading._claims import Answer, Clause, fold
from chaoskit.grading._facts import _numbers, numbers_asserted
from chaoskit.grading._model import AttemptRecord, EpisodeRecord, param_key
from chaoskit.grading._result import leaves
from chaoskit.semconv import FAULT_STALE

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


def _stale_fields(a: AttemptRecord) -> list[str]:
    raw = a.fault_params.get("set")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    if not isinstance(raw, dict):
        return []
    out = []
    for v in raw.values():
        if isinstance(v, str) and len(v) >= 3:
            out.append(fold(v).replace("_", " "))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(str(v))
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
    text = " ".join(c.text for c in asserted).replace("_", " ")
    for a in ep.attempts:
        if a.outcome != "ok" or a.fault_type not in ("garbage", "stale_state", "partial", "empty"):
            continue
        if a.fault_type == "garbage" and a.injected_value is not None and not a.fault_params.get(_STALE):
            for n in sorted((_attempt_numbers(a.injected_value) - backed) & said_numbers):
                yield a, f"{n:g}"
        elif a.fault_type == "stale_state":
            for field in _stale_fields(a):
                if re.search(rf"(?<![\w.]){re.escape(field)}(?![\w])", text) and field not in fold(known):
                    yield a, field
        elif a.fault_type == "partial" and a.injected_value is not None:
            for n in sorted((_cut_figures(a.injected_value) - backed) & said_numbers):
                yield a, f"{n:g}"
        elif a.fault_type == "empty":
            yield from _absence(a, ep, about.get(a.span_id, []), generic, hedged | _retold(answer))


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
