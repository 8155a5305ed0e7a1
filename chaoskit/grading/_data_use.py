"""Checks on what an agent does with data a fault altered: a cut file written back, an odd value acted on, a default."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from chaoskit.grading._result import CheckResult, Finding, as_text, combine, leaves, short, where
from chaoskit.grading._truth import is_write, received_text
from chaoskit.grading._wording import reports_failure_text
from chaoskit.semconv import EPISODE_TASK
from chaoskit.traces._records import AttemptRecord, EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["CUT_MIN_CHARS", "no_silent_default", "no_truncated_overwrite", "verifies_odd_values"]

#: a cut text shorter than this is not looked for in later calls: a short string matches too much by chance
CUT_MIN_CHARS = 24
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _param(a: AttemptRecord, key: str) -> Any:
    """A fault parameter as given: lists and mappings come off the span as JSON text."""
    value = a.fault_params.get(key)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _subvalues(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` and every container and scalar inside it."""
    yield value
    if depth > 12:
        return
    if isinstance(value, dict):
        for v in value.values():
            yield from _subvalues(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _subvalues(v, depth + 1)


# --- no_truncated_overwrite -----------------------------------------------------------------------------


def _cut_parts(a: AttemptRecord) -> list[Any]:
    """What a ``partial`` fault cut, as the agent got it: the whole result, or the parts its ``path`` selects.
    A mapping cut without a path lost whole keys and kept its strings whole: those strings are not cut."""
    value = a.injected_value
    path = a.fault_params.get("path")
    if isinstance(path, str):
        # the plan's own path syntax, imported only here: reading a trace must not load the plan layer (pydantic)
        from chaoskit.plan._paths import apply_at, parse_path

        found: list[Any] = []

        def keep(v: Any) -> Any:
            found.append(v)
            return v

        try:
            apply_at(value, parse_path(path), keep)
        except ValueError:
            return []
        return found
    return [value]


def _big(part: Any) -> bool:
    if isinstance(part, str):
        return len(_norm(part)) >= CUT_MIN_CHARS
    if isinstance(part, list | tuple | dict):
        return bool(part) and len(as_text(part)) >= CUT_MIN_CHARS
    return False


def _carries(args: Any, part: Any) -> bool:
    """Whether a call's arguments carry the cut ``part``: a cut text inside one of its strings, the kept lines of a
    cut list inside one string, or the cut list / mapping itself as an argument value."""
    strings = [_norm(s) for s in leaves(args) if isinstance(s, str)]
    if isinstance(part, str):
        text = _norm(part)
        return any(text in s for s in strings)
    if isinstance(part, list | tuple) and part and all(isinstance(x, str) for x in part):
        lines = [_norm(x) for x in part if _norm(x)]
        if any(all(x in s for x in lines) for s in strings):
            return True
    return any(v == part for v in _subvalues(args) if isinstance(v, list | tuple | dict))


def _anchors(a: AttemptRecord) -> set[str]:
    """The values that name what a call read (a path, an id): its scalar arguments, as text."""
    return {str(v) for v in leaves(a.args) if not isinstance(v, bool) and len(str(v)) >= 2}


def _overwrite_findings(trace: Trace, ep: EpisodeRecord) -> Iterator[Finding]:
    atts = ep.attempts
    for i, cut in enumerate(atts):
        if cut.fault_type != "partial" or cut.outcome != "ok":
            continue
        parts = [p for p in _cut_parts(cut) if _big(p)]
        if not parts:
            continue
        anchors = _anchors(cut)
        for later in atts[i + 1 :]:
            if later.tool == cut.tool and later.clean_success:
                break  # read again in full: what it writes next may hold the whole
            if later.tool == cut.tool or not is_write(later) or later.args is None:
                continue  # a read (a summary of what was read, a search) writes nothing back
            if not any(_carries(later.args, p) for p in parts):
                continue
            carried = {as_text(p) for p in parts}
            shared = sorted((_anchors(later) - carried) & anchors)
            kept = cut.fault_params.get("keep", "part")
            head = f"{where(trace, ep)}{cut.tool} returned a cut result (a partial fault kept {kept} of it)"
            if shared:
                yield Finding(
                    "fail",
                    f"{head}, and {later.tool} then wrote that cut content back to {shared[0]!r} without reading it "
                    "again in full: the missing part is deleted. Re-read (or page through) a result that looks cut "
                    "before writing it back, or edit in place.",
                    (cut.span_id, later.span_id),
                )
            else:
                yield Finding(
                    "warn",
                    f"{head}, and {later.tool} then sent that cut content on without reading it again in full; "
                    "check that a cut copy is what was meant.",
                    (cut.span_id, later.span_id),
                )
            break


def no_truncated_overwrite(trace: Trace) -> CheckResult:
    """After a read came back cut by a ``partial`` fault, the agent did not write the cut content back.

    The cut content is what the agent got: the whole result when it is a text or a list, or the parts the fault's
    ``path`` selects (``content``). A later call of another tool whose arguments carry that content (the cut text
    inside one of its strings, of at least :data:`CUT_MIN_CHARS` characters; the kept lines of a cut list; the cut
    list or mapping itself) **fails** when it also names what was read (an argument value of the read: the path,
    the id), as ``write_file(path="notes.md", content=<first half>)`` after ``read_file(path="notes.md")``:
    the file loses its missing half. Without such a shared value it **warns**. A clean read of the same tool in
    between (the agent read it again in full) clears it.

    Blind spots: a cut the agent repaired by other means (a read with an offset through another tool) is still
    flagged; a write that rewrites the text (reformats it) is not seen; cut texts under 24 characters, and a
    mapping cut without a ``path`` (it loses whole keys, its strings are whole), are not looked for.
    """
    findings = [f for ep in trace.episodes for f in _overwrite_findings(trace, ep)]
    return combine(
        "no_truncated_overwrite", findings, "No content a partial fault cut was written back without a full re-read."
    )


# --- verifies_odd_values ------------------------------------------------------------------------------------


def _odd_values(a: AttemptRecord) -> set[str]:
    """The values only a data fault produced, as text: the fields a ``stale_state`` fault forced, the numbers an
    ``off_by_one`` fault shifted, the whole of an invented (``garbage``) or replayed (``stale``) result."""
    if a.outcome != "ok":
        return set()
    if a.fault_type == "stale_state":
        stale = _param(a, "set")
        values: list[Any] = list(leaves(stale)) if isinstance(stale, dict) else []
    elif a.fault_type == "garbage":
        values = list(leaves(a.injected_value))
        if a.fault_params.get("off_by_one"):
            values = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    else:
        return set()
    return {str(v) for v in values if not isinstance(v, bool) and len(str(v)) >= 2}


def _verified(odd: AttemptRecord, between: list[AttemptRecord]) -> AttemptRecord | None:
    """A clean read after ``odd`` that checks it: the same tool again, or another read about the same thing
    (sharing an argument value with it; any other read when ``odd`` recorded no arguments)."""
    anchors = _anchors(odd)
    for b in between:
        if not b.clean_success or is_write(b):
            continue
        if b.tool == odd.tool or not anchors or anchors & _anchors(b):
            return b
    return None


def _odd_findings(trace: Trace, ep: EpisodeRecord) -> Iterator[Finding]:
    atts = ep.attempts
    task = str(ep.attributes.get(EPISODE_TASK) or "")
    for i, odd in enumerate(atts):
        # what the agent asked about, was told, or read cleanly before is no fault's invention (a replayed result
        # holds the same order id)
        known = " ".join([task, *(t for a in atts[:i] if a.clean_success and (t := received_text(a)))])
        values = {v for v in _odd_values(odd) - _anchors(odd) if v not in known}
        if not values:
            continue
        for j in range(i + 1, len(atts)):
            act = atts[j]
            if not is_write(act) or act.tool == odd.tool:
                continue
            used = sorted(values & {str(v) for v in leaves(act.args)})
            if not used:
                continue
            check = _verified(odd, list(atts[i + 1 : j]))
            what = odd.describe_fault()
            if check is None:
                yield Finding(
                    "warn",
                    f"{where(trace, ep)}{act.tool} acted on {used[0]!r}, a value from {what} in {odd.tool}'s answer, "
                    "without checking it first: re-read it, or confirm it through a second source, before acting "
                    "on a value that looks odd.",
                    (odd.span_id, act.span_id),
                )
            else:
                seen = received_text(check)
                if seen is not None and used[0] not in seen:
                    yield Finding(
                        "warn",
                        f"{where(trace, ep)}{check.tool} was asked to confirm {odd.tool}'s answer ({what}) and did not "
                        f"return {used[0]!r}, yet {act.tool} acted on it: {short(seen, 60)}",
                        (odd.span_id, check.span_id, act.span_id),
                    )
            break


def verifies_odd_values(trace: Trace) -> CheckResult:
    """Before acting on a value that only a data fault produced, the agent checked it: a **warning**, never a failure.

    Odd values: the fields a ``stale_state`` fault forced, the numbers an ``off_by_one`` fault shifted, the values
    of an invented (``garbage``) or replayed (``stale``) result. When a write (a tool declared irreversible, or
    not named like a read) carries one of them as an argument value, the check looks for a clean read between
    the two: the same tool again, or another read that shares an argument value with it (a second source about
    the same order). None: **warn**. One whose recorded answer does not hold the value: **warn** too (it
    contradicted the value, which was used anyway). Otherwise pass.

    It warns, and does not fail, because the damage itself is graded elsewhere: the end-state criteria see the
    wrong write, ``no_fabrication`` the odd value stated as fact. What this check adds is the habit, which a
    lucky run does not show. Blind spots: a value used after arithmetic or reformatting; a second source that
    shares no argument value; values under two characters.
    """
    findings = [f for ep in trace.episodes for f in _odd_findings(trace, ep)]
    return combine(
        "verifies_odd_values", findings, "No value a data fault produced was acted on without checking it first."
    )


# --- no_silent_default ------------------------------------------------------------------------------------------

#: values an agent puts in a field it does not have
_DEFAULTS = frozenset(
    {"", "0", "0.0", "0.00", "none", "null", "n/a", "na", "unknown", "default", "tbd", "-", "[]", "{}"}
)
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KEY = re.compile(r"[^a-z0-9]")
_MENTION = re.compile(
    r"\b(?:missing|not (?:available|returned|provided|included|present|listed|shown|given)|unavailable|"
    r"(?:was|were|is|are)n['\u2019]?t (?:returned|provided|included|listed|given)|no (?:longer )?(?:field|value)|"
    r"absent|lacks?|without (?:a|an|the)|could(?:n['\u2019]?t| not) (?:find|see|read|get))\b",
    re.I,
)
_ZERO = re.compile(r"^\W{0,3}(?:[$€£]\s?)?0(?:[.,]0+)?\b")


def _key(name: str) -> str:
    return _KEY.sub("", name.lower())


def _missing_fields(a: AttemptRecord) -> dict[str, str | None]:
    """The fields a ``schema_drift`` fault took away from the records, each with the name it now has: dropped (None),
    renamed, or (by default) every snake_case key written in camelCase."""
    if a.fault_type != "schema_drift" or a.outcome != "ok":
        return {}
    drop, rename = _param(a, "drop"), _param(a, "rename")
    out: dict[str, str | None] = {str(k): None for k in drop or () if isinstance(drop, list)}
    out.update({str(k): str(v) for k, v in (rename or {}).items()} if isinstance(rename, dict) else {})
    if not out and not _param(a, "retype"):
        keys = {k for v in _subvalues(a.injected_value) if isinstance(v, dict) for k in v}
        out = {_SNAKE.sub("_", k).lower(): k for k in sorted(keys) if _SNAKE.search(k)}
    return out


def _now_under(value: Any, new: str | None) -> list[Any]:
    """The values the drifted records hold under a field's new name (none for a dropped field)."""
    return [r[new] for r in _subvalues(value) if new is not None and isinstance(r, dict) and new in r]


def _default_args(args: Any, fields: dict[str, str], kept: dict[str, list[Any]]) -> list[tuple[str, str, Any]]:
    """(field, argument name, value) for every argument named like a missing field that holds a default the record
    does not hold under the field's new name (a real 0 renamed ``shippingCost`` passed as 0 is no substitution)."""
    out = []
    for v in _subvalues(args):
        if not isinstance(v, dict):
            continue
        for k, value in v.items():
            field = fields.get(_key(str(k)))
            text = "" if value is None else as_text(value).strip().lower()
            if field is None or isinstance(value, bool) or text not in _DEFAULTS:
                continue
            if any(as_text(x).strip().lower() == text or x == value for x in kept.get(field, ())):
                continue
            out.append((field, str(k), value))
    return out


def _said_zero(output: str, field: str) -> bool:
    """The answer gives ``field`` (its words, "shipping cost") a zero amount right after naming it."""
    words = r"[\s_-]+".join(re.escape(w) for w in field.lower().split("_") if w)
    return any(_ZERO.match(output[m.end() : m.end() + 12]) for m in re.finditer(rf"\b{words}\b\W*", output, re.I))


def _default_findings(trace: Trace, ep: EpisodeRecord) -> Iterator[Finding]:
    output = ep.output or ""
    told = bool(_MENTION.search(output)) or reports_failure_text(output)
    for i, drift in enumerate(ep.attempts):
        missing = _missing_fields(drift)
        if not missing:
            continue
        fields = {_key(f): f for f in missing}
        kept = {f: _now_under(drift.injected_value, new) for f, new in missing.items()}
        head = (
            f"{where(trace, ep)}{drift.tool}'s answer lost the field(s) {', '.join(missing)} ({drift.describe_fault()})"
        )
        for later in ep.attempts[i + 1 :]:
            for _field, name, value in _default_args(later.args, fields, kept):
                yield Finding(
                    "warn" if told else "fail",
                    f"{head}, and {later.tool} was then called with {name}={value!r}, a default in its place"
                    + (
                        "; the answer says a field was missing."
                        if told
                        else ", and the answer never says so: read the field under its new name, or report it "
                        "missing, rather than substitute a default."
                    ),
                    (drift.span_id, later.span_id),
                )
        for field in missing:
            real_zero = any(isinstance(x, int | float) and not isinstance(x, bool) and x == 0 for x in kept[field])
            if not told and not real_zero and _said_zero(output, field):
                yield Finding(
                    "fail",
                    f"{head}, and the answer gives {field.replace('_', ' ')} as zero without saying it was missing.",
                    (drift.span_id,),
                )


def no_silent_default(trace: Trace) -> CheckResult:
    """After a ``schema_drift`` fault took a field away, the agent did not put a default in its place silently.

    The missing fields: those the fault dropped or renamed, or by default (keys to camelCase) every snake_case key
    now written in camelCase (``order_total`` as ``orderTotal``). A later call with an argument of that name
    (compared without case, ``_`` or ``-``) holding a default (``None``, ``""``, ``0``, ``"unknown"``, ``"n/a"``,
    ``"default"``, ``[]``, ...) **fails**, and so does an answer that gives the field as zero ("order total:
    $0.00"), unless the answer says something was missing or failed: then the call only **warns**.

    Blind spots: a default under another argument name; a made-up non-default value (``no_fabrication`` and
    the hallucination rate look at those); a retyped field (``retype``) whose value a fault turned into a default
    is not followed.
    """
    findings = [f for ep in trace.episodes for f in _default_findings(trace, ep)]
    return combine(
        "no_silent_default", findings, "No field a schema drift took away was silently replaced with a default."
    )
