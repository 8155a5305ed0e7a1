"""Facts an answer asserts (numbers, amounts, ids, dates, times, e-mails, URLs, paths) held against what it was told.

What the agent was told: the task, its own arguments and the real data the tools returned.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator

from chaoskit.grading._claims import HEDGE, Answer, Clause, fold
from chaoskit.grading._wording import clock_minutes

__all__ = ["Backing", "numbers_asserted", "predicts_only", "unbacked_facts", "unbacked_names", "unbacked_terms"]

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
        out.add(clock_minutes(hour, minute, half))
    return out


_ISO_OFFSET = re.compile(r"(t\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)[+-]\d{2}:?\d{2}\b")
#: a time zone's offset as the data writes it: "T09:00+09:00", "UTC+2", "GMT-5"
_OFFSET = re.compile(r"\d{2}:\d{2}(?::\d{2})?([+-])(\d{2}):?(\d{2})\b|\b(?:utc|gmt) ?([+-])(\d{1,2})\b")


def _zone_steps(text: str) -> set[int]:
    """The shifts, in minutes, from one time zone to another the agent may make: between the offsets its data
    gives, when it gives any; else any whole number of hours up to 14 (it knows its user's zone, the check
    does not)."""
    offsets = {
        (-1 if m[1] == "-" or m[4] == "-" else 1) * (int(m[2]) * 60 + int(m[3]) if m[2] else int(m[5]) * 60)
        for m in _OFFSET.finditer(text)
    } | {0}
    if len(offsets) == 1:
        return {h * 60 for h in range(1, 15)}
    return {abs(a - b) for a in offsets for b in offsets if a != b}


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
        # a zone offset ("T03:00+02:00") is no time of day
        return _minutes(_ISO_OFFSET.sub(r"\1", self.text))

    @functools.cached_property
    def derived(self) -> set[float]:
        nums = sorted(n for n in self.numbers if n >= 1)[:60]
        # totals, differences and products of two values the agent had, and unit changes (0.4 km is 400 m):
        # arithmetic on its data is not invention
        # (only from 10 up: any small number is some sum or difference of two others)
        derived = {round(op, 6) for a in nums for b in nums for op in (a + b, abs(a - b), a * b) if op >= 10}
        derived |= {round(n * f, 6) for n in self.numbers for f in (1000, 0.001, 100, 0.01, 60, 1 / 60)}
        # a share of two values it had, as a percentage, whole or to one decimal ("1,730 of 2,000 GB": 87 %)
        counts = [n for n in nums if n >= 10 and float(n).is_integer()]
        derived |= {
            r for a in counts for b in counts if a < b for r in (math.floor(100 * a / b + 0.5), round(100 * a / b, 1))
        }
        return derived

    @functools.cached_property
    def times_derived(self) -> set[int]:
        # an end time or another time zone: a time the agent had, moved by a duration or offset it had or knows
        steps = {int(n) for n in self.numbers if 0 < n <= 600 and float(n).is_integer()} | _zone_steps(self.text)
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

    def near(self, value: str) -> bool:
        """A number the answer gives as approximate ("roughly 308 EUR", "~87 %") is one the agent had or worked
        out, rounded to a whole number or one decimal."""
        number = _NUM.search(value)
        if number is None:
            return False
        rounded = {
            math.floor(k * f + 0.5) / f
            for k in self.numbers | self.derived
            if not float(k).is_integer()
            for f in (1, 10)
        }
        return bool(_values(number.group(0)) & rounded)

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
        thanks thank happy hello hi hey sure please here good great also however unfortunately sorry welcome
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
    for i, clause in enumerate(answer.clauses):
        if clause.sentence in skip_sentences or clause.hedge or clause.question or clause.conditional or clause.advice:
            continue
        raw = clause.raw
        # a clause the sentence goes on into after a comma or a parenthesis starts with a name, not a sentence:
        # "with the same therapist, Julia", "the broker (Kuehne+Nagel)"
        if i and answer.clauses[i - 1].sentence == clause.sentence and _AFTER_BREAK.search(_before(answer, clause)):
            raw = ", " + raw
        for m in _NAME.finditer(raw):
            word = fold(m.group(0)).strip(".-")
            if len(word) >= 3 and word not in _NOT_NAMES and word not in backing.text:
                out.append(m.group(0))
    return out


_AFTER_BREAK = re.compile(r"[,(]\s*$")


def _before(answer: Answer, clause: Clause) -> str:
    """The two characters of the answer's text before the clause (empty when the clause is not found as is)."""
    at = answer.text.find(clause.raw)
    return answer.text[max(0, at - 2) : at] if at > 0 else ""


#: a prediction, not a doubt: "could be in your account within 24 hours", "should arrive in 3 days"
_PREDICTS = re.compile(
    r"\b(?:could|may|might|should) (?:be|take|arrive|show|reach|land|appear|come)\b|"
    r"\b(?:pourrait|devrait) (?:etre|arriver|prendre)|\b(?:konnte|sollte|durfte) |"
    r"\b(?:podria|deberia|puede) (?:estar|llegar|tardar)|\b(?:poderia|deveria|pode) (?:estar|chegar|levar)"
)
#: a time frame after a number: "within 24 hours", "in 3-5 business days"
_DURATION = re.compile(
    r"\s?(?:-\s?\d+\s?)?(?:hours?|hrs?|h\b|days?|business days?|working days?|weeks?|months?|"
    r"minutes?|min\b|jours?|heures?|tage?n?|stunden?|dias?|horas?|semanas?|semaines?|wochen?)"
)


def predicts_only(clause: Clause) -> bool:
    """The clause's only hedge is a prediction ("could be there within 24 hours"): its time frame is still a
    claim, unlike a doubt ("may be outdated", "seems off")."""
    if not clause.hedge or not _PREDICTS.search(clause.text):
        return False
    return HEDGE.search(_PREDICTS.sub(" ", clause.text)) is None


def unbacked_facts(answer: Answer, backing: Backing, skip_sentences: set[int]) -> Iterator[tuple[str, str]]:
    """(kind, text) of each fact the answer asserts that the backing does not hold. Clauses that doubt, report a
    failure, ask, suppose or advise are not assertions, nor is any clause of a sentence in ``skip_sentences``."""
    for clause in answer.clauses:
        # a failure report states facts too ("the job failed at 02:14"); a doubt, question or supposition does not
        predicts = predicts_only(clause)
        if (
            clause.sentence in skip_sentences
            or (clause.hedge and not predicts)
            or clause.question
            or clause.conditional
            or clause.advice
        ):
            continue
        for kind, text in clause.facts():
            if kind == "number" and _small(text, clause.text):
                continue
            if predicts and not _DURATION.match(clause.text, clause.text.find(text) + len(text)):
                continue  # "it could be there within 24 hours": only the time frame is asserted
            if not backing.holds(kind, text) and not (
                kind in ("number", "amount") and _approximate(clause.text, text) and backing.near(text)
            ):
                yield kind, text


#: the answer says the value is rounded: "roughly 308 EUR", "~87 %", "environ", "etwa", "cerca de"
_APPROX = re.compile(
    r"(?:\b(?:roughly|about|around|approximately|approx\.?|nearly|almost|some|just (?:over|under)|environ|presque|"
    r"etwa|ungefahr|rund|circa|ca\.|cerca de|aproximadamente|alrededor de|unos|unas|quase|por volta de)|~|\u2248)"
    r"\s*[$\u20ac\u00a3]?\s*$"
)


def _approximate(text: str, fact: str) -> bool:
    at = text.find(fact)
    return at >= 0 and _APPROX.search(text[:at]) is not None


def _small(number: str, text: str) -> bool:
    """A number below 10 without a unit, or a year-less ordinal: too common to be a claim."""
    try:
        value = float(number.replace(",", "."))
    except ValueError:
        return False
    if value >= 10 or re.fullmatch(r"\d[.,]\d+", number):
        return False  # a measured value ("rated 8.6", "2.5") is a claim however small
    places = re.finditer(rf"(?<![\d.,]){re.escape(number)}(?!\d)", text)
    return not any(_UNIT.match(text, m.end()) for m in places)


#: terms an answer states in plain words, with no number to match: a policy, a fee, a perk, what a recipient did.
#: Each is (what the answer says, a stem the agent's data must hold for it to be told); folded, five languages.
_TERMS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(said), re.compile(told))
    for said, told in (
        (
            r"\bfree(?:ly)? (?:of charge )?cancel|\bcancel(?:led|lation)? (?:for|is) free\b|\b(?:fully )?refundable\b|"
            r"annulation gratuite|annulable|kostenlos\w* storn|storno\w* kostenlos|cancelacion gratuita|"
            r"cancelamento gratuito|cancelamento gratis",
            r"cancel|refundab|annul|storn|reembols",
        ),
        (
            r"\bbreakfast(?: is)? included|\bwith breakfast\b|petit-dejeuner (?:est )?inclus|fruhstuck (?:ist )?"
            r"(?:inklusive|inbegriffen)|mit fruhstuck|desayuno incluido|con desayuno|cafe da manha incluido",
            r"breakfast|petit-dej|fruhstuck|desayuno|cafe da manha",
        ),
        (
            r"\bno (?:extra |additional |hidden |change |cancellation )?(?:charges?|fees?|costs?)\b|\bfree of charge\b|"
            r"\bat no (?:extra |additional )?cost\b|\bsans frais\b|ohne (?:zusatzliche |weitere )?(?:kosten|gebuhr)|"
            r"sin (?:coste|costo|cargo)s?(?: adicional)?|sem (?:custo|taxa)s?(?: adiciona)?",
            r"fee|charge|cost|price|frais|gebuhr|kosten|preis|cargo|costo|coste|custo|taxa|tarifa",
        ),
        (
            r"\bfree (?:shipping|delivery|returns?)\b|livraison gratuite|kostenlose? (?:versand|lieferung|rucksendung)|"
            r"envio gratis|envio gratuito|frete gratis",
            r"shipping|delivery|return|livraison|versand|lieferung|envio|frete",
        ),
        (
            # someone else's act on a message ("the customer has already read it"), not the agent's ("I've read")
            r"(?<!\bi )(?<!\bwe )(?<!\byou )\b(?:has|have) (?:already |now )?(?:read|opened|seen|viewed|acknowledged|"
            r"signed) (?:it|them|the (?:message|e-?mail|sms|text|reply|invite|invitation|notification|reminder|"
            r"document|contract|offer))\b|"
            r"\bl'(?:a|ont) (?:deja )?(?:lu|ouvert|vu)\b|"
            r"hat (?:es |ihn |sie )?(?:schon |bereits )?(?:gelesen|geoffnet)|"
            r"\b(?:ya )?(?:lo|la) ha (?:leido|abierto|visto)|\b(?:ja )?(?:a |o )?(?:leu|visualizou)\b",
            r"\bread\b|read_at|opened|seen|viewed|acknowledg|\blu\b|gelesen|leido|lido",
        ),
        (
            r"\bpre-?(?:approved|qualified)\b|\byou(?:'re| are) (?:approved|eligible)\b|\byou qualify\b|"
            r"\beligible for\b|pre-?approuve|vorab genehmigt|preaprobad|pre-?aprovad",
            r"approv|eligib|qualif|genehmig|aprob|aprovad",
        ),
        (
            r"\b(?:whiteboard|projector|big screen|tv screen|video ?conferenc\w*|wi-?fi|free parking|parking "
            r"(?:included|spot|space)|swimming pool|sea view|air conditioning|balcony|minibar)\b",
            r"whiteboard|projector|screen|video|wi-?fi|parking|pool|view|air|balcon|minibar|amenit|equipment",
        ),
    )
)


def unbacked_terms(answer: Answer, backing: Backing, skip_sentences: set[int]) -> Iterator[tuple[str, str]]:
    """("term", text) of each policy, fee, perk or recipient's act the answer asserts in plain words that nothing
    the agent was told speaks of: "free cancellation", "breakfast included", "no extra charge", "she has already
    read it", "it has a whiteboard"."""
    # a sentence that reports a failure tells no perk: "the payment was declined, so no charges were made"
    failed = {c.sentence for c in answer.clauses if c.failure}
    for clause in answer.clauses:
        if clause.sentence in skip_sentences | failed or not clause.asserts:
            continue
        for said, told in _TERMS:
            m = said.search(clause.text)
            if m is not None and told.search(backing.text) is None:
                yield "term", m.group(0)


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
