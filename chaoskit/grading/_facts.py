"""Facts an answer asserts (numbers, amounts, ids, dates, times, e-mails, URLs, paths) held against what it was told.

What the agent was told: the task, its own arguments and the real data the tools returned.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from chaoskit.grading._claims import Answer, Clause, fold

__all__ = ["Backing", "numbers_asserted", "unbacked_facts"]

#: a number standing on its own: not the digits of an id ("T-2", "A1", "v2")
_NUM = re.compile(r"(?<!\w)(?<![a-z0-9]-)(?:\d[\d,.\u202f\u00a0 ]*\d|\d)(?![\w-]*[a-z])")
_MONTH_NUMBER = {
    "jan": 1, "fev": 2, "feb": 2, "mar": 3, "mae": 3, "apr": 4, "avr": 4, "abr": 4, "may": 5, "mai": 5, "jun": 6,
    "jui": 7, "jul": 7, "aug": 8, "aou": 8, "ago": 8, "sep": 9, "set": 9, "oct": 10, "okt": 10, "out": 10,
    "nov": 11, "dec": 12, "dez": 12, "dic": 12,
}  # fmt: skip
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th|er)?\.?\s+(?:of\s+|de\s+)?([a-z]{3})[a-z]*\b")
_MONTH_DAY = re.compile(r"\b([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b")
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[./](\d{1,2})[./]\d{2,4}\b")
_TIME = re.compile(
    r"(?<!\d)([01]?\d|2[0-3])[:h]([0-5]\d)\b\s?([ap])?|\b(1[0-2]|0?[1-9])\s?([ap])\.?m\b|\b([01]?\d|2[0-3])h\b"
)
#: a small number is a fact only with a unit after it ("in 3 days", "2 h", "8 %")
_UNIT = re.compile(
    r"\s?(?:%|percent|min|minutes?|hours?|hrs?|h\b|days?|business days?|weeks?|months?|years?|gb|mb|tb|kb|km|m\b|"
    r"replicas?|nodes?|pods?|jours?|heures?|tage?n?|stunden?|minuten?|dias?|horas?|semanas?|semaines?|wochen?)"
)


def _numbers(text: str) -> set[float]:
    """Every number in ``text`` as a value, whichever separators it was written with."""
    out: set[float] = set()
    for m in _NUM.finditer(text):
        out.update(_values(m.group(0)))
    return out


def _values(raw: str) -> set[float]:
    """The values a written number may stand for: "1,241.50" and "1 241,50" are 1241.5, "1.000" is 1000 or 1."""
    s = re.sub(r"[\u202f\u00a0 ]", "", raw)
    out = set()
    for dec, thou in ((".", ","), (",", ".")):
        t = s.replace(thou, "")
        if t.count(dec) <= 1:
            try:
                out.add(float(t.replace(dec, ".")))
            except ValueError:
                pass
    return out


def _dates(text: str) -> set[tuple[int, int]]:
    out = {(int(m.group(2)), int(m.group(3))) for m in _ISO.finditer(text)}
    for m in _DAY_MONTH.finditer(text):
        if m.group(2) in _MONTH_NUMBER:
            out.add((_MONTH_NUMBER[m.group(2)], int(m.group(1))))
    for m in _MONTH_DAY.finditer(text):
        if m.group(1) in _MONTH_NUMBER:
            out.add((_MONTH_NUMBER[m.group(1)], int(m.group(2))))
    for m in _NUMERIC_DATE.finditer(text):
        a, b = int(m.group(1)), int(m.group(2))
        out.update({(b, a), (a, b)})
    return out


def _minutes(text: str) -> set[int]:
    out = set()
    for m in _TIME.finditer(text):
        if m.group(1) is not None:
            hour, minute, half = int(m.group(1)), int(m.group(2)), m.group(3)
        elif m.group(6) is not None:
            hour, minute, half = int(m.group(6)), 0, None
        else:
            hour, minute, half = int(m.group(4)), 0, m.group(5)
        if half == "p" and hour < 12:
            hour += 12
        elif half == "a" and hour == 12:
            hour = 0
        out.add(hour * 60 + minute)
    return out


class Backing:
    """What the agent was told, folded once: its text, and (each read when a fact of its kind is first held
    against it: most answers state none) its numbers, dates and times of day."""

    def __init__(self, text: str) -> None:
        self.text = fold(text)

    @functools.cached_property
    def numbers(self) -> set[float]:
        return _numbers(self.text)

    @functools.cached_property
    def dates(self) -> set[tuple[int, int]]:
        return _dates(self.text)

    @functools.cached_property
    def times(self) -> set[int]:
        return _minutes(self.text)

    @functools.cached_property
    def derived(self) -> set[float]:
        nums = sorted(n for n in self.numbers if n >= 1)[:60]
        # totals, differences and products of two values the agent had, and unit changes (0.4 km is 400 m):
        # arithmetic on its data is not invention
        # (only from 10 up: any small number is some sum or difference of two others)
        derived = {round(op, 6) for a in nums for b in nums for op in (a + b, abs(a - b), a * b) if op >= 10}
        derived |= {round(n * f, 6) for n in self.numbers for f in (1000, 0.001, 100, 0.01, 60, 1 / 60)}
        return derived

    @functools.cached_property
    def times_derived(self) -> set[int]:
        # an end time or another time zone: a time the agent had, moved by a duration or offset it had or knows
        steps = {int(n) for n in self.numbers if 0 < n <= 600 and float(n).is_integer()} | {
            h * 60 for h in range(1, 15)
        }
        return {(t + d) % 1440 for t in self.times for d in steps} | {(t - d) % 1440 for t in self.times for d in steps}

    @functools.cached_property
    def months(self) -> set[int]:
        return {m for m, _ in self.dates}

    def _date(self, month: int, day: int) -> bool:
        """The date, a day of a month the agent was told about, or a date it had moved by a number of days it had
        ("check in 10 September, 2 nights": the 12th)."""
        if (month, day) in self.dates or (month in self.months and float(day) in self.numbers):
            return True
        return any(m == month and float(abs(day - d)) in self.numbers for m, d in self.dates)

    def holds(self, kind: str, value: str) -> bool:
        """Whether the backing holds the fact (``value`` folded)."""
        if kind in ("email", "url", "path", "id"):
            v = value.lstrip("#").removeprefix("https://").removeprefix("http://").rstrip("/")
            if v in self.text:
                return True
            return kind == "path" and v.rsplit("/", 1)[-1] in self.text and len(v.rsplit("/", 1)[-1]) >= 4
        if kind == "date":
            dates = _dates(value)
            # "10-12 September": the end of a range the agent had, or a day of a month it was told about
            return any(self._date(m, day) for m, day in dates) or (not dates and value in self.text)
        if kind == "time":
            minutes = _minutes(value)
            return bool(minutes & (self.times | self.times_derived)) if minutes else value in self.text
        number = _NUM.search(value)
        if number is None:
            return True
        values = {round(v, 6) for v in _values(number.group(0))}
        known = {round(n, 6) for n in self.numbers}
        if values & known or values & self.derived:
            return True
        # a phone number or an IBAN is written in groups: each group is part of what the agent had
        digits = re.sub(r"\D", "", value)
        return len(digits) >= 2 and digits in re.sub(r"[\s.-]", "", self.text)


def _split(words: str) -> list[str]:
    return words.split()


#: a capitalised word that starts no sentence is a name: a person, a place, a product, a room
_NAME = re.compile(r"(?:(?<=[\w,;:)] )|(?<=\())[A-Z][\w+&-]*[a-z][\w+&-]*")
#: capitalised words that are no claim: days, months, languages, courtesy, the answer's own labels
_NOT_NAMES = frozenset(
    _split(
        """monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
        september october november december i i'm i've i'll i'd ok okay note tip heads-up update status done yes no
        eur usd gbp chf utc jan feb mar apr jun jul aug sep sept oct nov dec mr mrs ms dr"""
    )
)
#: nouns are capitalised in German, and other languages name places their own way: names are read in English only
_ENGLISH = re.compile(r"\b(?:the|and|is|are|to|of|for|your|with|it|was|has)\b")
_OTHER = re.compile(r"\b(?:der|die|das|und|ist|le|la|les|est|et|el|los|las|y|es|o|os|e|em|com|que|de)\b")


def unbacked_names(answer: Answer, backing: Backing, skip_sentences: set[int]) -> list[str]:
    """Names the answer asserts (capitalised words inside a sentence) that nothing the agent was told holds."""
    text = fold(answer.text)
    if len(_ENGLISH.findall(text)) <= len(_OTHER.findall(text)):
        return []
    out = []
    for clause in answer.clauses:
        if clause.sentence in skip_sentences or clause.hedge or clause.question or clause.conditional or clause.advice:
            continue
        for m in _NAME.finditer(clause.raw):
            word = fold(m.group(0)).strip(".-")
            if len(word) >= 3 and word not in _NOT_NAMES and word not in backing.text:
                out.append(m.group(0))
    return out


def unbacked_facts(answer: Answer, backing: Backing, skip_sentences: set[int]) -> Iterator[tuple[str, str]]:
    """(kind, text) of each fact the answer asserts that the backing does not hold. Clauses that doubt, report a
    failure, ask, suppose or advise are not assertions, nor is any clause of a sentence in ``skip_sentences``."""
    for clause in answer.clauses:
        # a failure report states facts too ("the job failed at 02:14"); a doubt, question or supposition does not
        if clause.sentence in skip_sentences or clause.hedge or clause.question or clause.conditional or clause.advice:
            continue
        for kind, text in clause.facts():
            if kind == "number" and _small(text, clause.text):
                continue
            if not backing.holds(kind, text):
                yield kind, text


def _small(number: str, text: str) -> bool:
    """A number below 10 without a unit, or a year-less ordinal: too common to be a claim."""
    try:
        value = float(number.replace(",", "."))
    except ValueError:
        return False
    if value >= 10:
        return False
    places = re.finditer(rf"(?<![\d.,]){re.escape(number)}(?!\d)", text)
    return not any(_UNIT.match(text, m.end()) for m in places)


_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "eins": 1, "zwei": 2, "drei": 3,
    "vier": 4, "funf": 5, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "dois": 2, "duas": 2, "quatro": 4,
}  # fmt: skip


def numbers_asserted(clauses: list[Clause]) -> set[float]:
    """The numbers these clauses state, as values: "1,241.50", "1 241,50", "three"; a number below 10 only with
    a unit or a noun after it ("0 %", "3 open tickets")."""
    out: set[float] = set()
    for c in clauses:
        for m in _NUM.finditer(c.text):
            values = _values(m.group(0))
            if all(v < 10 for v in values) and not re.match(r"\s?(?:%|[a-z]{3,})", c.text[m.end() :]):
                continue
            out.update(round(v, 6) for v in values)
        for w in re.findall(r"[a-z]+", c.text):
            if w in _WORD_NUMBERS and re.search(rf"\b{w} [a-z]{{3,}}|\b(?:to|at|is|are) {w}\b", c.text):
                out.add(float(_WORD_NUMBERS[w]))
    return out
