"""What a check returns (CheckResult), and the helpers every check uses to build one from its findings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from chaoskit._errors import ChaoskitError
from chaoskit.semconv import EPISODE_REQUIRED_TOOLS
from chaoskit.traces._records import AttemptRecord, EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = [
    "CheckResult",
    "Finding",
    "Severity",
    "as_text",
    "by_tool",
    "combine",
    "leaves",
    "names",
    "ordinal",
    "required_of",
    "short",
    "times",
    "tool_list",
    "where",
]

#: how bad a finding is: ``fail`` (the check failed), ``warn`` (passed, but a person should look) or ``pass``
Severity = Literal["fail", "warn", "pass"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one check. ``passed`` is False only for ``severity == "fail"``."""

    name: str
    passed: bool
    severity: Severity
    message: str
    evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (``chaoskit check --json``, the runner's reports)."""
        return {
            "name": self.name,
            "passed": self.passed,
            "severity": self.severity,
            "message": self.message,
            "evidence": list(self.evidence),
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a check found in one episode: its severity, a sentence, and the span ids that prove it."""

    severity: Severity
    message: str
    evidence: tuple[str, ...]


def combine(name: str, findings: list[Finding], ok_message: str) -> CheckResult:
    """Fails beat warnings; several findings of the same severity are joined into one message."""
    for severity in ("fail", "warn"):
        chosen = [f for f in findings if f.severity == severity]
        if chosen:
            message = " ".join(f.message for f in chosen[:3])
            if len(chosen) > 3:
                message += f" (and {len(chosen) - 3} more)"
            evidence = tuple(dict.fromkeys(s for f in chosen for s in f.evidence))
            return CheckResult(name, severity != "fail", severity, message, evidence)
    return CheckResult(name, True, "pass", ok_message, ())


def where(trace: Trace, ep: EpisodeRecord) -> str:
    """A prefix naming the episode when the trace holds more than one."""
    if len(trace.episodes) <= 1:
        return ""
    label = ep.name or (ep.id[:8] if ep.id else "outside any episode")
    return f"[{label}] "


def by_tool(ep: EpisodeRecord) -> dict[str, list[AttemptRecord]]:
    """The episode's attempts grouped by tool, tools in order of first attempt."""
    out: dict[str, list[AttemptRecord]] = {}
    for a in ep.attempts:
        out.setdefault(a.tool, []).append(a)
    return out


def times(n: int) -> str:
    """``once``, ``2 times``, …"""
    return "once" if n == 1 else f"{n} times"


def ordinal(n: int) -> str:
    """``first`` … ``fifth``, then ``6th``, ``11th``, ``22nd``, …"""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}{suffix}")


def short(text: str | None, limit: int = 80) -> str:
    """An error message cut to ``limit`` characters, or ``no message``."""
    if not text:
        return "no message"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def names(tools: list[str]) -> str:
    """Tool names joined for a sentence."""
    return ", ".join(tools)


def tool_list(value: Iterable[str] | None, where: str) -> list[str] | None:
    """``required_tools`` as given by a caller, checked: None, or a list (any iterable but a string) of tool
    names. A bare string would be read one character at a time, so it is a :class:`~chaoskit.ChaoskitError`."""
    if value is None:
        return None
    if isinstance(value, str | bytes):
        raise ChaoskitError(
            f"{where}: required_tools must be a list of tool names, e.g. [{str(value)!r}], not the "
            f"string {value!r} (a string would be read one character at a time)"
        )
    try:
        tools = list(value)
    except TypeError:
        raise ChaoskitError(
            f"{where}: required_tools must be a list of tool names, got {type(value).__name__}"
        ) from None
    bad = [t for t in tools if not isinstance(t, str) or not t]
    if bad:
        raise ChaoskitError(
            f"{where}: required_tools must be a list of tool names (non-empty strings), got {bad[0]!r} in it"
        )
    return tools


def required_of(ep: EpisodeRecord, given: Iterable[str] | None) -> list[str] | None:
    """The tools the task needs: ``given``, else ``chaoskit.episode.required_tools`` on the root span (a list,
    a JSON list or a comma-separated string), else None (the checks then use their heuristic)."""
    if given is not None:
        return list(given)
    raw = ep.attributes.get(EPISODE_REQUIRED_TOOLS)
    if isinstance(raw, list):
        return [str(t) for t in raw]
    if isinstance(raw, str) and raw.strip():
        if raw.lstrip().startswith("["):
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = None
            if isinstance(decoded, list):
                return [str(t) for t in decoded]
        return [t.strip() for t in raw.split(",") if t.strip()]
    return None


def leaves(value: Any, depth: int = 0, limit: int = 12) -> Iterator[Any]:
    """The scalar values inside nested dicts, lists and tuples (``None`` left out), at most ``limit`` levels deep."""
    if depth > limit:
        return
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v, depth + 1, limit)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from leaves(v, depth + 1, limit)
    elif value is not None:
        yield value


#: the JSON text of values several checks search (call arguments, faulted outputs), by the value's identity; the
#: value is kept with its text, so that its id cannot be taken by another object while the entry lives
_TEXTS: dict[int, tuple[Any, str]] = {}


def as_text(value: Any) -> str:
    """``value`` as the checks search it: a string as it is, anything else as JSON with non-ASCII kept. A
    value's text is made once, however many checks ask for it."""
    if isinstance(value, str):
        return value
    hit = _TEXTS.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(_TEXTS) >= 4096:
        _TEXTS.clear()  # a bound on memory: the checks of one episode ask again within a few dozen values
    _TEXTS[id(value)] = (value, text)
    return text
