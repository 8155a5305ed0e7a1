"""Matching a tool argument value against what the agent had read, for the argument hallucination metric.

Whole values match on word boundaries; numbers, money, dates, times and phone numbers in a canonical form.
"""

from __future__ import annotations

import re
from typing import Any

from chaoskit.metrics._model_steps import CUT_MARK

__all__ = ["PROSE_WORDS", "SMALL_NUMBER", "Known"]

_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")
#: numbers up to this size (in absolute value) are not judged: counts, limits and defaults (days=3, limit=10)
SMALL_NUMBER = 10
#: a string of more words than this is prose (a reply, a note), not judged
PROSE_WORDS = 6
_WORD = re.compile(r"\w+")
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}


def _numbers(text: str) -> set[float]:
    # thousands separators only in their place ("4,832"), so "items 1,5 and 7" stays 1, 5 and 7
    found = {float(m.replace(",", "")) for m in _NUMBER.findall(text)}
    found |= {float(_NUMBER_WORDS[w]) for w in _WORD.findall(text.lower()) if w in _NUMBER_WORDS}
    return found


_MONTHS = {
    m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)
}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATES = (
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"), ("mon", "d", "y")),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b"), ("d", "mon", "y")),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), ("a", "b", "y")),  # 3/5/2025: month/day or day/month
)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*(am|pm|a\.m\.|p\.m\.)?(?!\w)")
_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_MONEY = re.compile(r"[$€£¥]?\s*(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(?:usd|eur|gbp|dollars?|euros?)?")


def _dates(text: str) -> set[tuple[int, int, int]]:
    """The calendar dates written in ``text`` as (year, month, day); a d/m/y date gives both readings."""
    out: set[tuple[int, int, int]] = set()
    for pattern, fields in _DATES:
        for m in pattern.finditer(text):
            got = dict(zip(fields, m.groups(), strict=True))
            y = int(got["y"])
            if "mon" in got:
                readings = [(_MONTHS[got["mon"][:3]], int(got["d"]))]
            elif "m" in got:
                readings = [(int(got["m"]), int(got["d"]))]
            else:
                readings = [(int(got["a"]), int(got["b"])), (int(got["b"]), int(got["a"]))]
            out |= {(y, mo, d) for mo, d in readings if 1 <= mo <= 12 and 1 <= d <= 31}
    return out


def _times(text: str) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for h, mi, half in _TIME.findall(text):
        hour = int(h) % 12 + (12 if half.startswith("p") else 0) if half else int(h)
        out.add((hour, int(mi)))
    return out


def _phones(text: str) -> set[str]:
    return {d for m in _PHONE.findall(text) if len(d := re.sub(r"\D", "", m)) >= 7}


class Known:
    """What the agent had read before a call: its words (lower case, indexed by position, so that a value's words
    are looked up in time that does not grow with all that was read), and the numbers, dates, times and phone
    numbers in it, so that ``$50.00`` matches "$50" and ``2025-03-05`` matches "March 5, 2025"."""

    def __init__(self) -> None:
        self._texts: set[str] = set()  # a text read twice (the same result at every step) is indexed once
        self._chunks: list[list[str]] = []
        self._where: dict[str, list[tuple[int, int]]] = {}  # word -> (chunk, position) of each occurrence
        self.numbers: set[float] = set()
        self.dates: set[tuple[int, int, int]] = set()
        self.times: set[tuple[int, int]] = set()
        self.phones: set[str] = set()

    def add(self, text: str) -> None:
        low = " ".join(text.lower().split())
        if not low or low in self._texts:
            return
        self._texts.add(low)
        words = _WORD.findall(low)
        chunk = len(self._chunks)
        self._chunks.append(words)
        for i, w in enumerate(words):
            self._where.setdefault(w, []).append((chunk, i))
        self.numbers |= _numbers(low)
        self.dates |= _dates(low)
        self.times |= _times(low)
        self.phones |= _phones(low)

    def has(self, value: Any) -> bool | None:
        """True when ``value`` is found, False when not, None when it is not a value to judge: nothing, a
        boolean, a redacted or cut value, a small count (|n| <= 10) or a single lower-case word (defaults, limits
        and enum values from the tool's schema, which chaoskit does not see)."""
        if value is None or isinstance(value, bool) or value == "[REDACTED]":
            return None
        if isinstance(value, int | float):
            return None if abs(value) <= SMALL_NUMBER else float(value) in self.numbers
        raw = " ".join(str(value).split())
        text = raw.lower()
        if len(text) < 2 or CUT_MARK in text or re.fullmatch(r"[a-z]+", raw):
            return None
        money = _MONEY.fullmatch(text)
        if money is not None:
            number = float(money.group(1).replace(",", ""))
            return None if abs(number) <= SMALL_NUMBER and money.group(0) == money.group(1) else number in self.numbers
        if any(p.fullmatch(text) for p, _ in _DATES):
            return bool(_dates(text) & self.dates)
        if _TIME.fullmatch(text) and (times := _times(text)):
            # a time inside a window the agent read ("between 09:00 and 12:00": the slot 10:30) is derived from it
            return bool(times & self.times) or (
                len(self.times) >= 2 and all(min(self.times) <= t <= max(self.times) for t in times)
            )
        if _PHONE.fullmatch(text) and (phones := _phones(text)):
            return bool(phones & self.phones)
        # the value's words, in order and adjacent, whole: "ORD-1" is not in "order ORD-12345", nor "42 New Street,
        # York" in "42 Elm Street, New York" (punctuation between the words is not compared)
        words = _WORD.findall(text)
        if not words or len(words) > PROSE_WORDS:  # prose (a reply, a note): a composition, not a value to look up
            return None
        if self._has_words(words):
            return True
        # a phrase without digits whose words were all read, in another order: composed from what was read (a
        # search query "password reset" from "reset my password"); with digits (an address, an id) it must match
        return not any(c.isdigit() for c in text) and all(w in self._where for w in words)

    def _has_words(self, words: list[str]) -> bool:
        places = [self._where.get(w) for w in words]
        if not all(places):
            return False
        rarest = min(range(len(words)), key=lambda k: len(places[k] or ()))
        for chunk, i in places[rarest] or ():
            start = i - rarest
            if start >= 0 and self._chunks[chunk][start : start + len(words)] == words:
                return True
        return False
