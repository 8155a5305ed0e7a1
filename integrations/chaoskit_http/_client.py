"""The upstream side: one keep-alive connection pool to the proxy's one upstream, on httpcore (httpx's transport).

The destination (scheme, host, port, base path) is fixed when the proxy starts: a request only ever adds its
path and query to the base. httpcore sends the headers it is given and no others, so what reaches the upstream
is the client's own request, minus the hop-by-hop headers, with the upstream's ``Host``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpcore

from chaoskit import ChaoskitError

__all__ = ["CONNECT_FAILED", "TIMED_OUT", "Upstream", "reason_of"]

#: the upstream was never reached: the request did not run there
CONNECT_FAILED = (httpcore.ConnectError, httpcore.ConnectTimeout, httpcore.PoolTimeout)
#: the upstream did not answer in time
TIMED_OUT = httpcore.TimeoutException


class Upstream:
    """Where the proxy forwards: ``--upstream`` parsed and checked once, and the pool of connections to it."""

    def __init__(self, url: str, *, timeout: float | None = 300.0) -> None:
        allowed = "expected an http:// or https:// URL with a host, e.g. http://127.0.0.1:9000"
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ChaoskitError(f"--upstream {url!r}: not a URL ({exc}); {allowed}") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ChaoskitError(f"--upstream {url!r}: {allowed}")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ChaoskitError(f"--upstream {url!r}: give the base URL only (no query, fragment or user)")
        self.url = url
        self.scheme = parts.scheme.encode()
        self.host = parts.hostname.encode("idna")
        self.port = port or (443 if parts.scheme == "https" else 80)
        #: the ``Host`` header the upstream gets (never the client's)
        self.netloc = parts.netloc
        self.base = parts.path.rstrip("/").encode()
        self.timeout = {"connect": 10.0, "read": timeout, "write": timeout, "pool": timeout}
        self._pool: httpcore.AsyncConnectionPool | None = None

    def pool(self) -> httpcore.AsyncConnectionPool:
        """The connection pool (made on first use, in the server's event loop)."""
        if self._pool is None:
            self._pool = httpcore.AsyncConnectionPool(max_connections=256, max_keepalive_connections=64)
        return self._pool

    async def send(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], content: bytes | AsyncIterator[bytes]
    ) -> httpcore.Response:
        """Send one request to ``base + target``; the response's body is still to be streamed (then closed)."""
        url = httpcore.URL(scheme=self.scheme, host=self.host, port=self.port, target=self.base + target)
        request = httpcore.Request(method, url, headers=headers, content=content, extensions={"timeout": self.timeout})
        return await self.pool().handle_async_request(request)

    async def aclose(self) -> None:
        """Close every connection to the upstream."""
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None


def reason_of(response: httpcore.Response) -> str:
    """The reason phrase the upstream sent, if any."""
    phrase: Any = response.extensions.get("reason_phrase", b"")
    return phrase.decode("latin-1") if isinstance(phrase, bytes) else str(phrase or "")
