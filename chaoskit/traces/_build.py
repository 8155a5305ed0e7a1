"""Turn decoded spans into episodes: decide which spans are chaoskit's and reject the ones that cannot be graded.

Which spans are chaoskit's (every reader uses this one rule): a span whose name starts with ``execute_tool`` or
``invoke_agent`` and that carries at least one ``chaoskit.*`` attribute. Its ``gen_ai.operation.name``, when
present, must agree with the name. Every other span (model steps, the application's own spans, another
framework's tool spans) is ignored. A chaoskit span that lacks what grading needs (ids, start and end times;
on a tool span ``chaoskit.attempt``, ``chaoskit.outcome``, ``chaoskit.tool.executed``,
``chaoskit.tool.irreversible``, and ``chaoskit.args.hash`` beside ``chaoskit.args``; ``chaoskit.episode.id`` on
an episode span), that carries a chaoskit attribute of the wrong type, that ends before it starts, that appears
twice with different content, whose episode says it made more attempts than the trace holds, or whose attempt
number is above the count of its tool's spans in the episode, makes the whole read fail with a
:class:`TraceReadError`: a verdict on such a trace could be a false pass.

Attempts made in another process (a proxy's: no ``chaoskit.episode.id``) join the episode of their trace whose
root span's window holds them, when exactly one does (``_guests``): the agent's final answer is graded together
with the attempts its proxies made.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoskit.semconv import (
    ATTEMPT,
    CHAOSKIT_PREFIX,
    EPISODE_ATTEMPTS,
    EPISODE_ERROR,
    EPISODE_ID,
    EPISODE_OUTCOME,
    EPISODE_OUTPUT,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    SCENARIO,
)
from chaoskit.traces._attributes import EPISODE, TOOL, BadAttribute, attempt_record, checked
from chaoskit.traces._guests import Guests
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, TraceReadError, attempt_order, show

__all__ = ["LateSpanError", "TraceBuilder"]


class LateSpanError(TraceReadError):
    """A span of an episode that a streaming read had already completed and handed out: an extra attempt, or a
    second version of one of its spans. Read whole (``Trace.load``), the same file either grades with that span or
    fails with the exact reason; ``chaoskit check`` does so by itself."""


class TraceBuilder:
    """Collects chaoskit spans from any reader, checks that each can be graded, and assembles the episodes.

    With ``stream=True`` an episode can be taken out (:meth:`take_complete`) as soon as its root span and every
    attempt it counted are in; the builder then keeps only a compact fingerprint of its spans (about 16 bytes a
    span), so that a copy of one of them met later is told apart from a new or changed span."""

    def __init__(self, source: str, *, stream: bool = False) -> None:
        self.source = source
        self.stream = stream
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
        #: streaming: the episodes touched since the last take_complete; the spans of the episodes taken out
        #: (24 bytes each: span id, trace id's last 8 bytes, content digest, in 65,536 buckets); their ids' hashes
        self._touched: set[str | None] = set()
        self._closed: dict[int, bytearray] = {}
        self._closed_eids: set[int] = set()
        #: a part of a file read on its own also keeps the ids of the episodes it took out (see closed_spans)
        self.keep_closed_ids = False
        self._closed_ids: set[str | None] = set()
        self._digests: dict[tuple[str, str], int] = {}
        #: attempts without an episode id (a proxy's), seated in the episode each was made for
        self._guests = Guests()
        #: spans adopted from another file (see adopt's ``origin``): the file each was read from, for messages
        self._origins: dict[tuple[str, str], str] = {}

    def error(self, message: str, anchor: tuple[str, str] | None = None) -> TraceReadError:
        """An error at the current line; ``anchor`` (a key and its string value, e.g. ``("spanId", "ab…")``)
        finds the exact line of a span inside a pretty-printed document."""
        return TraceReadError(message, source=self.source, line=_line_at((self.line, anchor, self.doc_text)))

    def protocol_fault(self, summary: Any) -> None:
        """Note a fault that acted outside any tool call (the MCP proxy's ``slow_initialize``), for "nothing to
        grade": a client that gave up before calling a tool leaves this, and nothing else."""
        if isinstance(summary, str) and len(self.notes) < 3:
            self.notes.append(
                f"it holds no tool call, only the MCP proxy's span of a protocol fault ({summary}); "
                "did the client give up before calling a tool?"
            )

    def kind(
        self, name: str, attrs: Mapping[str, Any], where: str, anchor: tuple[str, str] | None = None
    ) -> str | None:
        """``execute_tool`` or ``invoke_agent`` for a chaoskit span, None for a span to ignore."""
        if ATTEMPT not in attrs and not any(k.startswith(CHAOSKIT_PREFIX) for k in attrs):
            return None
        named = TOOL if name.startswith(TOOL) else EPISODE
        op = attrs.get(GEN_AI_OPERATION_NAME)
        if op is not None and op != named:
            raise self.error(
                f"{where}: a span named {named} … with chaoskit.* attributes must have "
                f"gen_ai.operation.name {named!r} (or none), got {show(op)}",
                anchor,
            )
        return named

    def add(
        self,
        *,
        kind: str,
        where: str,
        anchor: tuple[str, str] | None,
        trace_id: str,
        span_id: str,
        name: str,
        start_us: int,
        end_us: int,
        attrs: Mapping[str, Any],
        error_message: str | None,
    ) -> None:
        """One chaoskit span with valid ids and times (``end_us >= start_us``, checked by the reader)."""
        trace_id = self._strings.setdefault(trace_id, trace_id)
        content: Any
        try:
            a = checked(kind, attrs)
            if kind == TOOL:
                content = attempt_record(
                    trace_id, span_id, name, start_us, end_us, a, error_message, self._strings.setdefault
                )
        except BadAttribute as exc:
            raise self.error(f"{where}: {exc}", anchor) from None
        if kind != TOOL:
            content = {"trace_id": trace_id, "span_id": span_id, "start_us": start_us, "end_us": end_us, "attrs": a}
        key = (trace_id, span_id)
        if self.stream:
            eid = content.episode_id if kind == TOOL else a[EPISODE_ID]
            self._touched.add(eid)
            digest = _digest(name, start_us, end_us, error_message, a)
            if self._closed_eids and self._is_late(key, eid, digest, where, anchor):
                return
            self._digests[key] = digest
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
                "span id must be unique, so this trace may have been tampered with",
                source=self.source,
                line=_line_at(here, 2 if seen[1][2] == here[2] else 1),
            )
        self._seen[key] = (content, (self.line, anchor, self.doc_text))
        if isinstance(content, AttemptRecord):
            if self.stream and content.episode_id is None and self._guests.closed:
                self._late(self._guests.late_guest(content), where, anchor)
            parts = self._parts(content.episode_id)
            parts.attempts.append(content)
            return
        eid = a[EPISODE_ID]
        if self.stream and self._guests.seated:
            self._late(self._guests.late_host(content), where, anchor)
        parts = self._parts(eid)
        if parts.root is not None:
            raise self.error(
                f"{where}: episode {eid} has two invoke_agent spans ({parts.root['span_id']} and "
                f"{span_id}); an episode has exactly one",
                anchor,
            )
        parts.root = content

    def _parts(self, eid: str | None) -> _EpisodeParts:
        parts = self._episodes.get(eid)
        if parts is None:
            parts = self._episodes[eid] = _EpisodeParts()
        return parts

    def build(self) -> list[EpisodeRecord]:
        """The episodes in start-time order, each with its attempts in time order; raises when spans are missing."""
        self._guests.seat(self._episodes, None, stream=self.stream)
        episodes = [self._episode(eid, parts) for eid, parts in self._episodes.items()]
        episodes.sort(key=_episode_order)
        return episodes

    def take_complete(self) -> list[EpisodeRecord]:
        """Streaming: the episodes touched since the last call whose root span and every attempt it counted are
        in, in start-time order; they are forgotten but for their fingerprint. Call between documents."""
        done: list[EpisodeRecord] = []
        for eid in self._touched:
            parts = self._episodes.get(eid)
            if parts is None or parts.root is None:
                continue
            counted = parts.root["attrs"].get(EPISODE_ATTEMPTS)
            if isinstance(counted, int) and len(parts.attempts) >= counted:
                self._guests.seat(self._episodes, eid, stream=True)
                done.append(self._episode(eid, parts))
                self._guests.closing(parts.root)
                self._forget(eid, parts)
        self._touched.clear()
        if len(self._strings) > 50_000:
            self._strings.clear()  # only a saving of memory: ids of episodes taken out never come back
        done.sort(key=_episode_order)
        return done

    def _forget(self, eid: str | None, parts: _EpisodeParts) -> None:
        del self._episodes[eid]
        assert parts.root is not None
        spans = [(parts.root["trace_id"], parts.root["span_id"])]
        spans += [(a.trace_id, a.span_id) for a in parts.attempts]
        for key in spans:
            del self._seen[key]
            fp = _fingerprint(key)
            bucket = self._closed.get(hash(fp) & _BUCKETS)
            if bucket is None:
                bucket = self._closed[hash(fp) & _BUCKETS] = bytearray()
            bucket += fp + self._digests.pop(key).to_bytes(8, "little", signed=True)
        self._closed_eids.add(hash(eid))
        if self.keep_closed_ids:
            self._closed_ids.add(eid)

    def _is_late(
        self, key: tuple[str, str], eid: str | None, digest: int, where: str, anchor: tuple[str, str] | None
    ) -> bool:
        """True for an exact copy of a span of an episode taken out (ignored, as a collector's retry is); raises
        :class:`LateSpanError` for any other span of such an episode; False for a span of an open one."""
        fp = _fingerprint(key)
        bucket = self._closed.get(hash(fp) & _BUCKETS)
        why = None
        if bucket is not None:
            at = bucket.find(fp)
            while at >= 0 and at % 24:
                at = bucket.find(fp, at + 1)
            if at >= 0:
                if int.from_bytes(bucket[at + 16 : at + 24], "little", signed=True) == digest:
                    return True
                why = "a second version of one of its spans (the same span id with different content)"
        if why is None:
            if eid is None or hash(eid) not in self._closed_eids:
                return False
            why = "another span of it, beyond the attempts its invoke_agent span counted"
        raise LateSpanError(
            f"{where}: episode {eid} was complete (its invoke_agent span and every attempt it counted) and "
            f"graded before this span, {why}; read the file whole (Trace.load) to grade it or see what is wrong",
            source=self.source,
            line=_line_at((self.line, anchor, self.doc_text)),
        )

    def _late(self, why: str | None, where: str, anchor: tuple[str, str] | None) -> None:
        if why is not None:
            raise LateSpanError(
                f"{where}: {why}; read the file whole (Trace.load) to grade it",
                source=self.source,
                line=_line_at((self.line, anchor, self.doc_text)),
            )

    def open_spans(self) -> list[tuple[Any, int | None]]:
        """Streaming, at the end of a part of a file: the spans of the episodes still open (each root span's
        content, or an AttemptRecord) and the line of each, for :meth:`adopt` in the reader of the whole file."""
        out: list[tuple[Any, int | None]] = []
        for parts in self._episodes.values():
            contents = ([parts.root] if parts.root is not None else []) + list(parts.attempts)
            for c in contents:
                key = (c["trace_id"], c["span_id"]) if isinstance(c, dict) else (c.trace_id, c.span_id)
                out.append((c, _line_at(self._seen[key][1])))
        return out

    def closed_spans(self) -> tuple[bytes, frozenset[str | None], dict[str, list[tuple[int, int]]]]:
        """Streaming: what identifies the episodes taken out (24 bytes a span, the first 16 its span and trace
        id), their ids and their time windows by trace id, so that a part of the file read elsewhere can tell
        whether it holds more of them (an attempt without an episode id within one of those windows)."""
        return b"".join(self._closed.values()), frozenset(self._closed_ids), dict(self._guests.closed)

    def adopt(self, spans: list[tuple[Any, int | None]], where: str, origin: str | None = None) -> None:
        """Add spans from :meth:`open_spans` of another builder (``where`` names it in messages), with the
        duplicate rules of :meth:`add`; ``origin``: the file they were read from, when not this builder's."""
        source = origin or self.source
        for content, line in spans:
            is_root = isinstance(content, dict)
            key = (content["trace_id"], content["span_id"]) if is_root else (content.trace_id, content.span_id)
            seen = self._seen.get(key)
            if seen is not None:
                if _same(seen[0], content):
                    continue
                first = _line_at(seen[1])
                raise TraceReadError(
                    f"span {key[1]} ({where}): span id {key[1]} of trace {key[0]} appears twice with different "
                    f"content (first at line {first}); a span id must be unique, so this trace may have been "
                    "tampered with",
                    source=source,
                    line=line,
                )
            self._seen[key] = (content, (line, None, None))
            if origin is not None:
                self._origins[key] = origin
            if not is_root:
                self._parts(content.episode_id).attempts.append(content)
                continue
            eid = content["attrs"][EPISODE_ID]
            parts = self._parts(eid)
            if parts.root is not None:
                raise TraceReadError(
                    f"span {key[1]} ({where}): episode {eid} has two invoke_agent spans ({parts.root['span_id']} "
                    f"and {key[1]}); an episode has exactly one",
                    source=source,
                    line=line,
                )
            parts.root = content

    def origin(self, key: tuple[str, str]) -> str:
        """The file the span ``key`` (trace id, span id) was read from."""
        return self._origins.get(key, self.source)

    def _episode(self, eid: str | None, parts: _EpisodeParts) -> EpisodeRecord:
        attempts = tuple(sorted(parts.attempts, key=attempt_order))
        if eid is not None:
            self._check_numbering(eid, attempts)
        root = parts.root
        if root is None:
            # the root span ends last: a file cut short keeps the attempts without it
            return EpisodeRecord(
                id=eid,
                name=None,
                output=None,
                outcome=None,
                error=None,
                trace_id=attempts[0].trace_id if attempts else None,
                span_id=None,
                start_time=attempts[0].start_time if attempts else None,
                end_time=max(a.end_time for a in attempts) if attempts else None,
                attributes={},
                attempts=attempts,
            )
        ra: dict[str, Any] = root["attrs"]
        counted = ra.get(EPISODE_ATTEMPTS)
        if isinstance(counted, int) and len(attempts) < counted:
            raise TraceReadError(
                f"span {root['span_id']} (episode {eid}): the episode recorded {counted} tool attempt(s) but "
                f"the trace holds {len(attempts)} execute_tool span(s) for it; spans are missing (a lost "
                "export batch or a file cut short), and the missing attempts could change the verdict",
                source=self.origin((root["trace_id"], root["span_id"])),
                line=_line_at(self._seen[(root["trace_id"], root["span_id"])][1]),
            )
        name = ra.get(SCENARIO) or ra.get(GEN_AI_AGENT_NAME)
        return EpisodeRecord(
            id=eid,
            name=name,
            output=ra.get(EPISODE_OUTPUT),
            outcome=ra.get(EPISODE_OUTCOME),
            error=ra.get(EPISODE_ERROR),
            trace_id=root["trace_id"],
            span_id=root["span_id"],
            start_time=root["start_us"] / 1e6,
            end_time=root["end_us"] / 1e6,
            attributes=ra,
            attempts=attempts,
        )

    def _check_numbering(self, eid: str, attempts: tuple[AttemptRecord, ...]) -> None:
        """An episode numbers each tool's calls 1, 2, 3, …: a number above the count of that tool's spans means
        spans are missing, even when the root span (which counts them all) is missing too."""
        last: dict[str, AttemptRecord] = {}
        count: dict[str, int] = {}
        for a in attempts:
            count[a.tool] = count.get(a.tool, 0) + 1
            if a.tool not in last or a.attempt > last[a.tool].attempt:
                last[a.tool] = a
        for tool, a in last.items():
            if a.attempt > count[tool]:
                raise TraceReadError(
                    f"span {a.span_id} ({TOOL} {tool}, episode {eid}): this is call {a.attempt} of {tool} in the "
                    f"episode, but the trace holds {count[tool]} {TOOL} span(s) of {tool} for it; spans are missing "
                    "(a lost export batch, a file cut short, or an edit), and the missing attempts could change "
                    "the verdict",
                    source=self.origin((a.trace_id, a.span_id)),
                    line=_line_at(self._seen[(a.trace_id, a.span_id)][1]),
                )


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


def _episode_order(e: EpisodeRecord) -> tuple[float, str]:
    return (e.start_time if e.start_time is not None else math.inf, e.id or "")


_BUCKETS = 0xFFFF


def _fingerprint(key: tuple[str, str]) -> bytes:
    """16 bytes for a span: its id and the last 8 bytes of its trace id (both hex here)."""
    return bytes.fromhex(key[1] + key[0][-16:])


def _digest(name: str, start_us: int, end_us: int, error_message: str | None, a: Mapping[str, Any]) -> int:
    """A fingerprint of a span's content, to tell a copy of a span from a changed one after its episode is gone."""
    head = (name, start_us, end_us, error_message)
    try:
        # in written order: a copy lists them in the same order (another order only means a read of the whole file)
        return hash((head, tuple(a.items())))
    except TypeError:  # a list or object value
        return hash((head, repr(a)))


def _same(old: Any, new: Any) -> bool:
    # repr as well: a NaN read from JSON is not equal to itself
    return bool(old == new) or repr(old) == repr(new)
