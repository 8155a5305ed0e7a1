"""Read a trace file one episode at a time, in memory bounded by the largest episode rather than by the file.

Spans of several episodes may interleave. An episode is handed out after the document (a line of JSON Lines)
in which its root span and every attempt that root counted are in; the others at the end of the file. The
rules of the whole-file reader hold: a span that cannot be graded, an episode missing attempts, a span id used
twice with different content all raise a :class:`TraceReadError`. An exact copy of a span of an episode
already handed out is ignored; any other span of such an episode raises :class:`LateSpanError` (read the file
whole to grade it). JSON Lines are streamed; a pretty-printed document is parsed whole, as ``Trace.load`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from chaoskit.traces._build import LateSpanError, TraceBuilder
from chaoskit.traces._readers import checked_path, file_documents, guarded, nothing_to_grade
from chaoskit.traces._records import EpisodeRecord, TraceReadError

__all__ = ["EpisodeStream", "LateSpanError", "iter_episodes"]


class EpisodeStream:
    """The episodes of one trace file, read as they complete; iterate once. After the iteration ``count`` is how
    many were handed out and ``builder`` says what was met (for a "nothing to grade" message)."""

    def __init__(self, path: str | os.PathLike[str], fmt: str | None = None) -> None:
        self.path = checked_path(path, fmt)
        self.fmt = fmt
        self.builder = TraceBuilder(str(path), stream=True)
        self.count = 0

    def __iter__(self) -> Iterator[EpisodeRecord]:
        builder, fmt = self.builder, self.fmt
        docs = file_documents(self.path, fmt, builder)
        while True:
            with guarded(builder, fmt):
                more = next(docs, False) is None
                done = builder.take_complete() if more else builder.build()
            self.count += len(done)
            yield from done
            if not more:
                return

    def nothing_to_grade(self) -> TraceReadError:
        """The error for a file that holds no chaoskit span, saying what it held instead."""
        return nothing_to_grade(str(self.path), self.builder)


def iter_episodes(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[EpisodeRecord]:
    """The episodes of the trace file at ``path``, each as soon as it is complete (see the module's docstring)."""
    yield from EpisodeStream(path, fmt)
