"""The one HTTP client of the trace backends (Jaeger's api_v3, Phoenix's REST API), on requests.

Each failure is a TraceReadError naming the URL and what went wrong. It is built on ``requests``: already in
every install (opentelemetry-exporter-otlp-proto-http needs it), well kept, and its streamed body
(``raw.read1``) lets a large answer be received in chunks against a size limit and a deadline. httpx would be a
new dependency of the core (it comes only with langchain-core). There are no retries (there were none with
urllib): a backend that fails is reported, never asked again behind the user's back. The body is asked for
uncompressed, as urllib asked for it.
"""

from __future__ import annotations

import os
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import requests
import urllib3.exceptions

from chaoskit._errors import ChaoskitError
from chaoskit.traces._records import TraceReadError, show

__all__ = ["ERROR_BODY", "Answer", "check_http_url", "one_line", "request"]

_CHUNK = 1 << 20
#: the most of an error answer's body that is read, for its message
ERROR_BODY = 64 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """A backend's answer: its status, headers and body (at most :data:`ERROR_BODY` bytes of a non-2xx body)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def ok(self) -> bool:
        """A 2xx answer (urllib, before, raised for every other status, redirects it did not follow included)."""
        return 200 <= self.status < 300


def request(
    url: str,
    *,
    backend: str,
    source: str,
    timeout: float,
    reach_hint: str,
    timeout_hint: str = "",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
    max_bytes: int | None = None,
    too_large: Callable[[str], TraceReadError] | None = None,
    deadline: bool = False,
) -> Answer:
    """GET ``url`` (POST ``data`` when given) from ``backend`` ("Jaeger", "Phoenix") within ``timeout`` seconds
    per wait (with ``deadline``, for the whole answer too). Any status is returned; a connection refused, a
    timeout, a body cut short, a body over ``max_bytes`` (the message from ``too_large``) or an encoding not
    asked for is a TraceReadError whose source is ``source`` and whose message says what to check
    (``reach_hint`` for a backend that cannot be reached, ``timeout_hint`` after a timeout)."""
    sent = {"Accept": "application/json", "Accept-Encoding": "identity", **(headers or {})}
    if data is not None:
        sent.setdefault("Content-Type", "application/json")
    stop = time.monotonic() + timeout if deadline else None

    def fail(message: str) -> TraceReadError:
        return TraceReadError(message, source=source)

    def late(what: str) -> TraceReadError:
        return fail(f"{backend} {what} {timeout:g} s{timeout_hint}")

    big = too_large or (lambda size: fail(f"{backend}'s answer is {size}, above chaoskit's limit"))

    try:
        resp = requests.request(
            "POST" if data is not None else "GET",
            url,
            data=data,
            headers=sent,
            timeout=timeout,
            stream=True,
            auth=_headers_only,
            verify=_trusted(),
        )
    except requests.TooManyRedirects as exc:
        if exc.response is None:
            raise fail(f"{backend} redirected the request too many times") from None
        resp = exc.response  # reported by the caller as the redirect it is
    except requests.Timeout:
        raise late("did not answer within") from None
    except requests.RequestException as exc:
        raise fail(f"cannot reach {backend} ({one_line(_reason(exc))}); {reach_hint}") from None
    with resp:
        if not 200 <= resp.status_code < 300:
            return Answer(resp.status_code, resp.headers, _error_body(resp))
        encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise fail(f"{backend} answered with Content-Encoding {show(encoding)}, which chaoskit did not ask for")
        declared = resp.headers.get("Content-Length")
        size = int(declared) if declared is not None and declared.strip().isdigit() else None
        if max_bytes is not None and size is not None and size > max_bytes:
            raise big(f"{size:,} bytes")
        body = _body(resp, backend, size, max_bytes, stop, fail, late, big)
    if size is not None and len(body) < size:
        raise fail(f"{backend}'s answer was cut short: {len(body):,} of the {size:,} bytes it announced arrived")
    return Answer(resp.status_code, resp.headers, bytes(body))


def _body(
    resp: requests.Response,
    backend: str,
    size: int | None,
    max_bytes: int | None,
    stop: float | None,
    fail: Callable[[str], TraceReadError],
    late: Callable[[str], TraceReadError],
    too_large: Callable[[str], TraceReadError],
) -> bytearray:
    """The body, received in chunks, within ``max_bytes`` and by ``stop``; short when the answer was cut short
    of its announced ``size`` (the caller says so)."""
    raw = resp.raw
    read = getattr(raw, "read1", raw.read)  # (urllib3 < 2.1 has no read1: its read waits for a whole chunk)
    body = bytearray()
    while True:
        try:
            chunk = read(_CHUNK)
        except urllib3.exceptions.ReadTimeoutError:
            raise late(f"stopped sending its answer after {len(body):,} bytes for") from None
        except (urllib3.exceptions.ProtocolError, OSError) as exc:
            if size is not None and len(body) < size and "IncompleteRead" in repr(exc):
                return body
            raise fail(
                f"the connection to {backend} broke after {len(body):,} bytes of its answer ({one_line(_reason(exc))})"
            ) from None
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            raise fail(
                f"{backend}'s answer was cut short or malformed ({type(exc).__name__}: {one_line(exc)})"
            ) from None
        if not chunk:
            return body
        body += chunk
        if max_bytes is not None and len(body) > max_bytes:
            raise too_large(f"more than {max_bytes:,} bytes")
        if stop is not None and time.monotonic() > stop:
            raise late(f"had sent only {len(body):,} bytes of its answer after")


def check_http_url(url: str, flag: str, what: str, example: str) -> str:
    """``url`` when it is an http(s) URL with a host, a valid port and no query; else a usage error naming
    ``flag``, what it expects (``what``, such as ``example``) and what it got."""
    problem = f"{flag} expects the http:// or https:// URL of {what}, such as {example}, got {show(url)}"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except (ValueError, AttributeError, TypeError) as exc:
        raise ChaoskitError(f"{problem} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ChaoskitError(problem)
    return url


def _trusted() -> bool | str:
    """The certificates an HTTPS backend is checked against: the system's (``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` honoured), as urllib checked them, not requests' own bundle, so a company's private CA that
    the machine trusts keeps working; ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE``, when set, name the bundle."""
    if os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE"):
        return True  # requests reads them itself
    paths = ssl.get_default_verify_paths()
    for where in (paths.cafile, paths.capath):
        if where and os.path.exists(where):
            return where
    return True


def _headers_only(prepared: requests.PreparedRequest) -> requests.PreparedRequest:
    """An auth that adds nothing: without one, requests would take credentials from ~/.netrc and replace the
    headers given here (Phoenix's bearer token), which urllib never did."""
    return prepared


def _error_body(resp: requests.Response) -> bytes:
    try:
        return bytes(resp.raw.read(ERROR_BODY))
    except (urllib3.exceptions.HTTPError, OSError):
        return b""


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failed request (``[Errno 111] Connection refused``), not requests' wrappers."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    last = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        last = cause
        inner = getattr(cause, "reason", None)
        if not isinstance(inner, BaseException):
            inner = next((a for a in cause.args if isinstance(a, BaseException)), None)
        cause = inner or cause.__cause__ or cause.__context__
    return str(last) or type(last).__name__


def one_line(text: object, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
