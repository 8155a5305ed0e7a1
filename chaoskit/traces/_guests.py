"""Attempts made in another process for an episode (a proxy's): the episode each belongs to.

A tool span without ``chaoskit.episode.id`` (``chaoskit mcp-proxy``, ``chaoskit http-proxy``, a tool service
joined by ``TRACEPARENT``) belongs to the episode of its own trace whose root span's time window holds it, when
exactly one does; else it stays outside any episode rather than be guessed into one. A streaming read keeps, per
trace, the windows of the episodes it handed out and of the attempts it seated, so that a span read later that
would change who owns which makes the whole file be read instead (``LateSpanError``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from chaoskit.semconv import EPISODE_ID
from chaoskit.traces._records import AttemptRecord

__all__ = ["Guests", "host"]

#: times are µs, kept as float seconds on an AttemptRecord: half a µs of slack for the rounding
_SLACK_US = 0.5


def _holds(start_us: float, end_us: float, a_start: float, a_end: float) -> bool:
    return start_us <= a_start * 1e6 + _SLACK_US and a_end * 1e6 - _SLACK_US <= end_us


def host(a: AttemptRecord, roots: Iterable[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The episode an attempt without an episode id was made for: the one episode of its trace whose root span
    (``roots``: episode id and root content) holds the attempt in its window, or None (none, or several)."""
    found = [
        eid
        for eid, r in roots
        if r["trace_id"] == a.trace_id and _holds(r["start_us"], r["end_us"], a.start_time, a.end_time)
    ]
    return found[0] if len(found) == 1 else None


class Guests:
    """Seats the attempts without an episode id, and remembers (streaming) what a later span must not change."""

    def __init__(self) -> None:
        #: per trace id, the windows (µs) of the episodes handed out, and of the attempts seated in one
        self.closed: dict[str, list[tuple[int, int]]] = {}
        self.seated: dict[str, list[tuple[float, float]]] = {}

    def seat(self, episodes: dict[str | None, Any], only: str | None, *, stream: bool) -> None:
        """Move the attempts of ``episodes[None]`` into the episode each was made for (:func:`host`); with
        ``only``, just those of that episode (streaming: it is about to be handed out)."""
        guests = episodes.get(None)
        if guests is None or not guests.attempts:
            return
        roots = [(eid, p.root) for eid, p in episodes.items() if eid is not None and p.root is not None]
        stay: list[AttemptRecord] = []
        for a in guests.attempts:
            eid = host(a, roots)
            if eid is None or (only is not None and eid != only):
                stay.append(a)
                continue
            episodes[eid].attempts.append(dataclasses.replace(a, episode_id=eid))
            if stream:
                self.seated.setdefault(a.trace_id, []).append((a.start_time, a.end_time))
        guests.attempts[:] = stay
        if not stay and guests.root is None:
            del episodes[None]

    def closing(self, root: Mapping[str, Any]) -> None:
        """Streaming: the episode of ``root`` is handed out."""
        self.closed.setdefault(root["trace_id"], []).append((root["start_us"], root["end_us"]))

    def late_guest(self, a: AttemptRecord) -> str | None:
        """Why attempt ``a`` (no episode id) comes too late: an episode handed out already holds it."""
        if any(_holds(s, e, a.start_time, a.end_time) for s, e in self.closed.get(a.trace_id, ())):
            return (
                f"this attempt of {a.tool} has no episode id and falls within an episode of trace {a.trace_id} "
                "that was graded before it was read"
            )
        return None

    def late_host(self, root: Mapping[str, Any]) -> str | None:
        """Why episode ``root`` comes too late: it could own an attempt already seated in another episode."""
        if any(_holds(root["start_us"], root["end_us"], s, e) for s, e in self.seated.get(root["trace_id"], ())):
            return (
                f"episode {root['attrs'].get(EPISODE_ID)} shares its trace and time with an attempt "
                "without an episode id that an episode graded earlier took"
            )
        return None
