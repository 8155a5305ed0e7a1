"""What crosses the wire: headers forwarded or dropped, secrets redacted, request bodies read within a bound.

Credentials go to the upstream unchanged; only what the proxy writes down (spans, log lines) is redacted.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

__all__ = [
    "RECORD_BYTES",
    "BodyPrefix",
    "body_value",
    "forward_headers",
    "idempotency_key",
    "is_secret_name",
    "query_args",
    "read_prefix",
    "redact_headers",
    "redact_query",
    "response_headers",
]

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
REDACTED = "[REDACTED]"
#: the most of a request body read before the call is decided (recorded as its arguments); the rest streams
RECORD_BYTES = 64 * 1024

# hop-by-hop headers (RFC 9110 7.6.1) and the ones a proxy sets itself: never forwarded as they came
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
_IDEMPOTENCY_HEADERS = (b"idempotency-key", b"x-idempotency-key")
# whole words of a header or parameter name that mark a credential (Authorization, Cookie, X-Api-Key, ...)
_SECRET_WORDS = frozenset(
    {
        "authorization",
        "auth",
        "cookie",
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "signature",
        "sig",
        "session",
        "credential",
        "credentials",
        "jwt",
        "bearer",
    }
)
_WORDS = re.compile(r"[a-z0-9]+")


def is_secret_name(name: str) -> bool:
    """Whether a header or query parameter named ``name`` carries a credential (``Idempotency-Key`` does not)."""
    low = name.lower()
    words = _WORDS.findall(low)
    if "idempotency" in words:
        return False
    joined = "".join(words)
    return (
        any(w in _SECRET_WORDS for w in words)
        or "apikey" in joined
        or "accesskey" in joined
        or "session" in joined
        or (words[-1:] == ["key"] and len(words) > 1)
        or joined in {"key", "code"}
    )


def redact_headers(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Request or response headers for a log line, each credential replaced by ``[REDACTED]``."""
    out: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        value = REDACTED if is_secret_name(name) else raw_value.decode("latin-1")
        out[name] = value if name not in out else f"{out[name]}, {value}"
    return out


def redact_query(query: str) -> str:
    """A query string for a log line, the values of credential-looking parameters replaced."""
    if not query:
        return ""
    parts = parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{k}={REDACTED if is_secret_name(k) else v}" for k, v in parts)


def query_args(query: str) -> dict[str, Any]:
    """A query string as arguments: one value per name, a list where a name repeats."""
    out: dict[str, Any] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        if k in out:
            prev = out[k]
            out[k] = [*prev, v] if isinstance(prev, list) else [prev, v]
        else:
            out[k] = v
    return out


def idempotency_key(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The request's ``Idempotency-Key`` (or ``X-Idempotency-Key``) header, if it has one."""
    for name, value in headers:
        if name.lower() in _IDEMPOTENCY_HEADERS:
            return value.decode("latin-1")
    return None


def forward_headers(
    headers: Iterable[tuple[bytes, bytes]], host: str, *, length: int | None
) -> list[tuple[bytes, bytes]]:
    """The request headers sent upstream: all of them unchanged (credentials too), hop-by-hop ones dropped,
    ``Host`` the upstream's. ``length`` is the body's size when it was read whole; None for a body that
    streams (then sent with the client's ``Content-Length``, or chunked)."""
    out: list[tuple[bytes, bytes]] = [(b"host", host.encode("latin-1"))]
    declared: bytes | None = None
    for name, value in headers:
        low = name.lower()
        if low == b"content-length":
            declared = value
        elif low.decode("latin-1") not in _HOP:
            out.append((name, value))
    if length is None:
        out.append((b"content-length", declared) if declared is not None else (b"transfer-encoding", b"chunked"))
    elif length or declared is not None:
        out.append((b"content-length", str(length).encode()))
    return out


def response_headers(headers: Iterable[tuple[bytes, bytes]], *, rewritten: bool) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers sent to the client: hop-by-hop ones dropped; for a body the proxy
    rewrote, the length and encoding too (it sends the decoded body, with its own length)."""
    drop = {b"content-length", b"content-encoding"} if rewritten else set()
    out = []
    for name, value in headers:
        low = name.lower()
        if low.decode("latin-1") in _HOP or low in drop:
            continue
        out.append((name, value))
    return out


class BodyPrefix:
    """The start of a request body (at most :data:`RECORD_BYTES`), and whether more of it is still to come."""

    __slots__ = ("data", "more")

    def __init__(self, data: bytes, more: bool) -> None:
        self.data = data
        self.more = more


async def read_prefix(receive: Receive, limit: int = RECORD_BYTES) -> BodyPrefix | None:
    """Read the request body up to ``limit`` bytes; None when the client went away before sending it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if chunk:
            chunks.append(chunk)
            size += len(chunk)
        more = bool(message.get("more_body", False))
        if not more or size >= limit:
            return BodyPrefix(b"".join(chunks), more)


def body_value(prefix: BodyPrefix, content_type: str, declared: int | None) -> Any:
    """A request body as recorded arguments: JSON parsed, a form as a mapping, text as text; a binary or a
    body longer than what was read is described by its size and a digest of what was read."""
    data = prefix.data
    if not data and not prefix.more:
        return None
    if not prefix.more:
        ctype = content_type.split(";", 1)[0].strip().lower()
        if ctype == "application/json" or ctype.endswith("+json"):
            try:
                return json.loads(data)
            except ValueError:
                pass
        if ctype == "application/x-www-form-urlencoded":
            return query_args(data.decode("utf-8", "replace"))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    out: dict[str, Any] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:32]}
    if prefix.more:
        out["more"] = True
        if declared is not None:
            out["content_length"] = declared
    return out


def json_error(status: int, message: str) -> bytes:
    """The JSON body of an error response the proxy makes: ``{"error": {"status": ..., "message": ...}}``."""
    return json.dumps({"error": {"status": status, "message": message}}).encode()


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), if present."""
    for k, v in headers:
        if k.lower() == name:
            return v.decode("latin-1")
    return None


def seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header's delay in seconds (the delta-seconds form only), else None."""
    if value is None:
        return None
    try:
        out = float(value.strip())
    except ValueError:
        return None
    return out if out >= 0 else None
