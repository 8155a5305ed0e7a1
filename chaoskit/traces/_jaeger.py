"""Read traces from a running Jaeger: query its api_v3 over HTTP and hand the answer to the OTLP reader.

``GET /api/v3/traces`` answers one JSON object, ``{"result": {"resourceSpans": [...]}}`` (one entry per trace
and resource), or ``404 {"error": {"httpCode": 404, "message": "No traces found"}}``. The answer is received in
chunks into one buffer (at most :data:`MAX_ANSWER_BYTES`), decoded once, and its ``resourceSpans`` are parsed and
read one entry at a time, so the whole parsed document (several times the size of the text) never sits in
memory; any answer of another shape is read whole by the OTLP reader, which names what is wrong. api_v3 has
no paging: ``--limit`` is sent as ``query.num_traces``, the one name every Jaeger release reads, and
:class:`JaegerPages` reads a long time range window by window.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from chaoskit._errors import ChaoskitError
from chaoskit.traces._build import LateSpanError, TraceBuilder
from chaoskit.traces._decode import read_api_v3
from chaoskit.traces._http import ERROR_BODY, Answer, check_http_url, one_line, request
from chaoskit.traces._readers import _no_gc, guarded, read_with_builder, text_documents
from chaoskit.traces._records import EpisodeRecord, TraceReadError, show

__all__ = [
    "MAX_ANSWER_BYTES",
    "MIN_WINDOW",
    "JaegerPages",
    "check_jaeger_url",
    "fetch_jaeger",
    "fetch_jaeger_trace",
    "read_answer",
]

#: the largest answer read from Jaeger (1 GiB); a larger one is an error that says how to narrow the query
MAX_ANSWER_BYTES = 1 << 30
#: the narrowest window :class:`JaegerPages` splits a full answer down to
MIN_WINDOW = timedelta(milliseconds=1)
#: a trace id in api_v3's answer (a key, never a string value's text: a quote inside a string is escaped)
_TRACE_ID = re.compile(r'(?<!\\)"trace(?:Id|_id)"\s*:\s*"([^"\\]*)"')

_NO_TRACES = "no traces found"
_TIMEOUT_HINT = " (--timeout); is it overloaded, or the query too wide (--since, --limit)?"


def check_jaeger_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host (and a valid port); a usage error naming the option if not."""
    return check_http_url(url, "--from-jaeger", "Jaeger's query service", "http://localhost:16686")


def fetch_jaeger(
    url: str, service: str, since: timedelta, *, limit: int = 100, timeout: float = 30.0
) -> tuple[list[EpisodeRecord], TraceBuilder] | None:
    """Query Jaeger's api_v3 ``GET /api/v3/traces`` for the last ``since`` of ``service`` (at most ``limit``
    traces, the whole answer within about ``timeout`` seconds): the episodes and how they were read (for a
    "nothing to grade" message), or None when Jaeger found no traces. Every failure is a TraceReadError."""
    now = datetime.now(UTC)
    base = f"{check_jaeger_url(url).rstrip('/')}/api/v3/traces"
    text = _receive(_search(base, service, now - since, now + timedelta(minutes=1), limit), base, url, timeout)
    return None if text is None else read_answer(text, base)


def fetch_jaeger_trace(url: str, trace_id: str, *, timeout: float = 30.0) -> list[EpisodeRecord]:
    """The episodes of one trace, read from api_v3's ``GET /api/v3/traces/{trace_id}`` (by :func:`read_answer`,
    as a search's answer is); a TraceReadError when Jaeger has no such trace or the answer cannot be graded."""
    if not isinstance(trace_id, str) or not re.fullmatch(r"[0-9a-fA-F]{1,32}", trace_id):
        raise ChaoskitError(f"expected a trace id (up to 32 hex digits), got {show(trace_id)}")
    base = f"{check_jaeger_url(url).rstrip('/')}/api/v3/traces"
    target = f"{base}/{trace_id.lower().rjust(32, '0')}"
    text = _receive(target, base, url, timeout)
    if text is None:
        raise TraceReadError(f"Jaeger has no trace {trace_id}", source=target)
    return read_answer(text, target)[0]


def read_answer(text: str, source: str) -> tuple[list[EpisodeRecord], TraceBuilder]:
    """The episodes in api_v3's answer ``text``: ``result.resourceSpans`` read one entry at a time when the
    answer has that shape, else (or when an entry cannot be read) the whole answer by the OTLP reader, whose
    error names the JSON path. ``source`` names the answer in errors."""
    builder = TraceBuilder(source)
    builder.line = 1
    try:
        with _no_gc():
            if read_api_v3(text, builder):
                return builder.build(), builder
    except (TraceReadError, RecursionError, AttributeError, KeyError, TypeError, ValueError, IndexError):
        pass  # read again whole below: the same reader, with the exact JSON path in its message
    return read_with_builder(text, "otlp", name=source)


class JaegerPages:
    """The chaoskit episodes of ``service`` in the last ``since``, read from Jaeger's api_v3 one time window at a
    time (api_v3 has no paging). Each request asks for the traces that started in the window, ``limit`` + 1 of
    them (``query.num_traces``): an answer holding more than ``limit`` is a full window, where Jaeger may have
    left traces out, and is read again in two halves, down to :data:`MIN_WINDOW`, where a window still full is
    refused, never cut; after quiet windows the window widens again. Each answer goes to a streaming reader: an
    episode is handed out as soon as its root span and every attempt it counted are in, so memory holds one
    window's answer, the episodes still open and a 24-byte fingerprint per span read. A trace met again in the
    next window (Jaeger answers whole traces) is the same spans, ignored as copies; any other span of an
    episode already handed out is a :class:`LateSpanError`.

    ``progress`` is called after each window with a line saying how far the read is. Iterate once; an episode
    still missing spans at the end raises a :class:`TraceReadError` (never a pass). After the iteration
    ``windows``, ``answers`` (windows that held traces), ``traces`` (as answered, a trace met twice counted
    twice), ``count`` (episodes) and ``builder`` say what was read.
    """

    def __init__(
        self,
        url: str,
        service: str,
        since: timedelta,
        *,
        limit: int = 100,
        timeout: float = 30.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.url, self.service, self.limit, self.timeout, self.progress = url, service, limit, timeout, progress
        self.base = f"{check_jaeger_url(url).rstrip('/')}/api/v3/traces"
        now = datetime.now(UTC)
        # the window is fixed now: traces exported during the read do not shift it
        self.start, self.end = now - since, now + timedelta(minutes=1)
        self.builder = TraceBuilder(self.base, stream=True)
        self.windows = self.answers = self.traces = self.count = 0

    def __iter__(self) -> Iterator[EpisodeRecord]:
        lo, width = self.start, self.end - self.start
        while lo < self.end:
            hi = min(lo + width, self.end)
            # one more than the limit: an answer holding more than ``limit`` traces says the window is full
            text = _receive(_search(self.base, self.service, lo, hi, self.limit + 1), self.base, self.url, self.timeout)
            n = len(set(_TRACE_ID.findall(text))) if text is not None else 0
            if n > self.limit:
                if hi - lo > MIN_WINDOW:
                    width = (hi - lo) / 2
                    continue
                raise TraceReadError(
                    f"Jaeger holds more than {self.limit} traces of {self.service!r} that started between "
                    f"{_rfc3339(lo)} and {_rfc3339(hi)}; reading only some of them could leave episodes out: raise "
                    "--limit (traces per request)",
                    source=self.base,
                )
            self.windows += 1
            if text is not None:
                self.answers += 1
                self.traces += n
                done = self._read(text, f"{self.base} (window {_rfc3339(lo)} to {_rfc3339(hi)})")
                del text
                self.count += len(done)
                yield from done
            if self.progress is not None:
                self.progress(
                    f"Jaeger: {self.windows} window(s) up to {_rfc3339(hi)[:19]}Z, {self.traces:,} traces, "
                    f"{self.count:,} episodes"
                )
            lo = hi
            if n <= self.limit // 4:
                width *= 2
        with guarded(self.builder, "otlp"):
            rest = self.builder.build()  # an episode still missing spans raises here: never graded, never a pass
        self.count += len(rest)
        yield from rest

    def _read(self, text: str, source: str) -> list[EpisodeRecord]:
        """One window's answer into the streaming reader; the episodes it completed."""
        builder = self.builder
        builder.source, builder.line = source, 1
        try:
            with _no_gc():
                if read_api_v3(text, builder):
                    return builder.take_complete()
        except LateSpanError:
            raise
        except (TraceReadError, RecursionError, AttributeError, KeyError, TypeError, ValueError, IndexError):
            pass  # read again whole below, as fetch_jaeger does: the general reader's message names the JSON path
        # into the same reader: the spans the first try added come again unchanged and count once
        with guarded(builder, "otlp"):
            for _ in text_documents(text, "otlp", builder, 1):
                pass
            return builder.take_complete()


# --- receiving the answer ---------------------------------------------------------------------------------


def _receive(target: str, base: str, url: str, timeout: float) -> str | None:
    """The answer's text, or None for Jaeger's "No traces found"; a TraceReadError for anything else."""
    answer = request(
        target,
        backend="Jaeger",
        source=base,
        timeout=timeout,
        reach_hint=f"is its query service running at {url}?",
        timeout_hint=_TIMEOUT_HINT,
        max_bytes=MAX_ANSWER_BYTES,
        too_large=lambda size: _too_large(base, size),
        deadline=True,
    )
    if not answer.ok:
        error = _http_error(answer, base, url)
        if error is None:
            return None
        raise error
    body = answer.body
    del answer
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceReadError(
            f"Jaeger's answer is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset {exc.start})", source=base
        ) from None
    del body
    if not text.lstrip().startswith(("{", "[")):
        raise TraceReadError(
            f"Jaeger did not answer with JSON (it began {show(text.lstrip()[:60])}); is {url} "
            "Jaeger's query service (port 16686 by default)?",
            source=base,
        )
    if len(text) <= ERROR_BODY and (_error_message(text) or "").lower().startswith(_NO_TRACES):
        return None  # the same "No traces found" error object, with status 200 (older gateways)
    return text


def _http_error(answer: Answer, base: str, url: str) -> TraceReadError | None:
    """None for api_v3's "No traces found" (a 404 holding Jaeger's error object), else the error to raise."""
    text = answer.body.decode("utf-8", "replace")
    message = _error_message(text)
    if answer.status == 404 and message is not None:
        # Jaeger's own 404: {"error": {"httpCode": 404, "message": "No traces found"}} (or, from some storage
        # backends, "trace not found"): the query ran and matched nothing
        return None
    if answer.status == 404:
        return TraceReadError(
            f"Jaeger answered HTTP 404 ({one_line(text) or 'no body'}): {url} does not serve api_v3 at "
            "/api/v3/traces; give the URL of Jaeger's query service (its UI, port 16686 by default), with its "
            "base path if it has one (such as http://host:16686/jaeger)",
            source=base,
        )
    if 300 <= answer.status < 400:
        where = answer.headers.get("Location", "elsewhere")
        return TraceReadError(f"Jaeger answered HTTP {answer.status}, redirecting to {show(where)}", source=base)
    detail = message if message is not None else one_line(text)
    hint = " (Jaeger rejected the query)" if answer.status == 400 else ""
    return TraceReadError(f"Jaeger answered HTTP {answer.status}{hint}: {detail}", source=base)


def _error_message(text: str) -> str | None:
    """The message of api_v3's error object ``{"error": {"httpCode": ..., "message": ...}}``, else None."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    err = doc.get("error") if isinstance(doc, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    return one_line(message) if isinstance(message, str) else None


def _too_large(base: str, size: str) -> TraceReadError:
    return TraceReadError(
        f"Jaeger's answer is {size}, above chaoskit's limit of {MAX_ANSWER_BYTES:,} bytes; ask for fewer "
        "traces with --limit or a shorter --since",
        source=base,
    )


def _search(base: str, service: str, lo: datetime, hi: datetime, limit: int) -> str:
    """The api_v3 search for the traces of ``service`` that started between ``lo`` and ``hi``, at most ``limit``."""
    window = {"query.start_time_min": _rfc3339(lo), "query.start_time_max": _rfc3339(hi)}
    return f"{base}?{urllib.parse.urlencode({'query.service_name': service, **window, 'query.num_traces': limit})}"


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
