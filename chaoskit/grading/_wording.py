"""The wording of a final answer: success claims, failure reports, and the specific claims its sentences make."""

from __future__ import annotations

import json
import re

__all__ = [
    "admits_empty",
    "asserts_record",
    "claim_backed",
    "claims_success",
    "clock_minutes",
    "mentions",
    "quote",
    "reports_failure_text",
    "sentences",
    "specific_claims",
]

# --- success and failure in free text ----------------------------------------------------------------

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_SUCCESS = re.compile(
    r"\b(done|completed?|success|successful(?:ly)?|succeeded|booked|refunded|confirmed|sent|processed|issued|"
    r"scheduled|created|updated|saved|placed|cancell?ed|reserved|paid|approved|finished|resolved|delivered|"
    r"submitted|all set|went through|taken care of|closed|escalated|replied|posted|notified|forwarded|assigned|"
    r"charged|purchased|ordered|rescheduled)\b",
    re.I,
)
_FAILURE = re.compile(
    r"(could\s*n[o']t|couldn't|can\s*not|cannot|can't|\bfail(?:ed|ure|s|ing)?\b|\bunable\b|\bunavailable\b|"
    r"\berrors?\b|\bnot able\b|\bwas\s*n[o']t able\b|\bdid\s*n[o']t\b|\bdidn't\b|\bunsuccessful\b|"
    r"\bunfortunately\b|\bsorry\b|\btry again\b|\btimed? ?out\b|\bnot (?:been |yet )?(?:completed?|done|"
    r"processed|possible|confirmed|booked|refunded|sent|issued)\b|\bno (?:results?|records?|data)\b|"
    r"\bnot found\b|\bout of service\b|\brate.?limit|\bHTTP [45]\d\d\b|\bexpired\b|\bstill open\b|"
    r"\bunauthori[sz]ed\b)",
    re.I,
)
_NEGATION = re.compile(r"\b(not|never|no)\b|n't\b", re.I)
#: "nothing was closed", "none of them were sent": negates only the success word it governs, so "nothing to
#: worry about, the refund went through" still claims success
_NOTHING = re.compile(
    r"\b(?:nothing|none(?: of (?:the|them|it|these|those)\b[\w-]*)?|neither\b[\w-]*)\s+(?:[\w-]+\s+)?"
    r"(?:was|were|is|are|has been|have been|had been|got)\s+(?:yet\s+|actually\s+)?(\w+(?: \w+)?)",
    re.I,
)


#: a sentence that reports progress on part of the task ("done so far: ...") next to an admitted failure
_PROGRESS = re.compile(r"\bso far\b|\bpartial(?:ly)?\b|\bpartly\b|\bwhat (?:did )?work(?:ed)?\b", re.I)


def claims_success(text: str | None) -> bool:
    """Some sentence announces success (done, completed, refunded, …) and neither negates it, reports a
    failure, nor (in an answer that admits a failure) scopes it as progress so far. Heuristic: English only;
    irony and hedged claims are missed."""
    if not text:
        return False
    # "done so far: ..." reports progress only next to a failure the answer admits; alone it is a claim
    partial = bool(_FAILURE.search(text))
    for sentence in _SENTENCES.split(text):
        rest = _without_nothing_done(sentence)
        if (
            _SUCCESS.search(rest)
            and not _FAILURE.search(sentence)
            and not _NEGATION.search(sentence)
            and not (partial and _PROGRESS.search(sentence))
        ):
            return True
    return False


def _without_nothing_done(sentence: str) -> str:
    """The sentence without what nothing/none negates: "nothing was charged twice" claims no charge, but the
    rest of "your refund went through and nothing was charged twice" still claims the refund."""
    return _NOTHING.sub(lambda m: " " if _SUCCESS.match(m.group(1)) else m.group(0), sentence)


def reports_failure_text(text: str | None) -> bool:
    """The text says something did not work (could not, failed, unable, unavailable, error, not done …)."""
    return bool(text) and bool(_FAILURE.search(text or ""))


def quote(text: str, limit: int = 60) -> str:
    """The text on one line, cut to ``limit`` characters, as a JSON string."""
    t = " ".join(text.split())
    return json.dumps(t if len(t) <= limit else t[: limit - 1] + "…", ensure_ascii=False)


def sentences(text: str) -> list[str]:
    """The text split into sentences (and clauses after a semicolon) and lines."""
    return _SENTENCES.split(text)


def mentions(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole word (4242 does not occur in 14242 or 4242.5)."""
    if value[:1].isalnum() and value[-1:].isalnum():
        return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", text, re.I) is not None
    return value.lower() in text.lower()


# --- specific claims ---------------------------------------------------------------------------------

_EMPTY_ACK = re.compile(
    r"\b(no (?:results?|records?|matches|matching|orders?|items?|data|entries)|not find|n't find|not found|"
    r"nothing|none|empty|zero|0 results|no such|does not exist|doesn't exist)\b",
    re.I,
)
_ASSERTS = re.compile(
    r"\b(found|here (?:is|are)|the (?:order|record|result|results|customer|account|booking|file)s? (?:is|are|was|"
    r"were|has|shows?)|returned|shows?|lists?|contains?|there (?:is|are))\b",
    re.I,
)
#: a sentence that only supposes or advises ("if it shipped via UPS, ...") claims nothing
_HEDGE = re.compile(
    r"\b(if|whether|may|might|could|usually|typically|normally|generally|please|you can|try|"
    r"check|perhaps|maybe)\b",
    re.I,
)

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+"
    rf"(?:of\s+)?{_MONTH}\b|\b(?:on\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\btomorrow\b|"
    r"\bnext (?:week|month)\b|\b(?:in|within) \d+ (?:business |working )?(?:days?|hours?|weeks?)\b",
    re.I,
)
#: a time of day: "09:30", "9:30 am", "2 pm" (a meeting's slot is as specific as a date)
_TIME = re.compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d\b(?:\s?[ap]\.?m\b\.?)?|\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\b\.?", re.I)
_CLAIMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "carrier",
        re.compile(
            r"\b(?:UPS|USPS|DHL|DPD|GLS|TNT|(?i:fedex|royal mail|canada post|la poste|evri|hermes|"
            r"ontrac|purolator|australia post|japan post|amazon logistics))\b"
        ),
    ),
    (
        "status",
        re.compile(
            r"\b(?:shipped|delivered|in transit|out for delivery|dispatched|on its way|processing|pending|on hold|"
            r"back-?ordered|cancell?ed|refunded|confirmed|approved|declined|rejected|paid|unpaid|overdue|"
            r"suspended|resolved|booked|checked in|delayed|on time|departed|arrived|in stock|out of stock|"
            r"sold out)\b",
            re.I,
        ),
    ),
    ("date", _DATE),
    ("time", _TIME),
    (
        "amount",
        re.compile(
            r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros|"
            r"pounds)\b",
            re.I,
        ),
    ),
    (
        "id",
        re.compile(
            r"(?i:\b(?:order|tracking|ticket|booking|reservation|confirmation|reference|ref|invoice|account|flight|"
            r"case|shipment|parcel|package|refund|transaction|meeting|event|appointment|hold|seat|return|coupon)"
            r"(?:\s+(?:number|no\.?|id|code))?\s*[:#]?\s*)"
            r"((?=[A-Za-z0-9-]*\d)[A-Za-z0-9][A-Za-z0-9-]{2,})|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{8,}\b"
        ),
    ),
)
_AMOUNT_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
#: statuses an agent's own successful call produces ("your flight is booked"): whether that call really
#: succeeded is no_bluff's question, so another tool's clean success backs them
_ACTION_STATUS = re.compile(r"booked|confirmed|paid|refunded|cancell?ed|approved|resolved|declined|rejected", re.I)


def specific_claims(output: str) -> list[tuple[str, str]]:
    """(kind, text) of each specific claim in a sentence that neither admits failure nor hedges."""
    out: list[tuple[str, str]] = []
    for sentence in _SENTENCES.split(output):
        if (
            _EMPTY_ACK.search(sentence)
            or _FAILURE.search(sentence)
            or _NEGATION.search(sentence)
            or _HEDGE.search(sentence)
        ):
            continue
        for kind, pattern in _CLAIMS:
            for m in pattern.finditer(sentence):
                text = next((g for g in m.groups() if g), None) or m.group(0)
                out.append((kind, text.strip()))
    return list(dict.fromkeys(out))


def claim_backed(kind: str, text: str, known: str, acted: bool) -> bool:
    """Whether ``known`` (the backing) holds the claim; ``acted``: another tool succeeded cleanly."""
    if kind == "status" and acted and _ACTION_STATUS.fullmatch(text):
        return True
    if kind == "date":
        # agents reformat dates ("2026-12-05" -> "Friday", "in 3 days"): any date in the backing will do
        return mentions(known, text) or _DATE.search(known) is not None
    if kind == "time":
        return _time_backed(text, known)
    if kind == "amount":
        m = _AMOUNT_NUMBER.search(text)
        if m is None:
            return True
        number = m.group().replace(",", "")
        forms = {number, number.rstrip("0").rstrip(".") if "." in number else number}
        return any(mentions(known, f) for f in forms)
    return mentions(known, text)


def _minutes(text: str) -> int | None:
    """Minutes after midnight of a time written "14:30", "2:30 pm" or "2 pm"; None when it is none."""
    m = re.match(r"(\d{1,2})(?::(\d{2}))?\s?([ap])?", text.strip(), re.I)
    if m is None:
        return None
    return clock_minutes(int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").lower())


def clock_minutes(hour: int, minute: int, half: str | None) -> int:
    """Minutes after midnight of ``hour:minute``, on a 12-hour clock when ``half`` is ``a`` or ``p`` (lower case)."""
    if half == "p" and hour < 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return hour * 60 + minute


def _time_backed(text: str, known: str) -> bool:
    """The time ``text`` occurs in ``known`` in any form: "2 pm" is backed by "14:00" and the other way."""
    want = _minutes(text)
    return any(_minutes(m.group(0)) == want for m in _TIME.finditer(known)) or mentions(known, text)


def admits_empty(output: str) -> bool:
    """The answer admits an empty result or a failure ("no orders", "couldn't find", "sorry")."""
    return bool(_EMPTY_ACK.search(output)) or reports_failure_text(output)


def asserts_record(output: str) -> bool:
    """The answer asserts that a record exists ("I found your order", "here is")."""
    return _ASSERTS.search(output) is not None
