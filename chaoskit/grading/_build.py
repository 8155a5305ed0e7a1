"""Turn decoded spans into a Trace: decide which spans are chaoskit's and reject the ones that cannot be graded.

Which spans are chaoskit's (every reader uses this one rule): a span whose name starts with ``execute_tool`` or
``invoke_agent`` and that carries at least one ``chaoskit.*`` attribute. Its ``gen_ai.operation.name``, when
present, must agree with the name. Every other span (model steps, the application's own spans, another
framework's tool spans) is ignored. A chaoskit span that lacks what grading needs (ids, start and end times,
``chaoskit.attempt`` on a tool span, ``chaoskit.episode.id`` on an episode span), that carries a chaoskit
attribute of the wrong type, that ends before it starts, that appears twice with different content, or whose
episode says it made more attempts than the trace holds, makes the whole read fail with a
:class:`TraceReadError`: a verdict on such a trace could be a false pass.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoskit.grading._trace import AttemptRecord, EpisodeRecord, Trace, TraceReadError, _attempt_order

__all__ = ["PREFIXES", "TraceBuilder", "show"]

TOOL = "execute_tool"
EPISODE = "invoke_agent"
#: the cheap name filter every reader applies before decoding attributes
PREFIXES = (TOOL, EPISODE)
OUTCOMES = ("ok", "error", "cancelled")

_BOOL_KEYS = frozenset({
    "chaoskit.tool.executed", "chaoskit.fault.injected", "chaoskit.tool.irreversible", "chaoskit.tool.idempotent",
    "chaoskit.tool.refused", "chaoskit.fault.after_write", "chaoskit.episode.success",
})
_STR_KEYS = frozenset({
    "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.result", "error.type", "chaoskit.outcome",
    "chaoskit.args", "chaoskit.args.hash", "chaoskit.idempotency_key", "chaoskit.fault.type",
    "chaoskit.fault.skipped", "chaoskit.fault.value", "chaoskit.fault.text", "chaoskit.episode.output",
    "chaoskit.episode.outcome", "chaoskit.episode.error", "chaoskit.scenario", "gen_ai.agent.name",
})
#: whole numbers and the least value allowed
_INT_KEYS = {"chaoskit.fault.index": 0, "chaoskit.episode.attempts": 0, "chaoskit.fault.http.status": 100,
             "http.response.status_code": 0}
_SECONDS_KEYS = frozenset({"chaoskit.retry_after", "chaoskit.fault.retry_after"})
_CHECKED = frozenset({"chaoskit.attempt", "chaoskit.episode.id", "chaoskit.fault.asks_for", *_BOOL_KEYS, *_STR_KEYS,
                      *_INT_KEYS, *_SECONDS_KEYS})
_FAULT_PREFIX = "chaoskit.fault."
_NOT_PARAMS = frozenset({"type", "index", "value", "injected", "skipped"})


def show(value: Any, limit: int = 60) -> str:
    """A value for an error message: its repr, on one line, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


class TraceBuilder:
    """Collects chaoskit spans from any reader, checks that each can be graded, and assembles the Trace."""

    def __init__(self, source: str) -> None:
        self.source = source
        #: the line the current document starts on (a JSON Lines file: the line itself)
        self.line: int | None = None
        #: the text holding the current multi-line document, and where the document starts and ends in it
        self.doc_text: tuple[str, int, int] | None = None
        #: every span entry met, chaoskit's or not, and what was found instead of spans: for "nothing to grade"
        self.spans_seen = 0
        self.notes: list[str] = []
        self._episodes: dict[str | None, _EpisodeParts] = {}
        #: each chaoskit span's content and where it was read (line, anchor, document), for duplicates
        self._seen: dict[tuple[str, str], tuple[Any, _Place]] = {}
        # tool names, outcomes, trace and episode ids repeat across a million spans: keep one copy of each
        self._strings: dict[str, str] = {}

    def error(self, message: str, anchor: tuple[str, str] | None = None) -> TraceReadError:
        """An error at the current line; ``anchor`` (a key and its string value, e.g. ``("spanId", "ab…")``)
        finds the exact line of a span inside a pretty-printed document."""
        return TraceReadError(message, source=self.source, line=_line_at((self.line, anchor, self.doc_text)))

    def kind(self, name: str, attrs: Mapping[str, Any], where: str,
             anchor: tuple[str, str] | None = None) -> str | None:
        """``execute_tool`` or ``invoke_agent`` for a chaoskit span, None for a span to ignore."""
        if "chaoskit.attempt" not in attrs and not any(k.startswith("chaoskit.") for k in attrs):
            return None
        named = TOOL if name.startswith(TOOL) else EPISODE
        op = attrs.get("gen_ai.operation.name")
        if op is not None and op != named:
            raise self.error(f"{where}: a span named {named} … with chaoskit.* attributes must have "
                             f"gen_ai.operation.name {named!r} (or none), got {show(op)}", anchor)
        return named

    def add(
        self, *, kind: str, where: str, anchor: tuple[str, str] | None, trace_id: str, span_id: str, name: str,
        start_us: int, end_us: int, attrs: Mapping[str, Any], error_message: str | None,
    ) -> None:
        """One chaoskit span with valid ids and times (``end_us >= start_us``, checked by the reader)."""
        a = self._checked(kind, attrs, where, anchor)
        trace_id = self._strings.setdefault(trace_id, trace_id)
        content: Any
        if kind == TOOL:
            content = self._attempt(trace_id, span_id, name, start_us, end_us, a, error_message, where, anchor)
        else:
            content = {"trace_id": trace_id, "span_id": span_id, "start_us": start_us, "end_us": end_us,
                       "attrs": a}
        key = (trace_id, span_id)
        seen = self._seen.get(key)
        if seen is not None:
            # a collector retry or a backend listing the span twice is harmless; two versions of it are not
            if _same(seen[0], content):
                return
            line = _line_at(seen[1])
            first = f" (first at line {line})" if line is not None else ""
            here = (self.line, anchor, self.doc_text)
            raise TraceReadError(
                f"{where}: span id {span_id} of trace {trace_id} appears twice with different content{first}; a "
                "span id must be unique, so this trace may have been tampered with", source=self.source,
                line=_line_at(here, 2 if seen[1][2] == here[2] else 1))
        self._seen[key] = (content, (self.line, anchor, self.doc_text))
        if isinstance(content, AttemptRecord):
            parts = self._parts(content.episode_id)
            parts.attempts.append(content)
            return
        eid = a["chaoskit.episode.id"]
        parts = self._parts(eid)
        if parts.root is not None:
            raise self.error(f"{where}: episode {eid} has two invoke_agent spans ({parts.root['span_id']} and "
                             f"{span_id}); an episode has exactly one", anchor)
        parts.root = content

    def _parts(self, eid: str | None) -> _EpisodeParts:
        parts = self._episodes.get(eid)
        if parts is None:
            parts = self._episodes[eid] = _EpisodeParts()
        return parts

    def _checked(self, kind: str, attrs: Mapping[str, Any], where: str,
                 anchor: tuple[str, str] | None) -> dict[str, Any]:
        """The attributes with chaoskit's own ones checked for type and range (digit strings and "true" /
        "false" from backends that flatten tags to text are accepted and converted)."""
        required = "chaoskit.attempt" if kind == TOOL else "chaoskit.episode.id"
        if required not in attrs:
            what = ("the attempt number (a whole number >= 1), so its tool's attempts cannot be counted"
                    if kind == TOOL else "the episode id (a string), so its attempts cannot be grouped")
            raise self.error(f"{where}: a chaoskit {kind} span must carry {required}, {what}; it is missing",
                             anchor)
        out = dict(attrs)
        for key in attrs.keys() & _CHECKED:
            value = attrs[key]
            problem: str | None = None
            if key == "chaoskit.attempt":
                n = _whole(value)
                if n is None or n < 1:
                    problem = "expected chaoskit.attempt to be a whole number >= 1"
                else:
                    out[key] = n
            elif key == "chaoskit.episode.id":
                if not isinstance(value, str) or not value:
                    problem = "expected chaoskit.episode.id to be a non-empty string"
            elif key in _BOOL_KEYS:
                b = _boolean(value)
                if b is None:
                    problem = f"expected {key} to be true or false"
                else:
                    out[key] = b
            elif key in _STR_KEYS:
                if not isinstance(value, str):
                    problem = f"expected {key} to be a string"
                elif key == "chaoskit.outcome" and value not in OUTCOMES:
                    problem = f"expected chaoskit.outcome to be one of {', '.join(OUTCOMES)}"
            elif key in _INT_KEYS:
                n = _whole(value)
                if n is None or n < _INT_KEYS[key]:
                    problem = f"expected {key} to be a whole number >= {_INT_KEYS[key]}"
                else:
                    out[key] = n
            elif key in _SECONDS_KEYS:
                x = _seconds(value)
                if x is None:
                    problem = f"expected {key} to be a number of seconds >= 0"
                else:
                    out[key] = x
            elif key == "chaoskit.fault.asks_for":
                names = _as_list(value)
                if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
                    problem = "expected chaoskit.fault.asks_for to be a list of tool names"
                else:
                    out[key] = names
            if problem is not None:
                raise self.error(f"{where}: {problem}, got {show(value)}", anchor)
        return out

    def _attempt(
        self, trace_id: str, span_id: str, name: str, start_us: int, end_us: int, a: Mapping[str, Any],
        error_message: str | None, where: str, anchor: tuple[str, str] | None,
    ) -> AttemptRecord:
        tool = a.get("gen_ai.tool.name")
        if tool is None and name.startswith(TOOL + " "):
            tool = name[len(TOOL) + 1:]
        if not tool:
            raise self.error(f"{where}: no tool name: expected gen_ai.tool.name or a span name "
                             "'execute_tool <tool>'", anchor)
        fault_type = a.get("chaoskit.fault.type")
        if fault_type is not None and a.get("chaoskit.fault.skipped") == fault_type:
            # decided, then skipped by the entry point after the span started (attributes cannot be removed)
            fault_type = None
        params: dict[str, Any] = {}
        if fault_type is not None:
            for k, v in a.items():
                if k.startswith(_FAULT_PREFIX):
                    short = k[len(_FAULT_PREFIX):]
                    if short not in _NOT_PARAMS:
                        params[short] = v
        fault_index = a.get("chaoskit.fault.index") if fault_type is not None else None
        raw_value = a.get("chaoskit.fault.value")
        raw_args = a.get("chaoskit.args")
        outcome = a.get("chaoskit.outcome")
        error_type = a.get("error.type")
        if outcome is None:
            outcome = "error" if error_type is not None else "ok"
        eid = a.get("chaoskit.episode.id")
        share = self._strings.setdefault
        return AttemptRecord(
            tool=share(tool, tool),
            attempt=a["chaoskit.attempt"],
            start_time=start_us / 1e6,
            end_time=end_us / 1e6,
            outcome=share(outcome, outcome),
            error_type=share(error_type, error_type) if error_type is not None else None,
            error_message=error_message if error_type is not None else None,
            fault_type=share(fault_type, fault_type) if fault_type is not None else None,
            fault_index=fault_index,
            fault_params=params,
            injected=a.get("chaoskit.fault.injected") is True,
            injected_value=_json_or_raw(raw_value) if raw_value is not None else None,
            executed=a.get("chaoskit.tool.executed") is True,
            args_hash=a.get("chaoskit.args.hash"),
            args=_json_or_raw(raw_args) if raw_args is not None else None,
            idempotency_key=a.get("chaoskit.idempotency_key"),
            irreversible=a.get("chaoskit.tool.irreversible") is True,
            call_id=a.get("gen_ai.tool.call.id"),
            span_id=span_id,
            trace_id=trace_id,
            episode_id=share(eid, eid) if eid is not None else None,
            fault_skipped=a.get("chaoskit.fault.skipped"),
            result=a.get("gen_ai.tool.call.result"),
            observed_status=a.get("http.response.status_code"),
            observed_retry_after=a.get("chaoskit.retry_after"),
            idempotent=a.get("chaoskit.tool.idempotent") is True,
            refused=a.get("chaoskit.tool.refused") is True,
        )

    def build(self) -> Trace:
        episodes: list[EpisodeRecord] = []
        for eid, parts in self._episodes.items():
            attempts = tuple(sorted(parts.attempts, key=_attempt_order))
            root = parts.root
            if root is None:
                # the root span ends last: a file cut short keeps the attempts without it
                episodes.append(EpisodeRecord(
                    id=eid, name=None, output=None, outcome=None, error=None,
                    trace_id=attempts[0].trace_id if attempts else None, span_id=None,
                    start_time=attempts[0].start_time if attempts else None,
                    end_time=max(a.end_time for a in attempts) if attempts else None,
                    attributes={}, attempts=attempts,
                ))
                continue
            ra: dict[str, Any] = root["attrs"]
            counted = ra.get("chaoskit.episode.attempts")
            if isinstance(counted, int) and len(attempts) < counted:
                raise TraceReadError(
                    f"span {root['span_id']} (episode {eid}): the episode recorded {counted} tool attempt(s) but "
                    f"the trace holds {len(attempts)} execute_tool span(s) for it; spans are missing (a lost "
                    "export batch or a file cut short), and the missing attempts could change the verdict",
                    source=self.source, line=_line_at(self._seen[(root["trace_id"], root["span_id"])][1]))
            name = ra.get("chaoskit.scenario") or ra.get("gen_ai.agent.name")
            episodes.append(EpisodeRecord(
                id=eid, name=name, output=ra.get("chaoskit.episode.output"),
                outcome=ra.get("chaoskit.episode.outcome"), error=ra.get("chaoskit.episode.error"),
                trace_id=root["trace_id"], span_id=root["span_id"],
                start_time=root["start_us"] / 1e6, end_time=root["end_us"] / 1e6,
                attributes=ra, attempts=attempts,
            ))
        episodes.sort(key=lambda e: (e.start_time if e.start_time is not None else math.inf, e.id or ""))
        return Trace(episodes)


@dataclass
class _EpisodeParts:
    root: dict[str, Any] | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)


_Place = tuple[int | None, tuple[str, str] | None, tuple[str, int, int] | None]


def _line_at(place: _Place, nth: int = 1) -> int | None:
    """The line of a span: its document's, or in a multi-line document the line where its id is written (the
    ``nth`` time, for a span listed twice)."""
    line, anchor, doc = place
    if anchor is not None and doc is not None and line is not None:
        text, start, end = doc
        key, value = anchor
        pattern = re.compile(f'"{re.escape(key)}"\\s*:\\s*"{re.escape(value)}"')
        matches = list(itertools.islice(pattern.finditer(text, start, end), nth))
        if matches:
            found = matches[-1]
            line += text.count("\n", start, found.start())
    return line


def _same(old: Any, new: Any) -> bool:
    # repr as well: a NaN read from JSON is not equal to itself
    return bool(old == new) or repr(old) == repr(new)


def _whole(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) < 20:
        return int(v)
    return None


def _boolean(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    return None


def _seconds(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, int | float) and math.isfinite(v) and v >= 0:
        return float(v)
    return None


def _json_or_raw(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        # capped attributes end in "…[+N chars]": keep the raw text rather than fail the read
        return text


def _as_list(value: Any) -> Any:
    # Jaeger (and other backends) flatten array attributes to a JSON string
    if isinstance(value, str) and value.startswith("["):
        decoded = _json_or_raw(value)
        return decoded if isinstance(decoded, list) else value
    if isinstance(value, tuple):
        return list(value)
    return value
