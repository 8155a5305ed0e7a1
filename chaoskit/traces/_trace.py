"""The Trace: the episodes the checks read, and its public entry points for reading exported spans.

Whatever the source (in-memory ``ReadableSpan``\\ s, OTLP-JSON, JSON Lines, Jaeger's api_v3 or UI JSON), the
same spans give the same :class:`Trace`: times are kept at microsecond precision (Jaeger's) and values are
normalised to what OTLP carries, so verdicts do not depend on where the trace was read from. The readers
(``_readers``, ``_stream``) return episodes and never import this module, so the classmethods here call them
directly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from chaoskit.traces._readers import EpisodeStream, load, read, read_sdk_spans
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, attempt_order

__all__ = ["Trace"]


class Trace:
    """Episodes read from exported spans. Build one with ``Trace.from_spans`` / ``from_otlp_json`` /
    ``from_jaeger_json`` / ``load``; ``trace.split()`` gives one Trace per episode."""

    __slots__ = ("_attempts", "episodes")

    def __init__(self, episodes: Iterable[EpisodeRecord] = ()) -> None:
        self.episodes: list[EpisodeRecord] = list(episodes)
        self._attempts: list[AttemptRecord] | None = None

    @property
    def attempts(self) -> list[AttemptRecord]:
        """Every attempt of every episode, in start-time order."""
        if self._attempts is None:
            self._attempts = sorted((a for e in self.episodes for a in e.attempts), key=attempt_order)
        return self._attempts

    def split(self) -> list[Trace]:
        """One Trace per episode, in order: each graded on its own (``chaoskit check``, the runner)."""
        return [Trace([e]) for e in self.episodes]

    def episode(self, episode_id: str | None) -> EpisodeRecord:
        """The episode with this id (None: the attempts made outside any episode); KeyError if absent."""
        for e in self.episodes:
            if e.id == episode_id:
                return e
        raise KeyError(episode_id)

    def __len__(self) -> int:
        return len(self.episodes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.episodes == other.episodes

    # unhashable, as equality compares the (mutable) episode list
    __hash__ = None  # type: ignore[assignment]  # typeshed types __hash__ as a method; None means unhashable

    def __repr__(self) -> str:
        return f"Trace({len(self.episodes)} episode(s), {sum(len(e.attempts) for e in self.episodes)} attempt(s))"

    # -- builders ------------------------------------------------------------------------------------

    @classmethod
    def from_spans(cls, spans: Iterable[Any]) -> Trace:
        """From OpenTelemetry SDK ``ReadableSpan`` objects (e.g. ``InMemorySpanExporter`` output).

        Raises :class:`TraceReadError` when a chaoskit span cannot be graded (see :meth:`load`)."""
        return cls(read_sdk_spans(spans))

    @classmethod
    def from_otlp_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From OTLP-JSON: a ``{"resourceSpans": ...}`` object, JSON Lines of them (Collector file exporter,
        chaoskit's writer) or Jaeger v2 api_v3's ``{"result": {"resourceSpans": ...}}``; a path, JSON text
        (``str`` or UTF-8 ``bytes``) or an already-parsed object (or list of them)."""
        return cls(read(source, "otlp"))

    @classmethod
    def from_jaeger_json(cls, source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Trace:
        """From Jaeger's UI JSON (``{"data": [{"traceID", "spans": [...], "processes"}]}``, or one trace)."""
        return cls(read(source, "jaeger"))

    @classmethod
    def load(cls, path: str | os.PathLike[str], format: str | None = None) -> Trace:
        """Read a file; ``format`` is ``"otlp"`` or ``"jaeger"``, sniffed from the content when None.

        A file that holds no chaoskit span gives an empty Trace (``len(trace) == 0``; ``chaoskit check``
        reports it as "nothing to grade"). A file that cannot be read, or a chaoskit span that cannot be graded
        (no ids or times, an end before its start, a tool span without ``chaoskit.attempt``, a chaoskit
        attribute of the wrong type, a span id used twice with different content, an episode missing some of
        its attempts), raises :class:`TraceReadError` naming the file, the line and the span.
        """
        return cls(load(path, format))

    @classmethod
    def iter_episodes(cls, path: str | os.PathLike[str], format: str | None = None) -> Iterator[Trace]:
        """Read a file as it goes, one Trace per episode (as ``split()`` gives them) as soon as the episode is
        complete: memory is bounded by the largest episode, not by the file, for files of any size.

        Each episode is handed out after the line (of JSON Lines) that holds its ``invoke_agent`` span and every
        attempt that span counted, the others at the end of the file; so episodes whose spans interleave are
        fine. Everything :meth:`load` rejects is rejected here too, when it is met, possibly after some episodes
        were handed out: grade them only once the iteration ended without an error. An exact copy of a span of
        an episode already handed out is ignored; any other span of it raises ``LateSpanError`` (a
        :class:`TraceReadError`), since :meth:`load` would have graded the episode with it.
        """
        for episode in EpisodeStream(path, format):
            yield cls([episode])
