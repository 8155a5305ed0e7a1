"""The answers the proxy makes itself (for injected faults, or instead of the upstream), and bounded body reads.

An injected fault is answered as real HTTP: its status, ``Retry-After`` where it has one, and a JSON body
``{"error": {"status": ..., "message": ...}}`` with the message an in-process tool would have raised.
"""

from __future__ import annotations

import http
import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

from chaoskit import ToolHTTPError

from . import _wire as wire
from ._client import Response

__all__ = ["JSON", "chain", "decoded", "encode", "fault_response", "read_at_most", "reason", "respond", "to_bytes"]

#: the content type header of the proxy's own JSON answers
JSON = [(b"content-type", b"application/json")]


def reason(status: int) -> str:
    """The standard reason phrase of ``status``."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown Status"


def fault_response(exc: BaseException) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The HTTP answer for an injected exception: status, headers and a JSON body with the message."""
    headers = list(JSON)
    if isinstance(exc, ToolHTTPError):
        status = exc.status
        if exc.retry_after is not None:
            headers.append((b"retry-after", f"{exc.retry_after:g}".encode()))
    elif isinstance(exc, TimeoutError):
        status = 504
    elif isinstance(exc, PermissionError):
        status = 403
    elif isinstance(exc, FileNotFoundError):
        status = 404
    else:
        status = 502
    return status, headers, wire.json_error(status, str(exc))


async def respond(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Send one whole response."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def to_bytes(value: str | bytes) -> bytes:
    """Text as UTF-8, bytes as they are."""
    return value.encode() if isinstance(value, str) else value


def encode(value: Any) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A value the proxy answers with itself: text as text, bytes as they are, anything else as JSON."""
    if isinstance(value, str):
        return value.encode(), [(b"content-type", b"text/plain; charset=utf-8")]
    if isinstance(value, bytes):
        return value, [(b"content-type", b"application/octet-stream")]
    return json.dumps(value, default=str).encode(), list(JSON)


async def read_at_most(resp: Response, limit: int) -> tuple[bytes, AsyncIterator[bytes] | None]:
    """``(body, None)``: the raw response body, when it is at most ``limit`` bytes. Else ``(b"", rest)``: the
    body still to stream, starting with what was read (never more than ``limit`` bytes held)."""
    declared = wire.header(resp.headers, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return b"", resp.aiter_stream()
    chunks: list[bytes] = []
    size = 0
    source = resp.aiter_stream()
    async for chunk in source:
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            return b"", chain(chunks, source)
    return b"".join(chunks), None


async def chain(first: list[bytes], rest: AsyncIterator[bytes] | None) -> AsyncIterator[bytes]:
    """The chunks already read, then the rest of the stream."""
    for chunk in first:
        yield chunk
    if rest is not None:
        async for chunk in rest:
            yield chunk


def decoded(raw: bytes, content_encoding: str | None, limit: int) -> bytes | None:
    """``raw`` decoded from its ``Content-Encoding``; None when that encoding is unknown, the body does not
    decode, or it decodes to more than ``limit`` bytes."""
    coding = (content_encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return raw
    if coding not in ("gzip", "x-gzip", "deflate"):
        return None
    wbits = 16 + zlib.MAX_WBITS if coding != "deflate" else zlib.MAX_WBITS
    try:
        inflater = zlib.decompressobj(wbits)
        out = inflater.decompress(raw, limit + 1)
    except zlib.error:
        return None
    return out if len(out) <= limit and not inflater.unconsumed_tail else None
