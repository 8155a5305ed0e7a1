"""Read traces from a running Jaeger: query its api_v3 over HTTP and hand the answer to the OTLP reader."""

from __future__ import annotations

import http.client
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta

from chaoskit._errors import ChaoskitError
from chaoskit.grading._build import TraceBuilder
from chaoskit.grading._model import EpisodeRecord, TraceReadError, show
from chaoskit.grading._readers import read_with_builder

__all__ = ["check_jaeger_url", "fetch_jaeger"]


def check_jaeger_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host (and a valid port); a usage error naming the option if not."""
    problem = (
        f"--from-jaeger expects the http:// or https:// URL of Jaeger's query service, such as "
        f"http://localhost:16686, got {show(url)}"
    )
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise ChaoskitError(f"{problem} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ChaoskitError(problem)
    return url


def fetch_jaeger(
    url: str, service: str, since: timedelta, *, limit: int = 100, timeout: float = 30.0
) -> tuple[list[EpisodeRecord], TraceBuilder] | None:
    """Query Jaeger's api_v3 ``GET /api/v3/traces`` for ``service``: the episodes and how they were read (for a
    "nothing to grade" message), or None when Jaeger found no traces. Every failure is a TraceReadError."""
    now = datetime.now(UTC)
    query = urllib.parse.urlencode(
        {
            "query.service_name": service,
            "query.start_time_min": _rfc3339(now - since),
            "query.start_time_max": _rfc3339(now + timedelta(minutes=1)),
            "query.search_depth": limit,
        }
    )
    base = f"{check_jaeger_url(url).rstrip('/')}/api/v3/traces"
    request = urllib.request.Request(f"{base}?{query}", headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            body = resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        if exc.code == 404:
            return None  # api_v3 answers 404 {"error": {"message": "No traces found"}}
        raise TraceReadError(f"Jaeger answered HTTP {exc.code}: {_one_line(text)}", source=base) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TraceReadError(
            f"cannot reach Jaeger ({_one_line(str(reason))}); is its query service running at {url}?", source=base
        ) from None
    except (http.client.HTTPException, ValueError) as exc:
        raise TraceReadError(
            f"Jaeger's answer was cut short or malformed ({type(exc).__name__}: {_one_line(str(exc))})", source=base
        ) from None
    if not body.lstrip().startswith(("{", "[")):
        raise TraceReadError(
            f"Jaeger did not answer with JSON (it began {show(body.lstrip()[:60])}); is {url} "
            "Jaeger's query service (port 16686 by default)?",
            source=base,
        )
    return read_with_builder(body, "otlp", name=base)


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
