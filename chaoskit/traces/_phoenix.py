"""Read traces from a running Arize Phoenix: page through its REST API and hand the spans to the OTLP reader.

``GET /v1/projects/{project}/spans/otlpv1`` answers ``{"data": [span, ...], "next_cursor": ...}`` with each span
in OTLP's shape but with snake_case keys (``span_id``, ``start_time_unix_nano``, ``string_value``). The spans
are renamed to OTLP-JSON's camelCase, wrapped in one ``{"resourceSpans": ...}`` document and read by the same
reader as a trace file, so a trace graded from Phoenix gets the verdicts it gets from the exported file.
Phoenix keeps times at microsecond precision and sends them as ``int(seconds * 1e9)``, which a float can miss
by a few hundred nanoseconds: they are rounded back to the microsecond. Every failure is a
:class:`TraceReadError`: a trace that cannot be read in full is never graded, so it is never a pass.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.traces._build import TraceBuilder, _episode_order
from chaoskit.traces._decode import dispatch
from chaoskit.traces._http import Answer, check_http_url, one_line, request
from chaoskit.traces._readers import guarded, nothing_to_grade
from chaoskit.traces._records import EpisodeRecord, TraceReadError, show
from chaoskit.traces._trace import Trace

__all__ = ["DEFAULT_LIMIT", "PhoenixPages", "annotate_spans", "check_phoenix_url", "fetch_phoenix", "phoenix_to_otlp"]

#: the most spans ``fetch_phoenix`` reads unless told otherwise
DEFAULT_LIMIT = 10_000
#: spans per request: Phoenix's own maximum
_PAGE = 1000
_OTLPV1 = "/v1/projects/{project}/spans/otlpv1"


def check_phoenix_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host (and a valid port); a usage error naming the option if not."""
    return check_http_url(url, "--from-phoenix", "Phoenix (its UI and REST port)", "http://localhost:6006")


def fetch_phoenix(
    url: str,
    project: str,
    *,
    since: timedelta | datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    timeout: float = 30.0,
) -> Trace:
    """The chaoskit episodes in Phoenix project ``project``, read over Phoenix's REST API at ``url``.

    ``since`` keeps the spans that started in the last ``timedelta`` (or after a ``datetime``); None reads them
    all. At most ``limit`` spans are read: a project holding more (in that window) is refused rather than cut
    through the middle of an episode; raise ``limit`` or narrow ``since``. ``timeout`` bounds each request, in
    seconds. ``PHOENIX_API_KEY``, when set, is sent as a bearer token (Phoenix with authentication on).
    :class:`PhoenixPages` reads the same episodes one page at a time, with no limit.

    Raises :class:`TraceReadError` when Phoenix cannot be reached or does not answer as Phoenix does, when the
    project does not exist (the message lists those that do), when it holds nothing to grade, and when a
    chaoskit span cannot be graded (as for a trace file).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ChaoskitError(f"limit must be a whole number >= 1, got {show(limit)}")
    pages = PhoenixPages(url, project, since=since, limit=limit, timeout=timeout)
    return Trace(sorted(pages, key=_episode_order))  # in start-time order, as a whole read gives them


class PhoenixPages:
    """The chaoskit episodes of a Phoenix project, read one page at a time (``/spans/otlpv1``, 1000 spans a
    request, following ``next_cursor``) into a streaming reader: an episode is handed out as soon as its root
    span and every attempt it counted are in, whichever pages they came in, so memory holds one page, the
    episodes still open and a 24-byte fingerprint per span read, however long the window. The window is fixed
    when the read starts (``start_time`` from ``since``, ``end_time`` now): spans exported meanwhile do not
    shift the pages.

    ``limit`` (None: no limit) refuses a project holding more spans, as :func:`fetch_phoenix` does; ``progress``
    is called after each page with a line saying how far the read is. Iterate once; an episode still missing
    spans at the end, a cursor that does not advance or a page that cannot be read raises a
    :class:`TraceReadError` (never a pass). After the iteration ``pages``, ``spans`` and ``count`` (episodes)
    say what was read.
    """

    def __init__(
        self,
        url: str,
        project: str,
        *,
        since: timedelta | datetime | None = None,
        limit: int | None = None,
        timeout: float = 30.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.base = check_phoenix_url(url).rstrip("/")
        if not isinstance(project, str) or not project.strip():
            raise ChaoskitError(f"expected the name of a Phoenix project, got {show(project)}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ChaoskitError(f"limit must be a whole number >= 1, got {show(limit)}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
            raise ChaoskitError(f"timeout must be a finite number of seconds > 0, got {show(timeout)}")
        self.project, self.limit, self.timeout, self.progress = project, limit, timeout, progress
        self.endpoint = self.base + _OTLPV1.format(project=urllib.parse.quote(project, safe=""))
        self.query: dict[str, str | int] = {"end_time": datetime.now(UTC).isoformat()}
        if since is not None:
            self.query["start_time"] = _since(since)
        self.pages = self.spans = self.count = 0

    def __iter__(self) -> Iterator[EpisodeRecord]:
        name = f"{self.base} (project {self.project})"
        builder = TraceBuilder(name, stream=True)
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            data, cursor = self._page(cursor)
            if data:
                with guarded(builder, "otlp"):
                    builder.line = self.pages
                    dispatch(phoenix_to_otlp(data), "otlp", builder)
                    done = builder.take_complete()
                del data
                self.count += len(done)
                yield from done
            if self.progress is not None:
                self.progress(f"Phoenix: {self.pages} page(s), {self.spans:,} spans read, {self.count:,} episodes")
            if cursor is None:
                break
            if cursor in seen:
                raise TraceReadError(
                    f"Phoenix's paging does not advance (next_cursor {show(cursor)} came back after "
                    f"{self.spans} spans); is this Phoenix's REST API?",
                    source=self.endpoint,
                )
            seen.add(cursor)
        if not self.spans:
            window = "" if "start_time" not in self.query else f" that started since {self.query['start_time']}"
            raise TraceReadError(
                f"nothing to grade: Phoenix project {self.project!r} has no spans{window}", source=self.endpoint
            )
        with guarded(builder, "otlp"):
            rest = builder.build()  # an episode still missing spans raises here: never graded, never a pass
        self.count += len(rest)
        yield from rest
        if not self.count:
            raise nothing_to_grade(name, builder)

    def _page(self, cursor: str | None) -> tuple[list[Any], str | None]:
        """The next page's spans and the cursor after them; the limit and a page that does not advance refused."""
        left = _PAGE if self.limit is None else min(_PAGE, self.limit - self.spans + 1)
        page = {**self.query, "limit": left}
        if cursor is not None:
            page["cursor"] = cursor
        answer = _get_json(f"{self.endpoint}?{urllib.parse.urlencode(page)}", self.base, self.project, self.timeout)
        data, after = _page(answer, self.endpoint)
        self.pages += 1
        self.spans += len(data)
        if self.limit is not None and self.spans > self.limit:
            window = "" if "start_time" not in self.query else " in the time asked for"
            raise TraceReadError(
                f"Phoenix project {self.project!r} holds more than {self.limit} spans{window}; reading only some of "
                "them could cut an episode in half: raise the limit (--limit) or narrow the time (--since)",
                source=self.endpoint,
            )
        if after is not None and not data:
            raise TraceReadError(
                f"Phoenix's paging does not advance (next_cursor {show(after)} after {len(data)} spans); "
                "is this Phoenix's REST API?",
                source=self.endpoint,
            )
        return data, after


def annotate_spans(url: str, annotations: list[dict[str, Any]], *, timeout: float = 30.0) -> int:
    """Send span ``annotations`` (``SpanAnnotationData``: ``span_id``, ``name``, ``annotator_kind``, ``result``,
    ``metadata``, ``identifier``) to Phoenix's public REST API, ``POST /v1/span_annotations?sync=true``, so that
    they appear in its evaluation columns; how many Phoenix stored. Phoenix refuses the whole request (HTTP 404,
    a TraceReadError naming the span ids) when a span is not in its store."""
    base = check_phoenix_url(url).rstrip("/")
    sent = 0
    for i in range(0, len(annotations), _PAGE):  # Phoenix takes at most 1000 span ids per request
        body = json.dumps({"data": annotations[i : i + _PAGE]}).encode()
        answer = _get_json(f"{base}/v1/span_annotations?sync=true", base, None, timeout, data=body)
        got = answer.get("data") if isinstance(answer, Mapping) else None
        if not isinstance(got, list):
            raise TraceReadError(f'expected {{"data": [...]}} in Phoenix\'s answer, got {show(answer)}', source=base)
        sent += len(got)
    return sent


def phoenix_to_otlp(spans: list[Any]) -> dict[str, Any]:
    """Spans as ``/spans/otlpv1`` answers them, as one OTLP-JSON document (camelCase keys, µs-exact times)."""
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [_camel(s) for s in spans]}]}]}


_TIMES = frozenset({"startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"})


def _camel(v: Any) -> Any:
    """snake_case keys to camelCase, recursively, leaving out nulls (OTLP-JSON omits unset fields)."""
    if isinstance(v, list):
        return [_camel(x) for x in v]
    if not isinstance(v, Mapping):
        return v
    out: dict[str, Any] = {}
    for key, x in v.items():
        if x is None:
            continue
        if isinstance(key, str) and "_" in key:
            head, *rest = key.split("_")
            key = head + "".join(p[:1].upper() + p[1:] for p in rest)
        out[key] = _micros(x) if key in _TIMES else _camel(x)
    return out


def _micros(v: Any) -> Any:
    """A time in nanoseconds rounded to the microsecond, kept as given when it is not a whole number."""
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 20:
        return str((int(v) + 500) // 1000 * 1000)
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return (v + 500) // 1000 * 1000
    return v


def _since(since: timedelta | datetime) -> str:
    if isinstance(since, timedelta):
        start = datetime.now(UTC) - since
    elif isinstance(since, datetime):
        start = since if since.tzinfo is not None else since.astimezone()
    else:
        raise ChaoskitError(f"since must be a timedelta or a datetime, got {show(since)}")
    return start.astimezone(UTC).isoformat()


def _page(answer: Any, endpoint: str) -> tuple[list[Any], str | None]:
    if not isinstance(answer, Mapping) or not isinstance(answer.get("data"), list):
        keys = ", ".join(show(k, 40) for k in list(answer)[:5]) if isinstance(answer, Mapping) else None
        got = f"an object with keys {keys}" if keys else f"{show(answer, 80)}"
        raise TraceReadError(
            f'expected Phoenix\'s answer {{"data": [span, ...], "next_cursor": ...}}, got {got}', source=endpoint
        )
    cursor = answer.get("next_cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise TraceReadError(f"expected next_cursor to be a string or null, got {show(cursor)}", source=endpoint)
    return answer["data"], cursor or None


def _get_json(url: str, base: str, project: str | None, timeout: float, data: bytes | None = None) -> Any:
    """GET ``url`` (POST ``data``, a JSON body, when given) and parse the JSON answer; each way it can fail is a
    TraceReadError that says what to do."""
    source = url.split("?", 1)[0]
    key = os.environ.get("PHOENIX_API_KEY")
    answer = request(
        url,
        backend="Phoenix",
        source=source,
        timeout=timeout,
        reach_hint=f"is it running at {base} (phoenix serve; PHOENIX_PORT, 6006 by default)?",
        headers={"Authorization": f"Bearer {key}"} if key else None,
        data=data,
    )
    if not answer.ok:
        raise _http_error(answer, base, project, source, timeout, data is not None)
    text = answer.body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise TraceReadError(
            f"Phoenix did not answer with JSON (it began {show(text.lstrip()[:60])}); is {base} Phoenix's "
            "HTTP port (PHOENIX_PORT, 6006 by default; not its gRPC port)?",
            source=source,
        ) from None


def _http_error(
    answer: Answer, base: str, project: str | None, source: str, timeout: float, posted: bool
) -> TraceReadError:
    detail = _detail(answer.body)
    if answer.status == 404 and project is not None and "project" in detail.lower():
        return TraceReadError(
            f"Phoenix has no project {project!r}; its projects: {_projects(base, timeout)}", source=source
        )
    if answer.status == 404 and posted:  # span_annotations: a span Phoenix does not hold
        return TraceReadError(f"Phoenix answered HTTP 404: {detail}", source=source)
    if answer.status == 404:
        return TraceReadError(
            f"Phoenix answered HTTP 404 ({detail}): is {base} Phoenix, version 11 or later (the REST "
            "endpoint /spans/otlpv1)?",
            source=source,
        )
    if answer.status in (401, 403):
        return TraceReadError(
            f"Phoenix refused the request (HTTP {answer.status}: {detail}); with authentication on, set "
            "PHOENIX_API_KEY to an API key",
            source=source,
        )
    return TraceReadError(f"Phoenix answered HTTP {answer.status}: {detail}", source=source)


def _projects(base: str, timeout: float) -> str:
    """The names of Phoenix's projects, for the message about an unknown one."""
    names: list[str] = []
    cursor: str | None = None
    try:
        for _ in range(20):  # 20 pages of 100: enough to list in a message
            query = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            data, cursor = _page(
                _get_json(f"{base}/v1/projects?{urllib.parse.urlencode(query)}", base, None, timeout), ""
            )
            names += [str(p.get("name")) for p in data if isinstance(p, Mapping)]
            if cursor is None:
                break
    except TraceReadError as exc:
        return f"(could not list them: {exc.reason})"
    return ", ".join(repr(n) for n in names) if names else "none"


def _detail(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return one_line(text) or "no message"
    if isinstance(doc, Mapping) and isinstance(doc.get("detail"), str):
        return one_line(doc["detail"])
    return one_line(text)
