"""Cut a large JSON Lines trace file into parts at line starts, and read one part as a stream of episodes.

Each part is read by its own :class:`TraceBuilder` (in its own process, for ``chaoskit check --workers``); an
episode whose spans straddle two parts stays open in both, and the reader of the whole file joins those with
``TraceBuilder.adopt``. Line numbers in messages are the file's own: a part counts the lines before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._readers import file_documents, guarded, jsonl_documents, open_trace_file
from chaoskit.traces._records import EpisodeRecord, TraceReadError

__all__ = ["read_part", "split_jsonl"]

_BLOCK = 1 << 23
#: the longest first line looked at when deciding whether a file is JSON Lines
_FIRST_LINE_LIMIT = 1 << 26


def split_jsonl(path: Path, parts: int) -> list[int] | None:
    """Byte offsets ``[0, b1, …, size]`` cutting the file at ``path`` into up to ``parts`` parts at line starts,
    or None when it cannot be cut: not JSON Lines (its first line is not a whole JSON object on its own), a
    byte-order mark, an unreadable file, or too small for two parts."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            first = fh.readline(_FIRST_LINE_LIMIT)
            if not first.strip() or first.startswith(b"\xef\xbb\xbf") or not first.endswith(b"\n"):
                return None
            try:
                if not isinstance(json.loads(first), dict):
                    return None
            except (ValueError, RecursionError):
                return None
            bounds = [0]
            for i in range(1, parts):
                fh.seek(max(size * i // parts - 1, 0))
                fh.readline()
                pos = fh.tell()
                if bounds[-1] < pos < size:
                    bounds.append(pos)
    except (OSError, ValueError):
        return None
    bounds.append(size)
    return bounds if len(bounds) > 2 else None


def read_part(
    path: Path, fmt: str | None, start: int, end: int | None, builder: TraceBuilder
) -> Iterator[EpisodeRecord]:
    """The episodes that complete within bytes ``start`` to ``end`` of the JSON Lines file at ``path`` (``start``
    at a line start), or within the whole file (of any format) when ``end`` is None: one file of several, such as
    a rotated one; afterwards ``builder.open_spans()`` holds the spans of the others."""
    if end is None:
        yield from _complete(file_documents(path, fmt, builder), builder, fmt)
        return
    source = str(path)
    with open_trace_file(path, fmt) as fh:
        try:
            lineno = _lines_before(fh, start)
            fh.seek(start)
            yield from _complete(jsonl_documents(_lines(fh, end - start), fmt, builder, lineno), builder, fmt)
        except OSError as exc:
            raise TraceReadError(f"cannot read the file ({exc.strerror or exc})", source=source) from None


def _complete(docs: Iterator[None], builder: TraceBuilder, fmt: str | None) -> Iterator[EpisodeRecord]:
    """After each document read into ``builder``, the episodes it completed; the others are left open."""
    while True:
        with guarded(builder, fmt):
            more = next(docs, False) is None
            done = builder.take_complete() if more else []
        yield from done
        if not more:
            return


def _lines_before(fh: BinaryIO, start: int) -> int:
    n, left = 0, start
    while left > 0:
        block = fh.read(min(_BLOCK, left))
        if not block:
            break
        n += block.count(b"\n")
        left -= len(block)
    return n


def _lines(fh: BinaryIO, size: int) -> Iterator[bytes]:
    left = size
    for raw in fh:
        yield raw
        left -= len(raw)
        if left <= 0:
            return
