"""Readers for exported spans: OTLP-JSON (single object, JSON Lines, Jaeger api_v3) and Jaeger UI JSON.

Files are streamed line by line when they are JSON Lines, so a million-span file never sits in memory as one parsed
document (lines are parsed by orjson; a line it refuses is parsed again by the standard
``json`` module, so what is accepted and every message stay the same); a pretty-printed file (or a top-level list)
is one document, parsed whole, and needs memory a few times its size. There is no size limit. JSON nested deeper
than Python's recursion limit (about 1,000 levels; a trace needs fewer than 10) is rejected with a
:class:`TraceReadError`, as is anything that is not the expected structure: every error names the file, the line
(the span's own line in a pretty-printed file when its id is known), the span or field, and what is allowed. Only
spans named ``execute_tool …`` / ``invoke_agent …`` have their attributes decoded: foreign spans cost one string
compare. Which spans are chaoskit's, and what makes one ungradable, is decided in ``_build``; how each document
is decoded, in ``_decode``. A file is read whole, one episode at a time (:class:`EpisodeStream`, in memory
bounded by the largest episode), or in parts cut at line starts (``chaoskit check --workers``). The readers
return episodes; the :class:`~chaoskit.traces._trace.Trace` classmethods wrap them."""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from chaoskit.semconv import ERROR_TYPE, EXCEPTION_EVENT, EXCEPTION_MESSAGE
from chaoskit.traces._attributes import PREFIXES
from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._decode import dispatch, dispatch_any, expected, read_line
from chaoskit.traces._records import EpisodeRecord, TraceReadError, show

__all__ = [
    "FORMATS",
    "EpisodeStream",
    "Source",
    "checked_path",
    "file_documents",
    "guarded",
    "jsonl_documents",
    "load",
    "nothing_to_grade",
    "open_trace_file",
    "read",
    "read_part",
    "read_sdk_spans",
    "read_with_builder",
    "split_jsonl",
    "text_documents",
]

#: the typed fast path for lines of OTLP-JSON Lines (a module name, so that a test can read with it off)
_typed_line: Callable[[bytes, TraceBuilder], bool] | None = read_line

#: the file formats ``load`` and ``chaoskit check --format`` accept
FORMATS = ("otlp", "jaeger")

_NESTED = (
    "the JSON is nested too deeply (deeper than Python's recursion limit, about 1,000 levels); OTLP-JSON "
    "and Jaeger JSON traces nest fewer than 10 levels"
)

#: what reads one parsed document into a builder: ``dispatch_any``, unless another reader gives its own
Take = Callable[[Any, str | None, TraceBuilder], None]

#: what the readers take: a path, JSON text (``str`` or UTF-8 ``bytes``), or parsed JSON (an object or a list)
Source = str | os.PathLike[str] | bytes | Mapping[str, Any] | Sequence[Any]


def read(source: Source, fmt: str | None) -> list[EpisodeRecord]:
    """The episodes in ``source`` (format ``"otlp"``, ``"jaeger"``, or None to sniff it from the content)."""
    return read_with_builder(source, fmt)[0]


def checked_path(path: Any, fmt: str | None) -> Path:
    """``path`` as a ``Path`` once it and ``fmt`` are known to be usable; else a ``TraceReadError`` saying why."""
    if fmt is not None and fmt not in FORMATS:
        raise TraceReadError(
            f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}",
            source=str(path) if isinstance(path, str | os.PathLike) else "<python>",
        )
    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise TraceReadError(f"expected the path of a trace file, got {path!r}", source="<python>")
    return Path(path)


def load(path: str | os.PathLike[str], fmt: str | None = None) -> list[EpisodeRecord]:
    """The episodes in the trace file at ``path``; ``fmt`` as in :func:`read` (see ``Trace.load``)."""
    return read(checked_path(path, fmt), fmt)


def read_with_builder(
    source: Source, fmt: str | None, *, name: str | None = None
) -> tuple[list[EpisodeRecord], TraceBuilder]:
    """The episodes, and the builder that says how many spans were met (``spans_seen``) and ``notes`` on what
    was found instead of spans: for a "nothing to grade" message. With ``name``, a ``str`` is JSON text (an
    answer from a backend), never a path."""
    builder = TraceBuilder(name or _name_of(source))
    with guarded(builder, fmt):
        if name is not None and isinstance(source, str):
            _read_text(source, fmt, builder, 1)
        else:
            _read_into(source, fmt, builder)
        return builder.build(), builder


@contextlib.contextmanager
def guarded(builder: TraceBuilder, fmt: str | None) -> Iterator[None]:
    """Read with the cyclic collector paused; any error but a TraceReadError becomes one naming the line."""
    with _no_gc():
        try:
            yield
        except TraceReadError:
            raise
        except RecursionError:
            raise builder.error(_NESTED) from None
        except (AttributeError, KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            # the readers check every field they use; this is a last guard so that no input ends in a traceback
            raise builder.error(
                f"malformed trace: expected {expected(fmt)} (internal reader error "
                f"{type(exc).__name__}: {show(str(exc), 120)})"
            ) from None


def read_sdk_spans(spans: Iterable[Any]) -> list[EpisodeRecord]:
    """The episodes of OpenTelemetry SDK ``ReadableSpan`` objects, checked as the file readers check theirs."""
    builder = TraceBuilder("<spans>")
    try:
        items = iter(spans)
    except TypeError:
        raise TraceReadError(
            f"expected an iterable of ReadableSpan objects, got {type(spans).__name__}", source="<spans>"
        ) from None
    for i, span in enumerate(items):
        builder.spans_seen += 1
        try:
            name = span.name
            raw_attrs = span.attributes
            ctx = span.get_span_context()
        except AttributeError:
            raise builder.error(
                f"spans[{i}]: expected an OpenTelemetry ReadableSpan, got {type(span).__name__}"
            ) from None
        if not isinstance(name, str) or not name.startswith(PREFIXES):
            continue
        attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in (raw_attrs or {}).items()}
        where = f"spans[{i}] ({name})"
        kind = builder.kind(name, attrs, where)
        if kind is None:
            continue
        if ctx is None or not ctx.trace_id or not ctx.span_id:
            raise builder.error(f"{where}: the span has no valid trace and span id")
        span_id = f"{ctx.span_id:016x}"
        where = f"span {span_id} ({name})"
        start, end = span.start_time, span.end_time
        if not start:
            raise builder.error(f"{where}: the span has no start time")
        if end is None:
            raise builder.error(f"{where}: the span has not ended (no end time); read spans once they are finished")
        if end < start:
            raise builder.error(f"{where}: the span ends before it starts (end {end} ns < start {start} ns)")
        error_message = None
        if ERROR_TYPE in attrs:
            for ev in span.events or ():
                if ev.name == EXCEPTION_EVENT and ev.attributes and EXCEPTION_MESSAGE in ev.attributes:
                    error_message = str(ev.attributes[EXCEPTION_MESSAGE])
                    break
            if error_message is None and span.status is not None:
                error_message = span.status.description
        builder.add(
            kind=kind,
            where=where,
            anchor=None,
            trace_id=f"{ctx.trace_id:032x}",
            span_id=span_id,
            name=name,
            start_us=start // 1000,
            end_us=start // 1000 + (end - start) // 1000,
            attrs=attrs,
            error_message=error_message,
        )
    return builder.build()


def nothing_to_grade(source: str, builder: TraceBuilder) -> TraceReadError:
    """The error for a source that was read but holds no chaoskit span, saying what it held instead."""
    if builder.notes:
        why = "; ".join(builder.notes[:3])
    elif not builder.spans_seen:
        why = "it holds no spans"
    else:
        why = (
            f"none of its {builder.spans_seen} span(s) is a chaoskit span (execute_tool … or invoke_agent … "
            "with chaoskit.* attributes); are the agent's tools wrapped with @chaos or a chaoskit integration?"
        )
    return TraceReadError(f"nothing to grade: {why}", source=source)


def _name_of(source: object) -> str:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not _is_text(source)):
        return str(source)
    if isinstance(source, str):
        return "<text>"
    return "<bytes>" if isinstance(source, bytes | bytearray) else "<object>"


def _is_text(source: str) -> bool:
    return source.lstrip().startswith(("{", "["))


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Reading allocates millions of small containers that all stay alive; CPython's cyclic collector would
    rescan them again and again and make reading super-linear (1.5x slower per span at 100k spans). Nothing
    built here forms cycles, so the collector is paused for the read and restored after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read_into(source: object, fmt: str | None, builder: TraceBuilder) -> None:
    if isinstance(source, bytes | bytearray):
        _read_text(_decode(bytes(source), 1, fmt, builder, first=True), fmt, builder, 1)
    elif isinstance(source, Mapping):
        dispatch(source, fmt, builder)
    elif isinstance(source, str) and not source.strip():
        raise builder.error(f"expected a file path or JSON text, got an empty string; expected {expected(fmt)}")
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and not _is_text(source)):
        _read_file(Path(source), fmt, builder)
    elif isinstance(source, str):
        _read_text(source, fmt, builder, 1)
    elif isinstance(source, Sequence):
        for i, doc in enumerate(source):
            builder.line = i + 1
            dispatch(doc, fmt, builder)
    else:
        raise builder.error(
            f"expected a file path, JSON text, a parsed JSON object or a list of them; got {type(source).__name__}"
        )


def _read_text(text: str, fmt: str | None, builder: TraceBuilder, first_line: int) -> None:
    for _ in text_documents(text, fmt, builder, first_line):
        pass


def text_documents(
    text: str, fmt: str | None, builder: TraceBuilder, first_line: int, take: Take = dispatch_any
) -> Iterator[None]:
    """Read each JSON document in ``text`` into ``builder`` (or hand it to ``take``), yielding after each one."""
    for line, doc, start, end in _documents(text, first_line, builder):
        builder.line = line
        builder.doc_text = (text, start, end)
        take(doc, fmt, builder)
        yield
    builder.doc_text = None


def _read_file(path: Path, fmt: str | None, builder: TraceBuilder) -> None:
    for _ in file_documents(path, fmt, builder):
        pass


def open_trace_file(path: Path, fmt: str | None) -> BinaryIO:
    """``path`` opened for reading bytes; a TraceReadError saying why it cannot be."""
    source = str(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        # a device or a pipe may never end: never wait on one
        raise TraceReadError("is not a regular file (a device, pipe or socket); give a trace file", source=source)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise TraceReadError(f"file not found; expected a trace file holding {expected(fmt)}", source=source) from None
    except IsADirectoryError:
        raise TraceReadError(
            "is a directory; give a trace file (OTLP-JSON, JSON Lines or Jaeger JSON)", source=source
        ) from None
    except OSError as exc:
        raise TraceReadError(
            f"cannot open the file ({exc.strerror or exc}); expected a readable trace file", source=source
        ) from None
    except ValueError as exc:  # a NUL byte in the name
        raise TraceReadError(
            f"not a usable file path ({exc}); expected the path of a trace file", source=repr(source)
        ) from None
    return fh


def file_documents(path: Path, fmt: str | None, builder: TraceBuilder, take: Take = dispatch_any) -> Iterator[None]:
    """Read each document of the trace file at ``path`` into ``builder``, yielding after each one: each line
    of JSON Lines, or the one (pretty-printed) document. ``take`` reads a parsed document (another reader of
    OTLP-JSON, such as the metrics' model steps, gives its own; the typed fast path is then off)."""
    source = str(path)
    fh = open_trace_file(path, fmt)
    with fh:
        try:
            lineno, first = 0, b""
            for raw in fh:
                lineno += 1
                if raw.strip():
                    first = raw
                    break
            if not first:
                raise TraceReadError(f"the file is empty; expected {expected(fmt)}", source=source)
            text = _decode(first, lineno, fmt, builder, first=lineno == 1)
            builder.line = lineno
            typed = _typed_line if take is dispatch_any and fmt != "jaeger" else None
            if typed is not None and typed(first, builder):
                yield  # JSON Lines (or one document on one line) of OTLP-JSON
                yield from jsonl_documents(fh, fmt, builder, lineno)
                return
            try:
                doc = json.loads(text)
            except RecursionError:
                raise builder.error(_NESTED) from None
            except ValueError as exc:
                rest = fh.read()
                nxt = _next_line(rest)
                if nxt is not None and _is_object(nxt):
                    # JSON Lines whose first line is broken, not one document spread over many lines
                    raise _jsonl_error(exc, fmt, builder, lineno) from None
                yield from text_documents(text + _decode(rest, lineno + 1, fmt, builder), fmt, builder, lineno, take)
                return
            if not isinstance(doc, dict):
                # pretty-printed (or a top-level list): one document spanning many lines, read whole
                more = _decode(fh.read(), lineno + 1, fmt, builder)
                yield from text_documents(text + more, fmt, builder, lineno, take)
                return
            builder.line = lineno
            take(doc, fmt, builder)
            del doc  # see jsonl_documents
            yield
            yield from jsonl_documents(fh, fmt, builder, lineno, take)
        except OSError as exc:
            raise TraceReadError(f"cannot read the file ({exc.strerror or exc})", source=source) from None


def jsonl_documents(
    lines: Iterable[bytes], fmt: str | None, builder: TraceBuilder, lineno: int, take: Take = dispatch_any
) -> Iterator[None]:
    """Read JSON Lines (``lines`` follow line ``lineno``) into ``builder`` (or hand each to ``take``), yielding
    after each line."""
    loads = orjson.loads
    typed = _typed_line if take is dispatch_any and fmt != "jaeger" else None
    for raw in lines:
        lineno += 1
        if not raw or raw.isspace():  # (strip() would copy every line)
            continue
        builder.line = lineno
        if typed is not None and typed(raw, builder):
            yield
            continue
        try:
            doc = loads(raw)
        except Exception:  # anything the fast parser refuses is read again by the standard one
            try:
                # without the newline a line cut inside a string reads "Unterminated string", not
                # "Invalid control character"
                doc = json.loads(_decode(raw, lineno, fmt, builder).rstrip("\r\n"))
            except ValueError as exc:
                raise _jsonl_error(exc, fmt, builder, lineno) from None
        take(doc, fmt, builder)
        # freed now, while the cyclic collector is paused: alive across the yield, its tens of thousands of
        # objects would be scanned by every collection the caller's work sets off until the next line
        del doc
        yield


def _jsonl_error(exc: ValueError, fmt: str | None, builder: TraceBuilder, line: int) -> TraceReadError:
    builder.line = line
    return builder.error(
        f"expected one complete JSON object per line (JSON Lines of {expected(fmt)}); this "
        f"line is cut short or malformed ({_json_problem(exc)})"
    )


def _next_line(data: bytes) -> bytes | None:
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        if data[pos:end].strip():
            return data[pos:end]
        pos = end + 1
    return None


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False


def _decode(raw: bytes, lineno: int, fmt: str | None, builder: TraceBuilder, *, first: bool = False) -> str:
    try:
        # a byte-order mark is allowed at the very start of a file, as editors on Windows write one
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        line = lineno + raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        builder.line = line
        raise builder.error(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {column}: {exc.reason}); expected {expected(fmt)}"
        ) from None


def _json_problem(exc: ValueError) -> str:
    msg = getattr(exc, "msg", None) or str(exc)
    col = getattr(exc, "colno", None)
    if not col:
        return msg
    # json's own messages may already end in "at" ("Unterminated string starting at")
    return f"{msg} column {col}" if msg.endswith(" at") else f"{msg} at column {col}"


def _documents(text: str, first_line: int, builder: TraceBuilder) -> Iterator[tuple[int, Any, int, int]]:
    """Each JSON document in ``text``: the line it starts on (``first_line`` is the text's), it, and its span."""
    decoder = json.JSONDecoder()
    pos, n = 0, len(text)
    line, counted = first_line, 0
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        line += text.count("\n", counted, pos)
        counted = pos
        builder.line = line
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            last = max(len(text.rstrip()) - 1, 0)
            if exc.pos > last:
                # a document cut short fails after its end: name the last line that has text, not the one after
                builder.line = first_line + text.count("\n", 0, last)
                column = last - (text.rfind("\n", 0, last) + 1) + 1
                problem = f"{exc.msg} after column {column}, where the text ends"
            else:
                builder.line = first_line + text.count("\n", 0, exc.pos)
                problem = _json_problem(exc)
            raise builder.error(
                f"expected a complete JSON document ({problem}); the file may be cut short or "
                f"not JSON; expected {expected(None)}"
            ) from None
        except RecursionError:
            raise builder.error(_NESTED) from None
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            raise builder.error(f"expected JSON numbers of a usual size ({show(str(exc), 100)})") from None
        yield line, doc, pos, end
        pos = end


# --- one episode at a time ------------------------------------------------------------------------------
# Spans of several episodes may interleave. An episode is handed out after the document (a line of JSON Lines)
# in which its root span and every attempt that root counted are in; the others at the end of the file. The
# rules of the whole-file reader hold: a span that cannot be graded, an episode missing attempts, a span id used
# twice with different content all raise a TraceReadError. An exact copy of a span of an episode already handed
# out is ignored; any other span of such an episode raises LateSpanError (read the file whole to grade it).


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


# --- a large JSON Lines file in parts ------------------------------------------------------------------
# Each part is read by its own TraceBuilder (in its own process, for ``chaoskit check --workers``); an episode
# whose spans straddle two parts stays open in both, and the reader of the whole file joins those with
# ``TraceBuilder.adopt``. Line numbers in messages are the file's own: a part counts the lines before it.

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
