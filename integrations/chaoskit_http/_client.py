"""The upstream side: a keep-alive pool of HTTP/1.1 connections to the proxy's one upstream, on asyncio and httptools.

The destination (scheme, host, port, base path) is fixed when the proxy starts: a request only ever adds its
path and query to the base. The headers sent are the ones given and no others, so what reaches the upstream is
the client's own request, minus the hop-by-hop headers, with the upstream's ``Host``.

Why not httpcore: its pool on anyio costs about 0.55 ms of CPU a call, most of the proxy's cost; this client,
an ``asyncio.Protocol`` feeding llhttp (httptools, the parser uvicorn uses), costs about 0.04 ms. Response
bodies stream with back-pressure: reading pauses while more than :data:`HIGH_WATER` bytes wait.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import AsyncIterator
from typing import cast
from urllib.parse import urlsplit

import httptools

from chaoskit import ChaoskitError

__all__ = [
    "CONNECT_FAILED",
    "TIMED_OUT",
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "TimeoutException",
    "Upstream",
    "WriteTimeout",
    "reason_of",
]

#: response body bytes held unread before the connection stops reading
HIGH_WATER = 256 * 1024


class ConnectError(OSError):
    """The upstream could not be reached (refused, unreachable, TLS failed)."""


class TimeoutException(TimeoutError):
    """The upstream did not do its part in time."""


class ConnectTimeout(TimeoutException):
    """No connection to the upstream within the connect timeout."""


class ReadTimeout(TimeoutException):
    """The upstream sent nothing within the read timeout."""


class WriteTimeout(TimeoutException):
    """The upstream took no request bytes within the write timeout."""


class RemoteProtocolError(ConnectionError):
    """The upstream broke off, or did not speak HTTP/1.1."""


#: the upstream was never reached: the request did not run there
CONNECT_FAILED = (ConnectError, ConnectTimeout)
#: the upstream did not answer in time
TIMED_OUT = TimeoutException


def _expire(fut: asyncio.Future[None], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


async def _within(fut: asyncio.Future[None], timeout: float | None, exc: BaseException) -> None:
    """Await ``fut``, failing it with ``exc`` after ``timeout`` seconds (a timer, cheaper than wait_for)."""
    timer = asyncio.get_running_loop().call_later(timeout, _expire, fut, exc) if timeout is not None else None
    try:
        await fut
    finally:
        if timer is not None:
            timer.cancel()


class Response:
    """One upstream response: ``status``, ``reason``, ``headers`` (raw pairs), then the body by :meth:`aiter_stream`.

    It is also the parser's callback object. :meth:`aclose` gives the connection back to the pool when the body
    was read whole and the upstream keeps it alive, and closes it otherwise."""

    def __init__(self, conn: _Connection, *, head_only: bool, read_timeout: float | None) -> None:
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[bytes, bytes]] = []
        self._conn = conn
        self._head_only = head_only
        self._timeout = read_timeout
        self._reason = b""
        self._chunks: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._head: asyncio.Future[None] = conn.loop.create_future()
        self._wake: asyncio.Future[None] | None = None
        self._interim = False
        self.started = False
        self.done = False
        self.keep_alive = False
        self.error: BaseException | None = None
        self.parser = httptools.HttpResponseParser(self)
        self._released = False

    # -- parser callbacks ----------------------------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        code = self.parser.get_status_code()
        if 100 <= code < 200 and code != 101:
            self._interim = True  # 100 Continue and the like: the real answer follows
            return
        self.status = code
        self.reason = self._reason.decode("latin-1")
        if self._head_only:  # a HEAD answer announces a body it never sends
            self._finish(self.parser.should_keep_alive())
        if not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self.done:
            return
        self._chunks.append(body)
        self._held += len(body)
        if self._held > HIGH_WATER:
            self._conn.pause_reading()
        self._signal()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            self.headers, self._reason = [], b""
            return
        self._finish(self.parser.should_keep_alive())

    # -- connection events ---------------------------------------------------------------------------------

    def _finish(self, keep_alive: bool) -> None:
        if not self.done:
            self.done = True
            self.keep_alive = keep_alive
            self._signal()

    def _signal(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def broken(self, exc: BaseException, *, clean: bool = False) -> None:
        """The connection failed, or closed (``clean``) before the answer was whole: a clean close ends a body
        that has neither a length nor chunks."""
        if self.done:
            return
        delimited = any(k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self.headers)
        if self._head.done() and not delimited and clean:
            self._finish(False)  # a body that runs until the connection closes
            return
        self.error = exc
        if not self._head.done():
            self._head.set_exception(exc)
        self._signal()

    async def head(self) -> None:
        """Wait for the status line and headers."""
        await _within(self._head, self._timeout, ReadTimeout("the upstream sent no answer in time"))

    async def aiter_stream(self) -> AsyncIterator[bytes]:
        """The body as it arrives, in the chunks read (decoded from chunked transfer encoding)."""
        while True:
            if self._chunks:
                chunk = self._chunks.popleft()
                self._held -= len(chunk)
                if self._held <= HIGH_WATER // 2:
                    self._conn.resume_reading()
                yield chunk
            elif self.error is not None:
                raise self.error
            elif self.done:
                return
            else:
                self._wake = self._conn.loop.create_future()
                await _within(self._wake, self._timeout, ReadTimeout("the upstream stopped sending the body"))

    async def aclose(self) -> None:
        """Done with the response: its connection goes back to the pool, or is closed if it can't be reused."""
        if not self._released:
            self._released = True
            self._conn.release(reuse=self.done and self.keep_alive and self.error is None)


class _Connection(asyncio.Protocol):
    """One connection to the upstream: at most one request at a time."""

    def __init__(self, pool: Upstream, loop: asyncio.AbstractEventLoop) -> None:
        self.pool = pool
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.response: Response | None = None
        self.closed = False
        self._drained: asyncio.Future[None] | None = None
        self._reading = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not its subclasses

    def data_received(self, data: bytes) -> None:
        resp = self.response
        if resp is None or resp.done:  # nothing was asked: an upstream that talks out of turn is not reused
            self.close()
            return
        resp.started = True
        try:
            resp.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            resp.broken(RemoteProtocolError(f"the upstream's answer is not valid HTTP/1.1 ({exc})"))
            self.close()
        except httptools.HttpParserUpgrade:
            resp.broken(RemoteProtocolError("the upstream switched protocols, which the proxy does not relay"))
            self.close()

    def eof_received(self) -> bool | None:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.response is not None:
            detail = f": {exc}" if exc is not None else ""
            error = RemoteProtocolError(f"the upstream closed the connection without a whole answer{detail}")
            self.response.broken(error, clean=exc is None)
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(RemoteProtocolError("the upstream closed the connection"))

    def pause_writing(self) -> None:
        self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def pause_reading(self) -> None:
        if self._reading and self.transport is not None:
            self._reading = False
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if not self._reading and self.transport is not None and not self.closed:
            self._reading = True
            self.transport.resume_reading()

    async def drain(self, timeout: float | None) -> None:
        """Wait until the transport takes more bytes."""
        if self._drained is not None:
            await _within(self._drained, timeout, WriteTimeout("the upstream took no more of the request body"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def release(self, *, reuse: bool) -> None:
        self.response = None
        self.pool.release(self, reuse=reuse and not self.closed)


class Upstream:
    """Where the proxy forwards: ``--upstream`` parsed and checked once, and the pool of connections to it."""

    def __init__(self, url: str, *, timeout: float | None = 300.0, max_connections: int = 256) -> None:
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
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = port or (443 if self.tls else 80)
        #: the ``Host`` header the upstream gets (never the client's)
        self.netloc = parts.netloc
        self.base = parts.path.rstrip("/").encode()
        self.connect_timeout = 10.0
        self.timeout = timeout
        self.max_connections = max_connections
        self._idle: list[_Connection] = []
        self._slots: asyncio.Semaphore | None = None
        self._ssl: ssl.SSLContext | None = None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self.tls and self._ssl is None:
            self._ssl = ssl.create_default_context()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self, loop), self.host, self.port, ssl=self._ssl if self.tls else None
                ),
                self.connect_timeout,
            )
        except TimeoutError as exc:
            raise ConnectTimeout(f"no connection to {self.netloc} within {self.connect_timeout:g} s") from exc
        except OSError as exc:
            raise ConnectError(f"cannot connect to {self.netloc}: {exc.strerror or exc}") from exc
        return conn

    async def send(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], content: bytes | AsyncIterator[bytes]
    ) -> Response:
        """Send one request to ``base + target``; the response's body is still to be streamed (then closed).

        A request whose body is in hand is sent again, once, on a new connection when a kept-alive one turns
        out to have been closed by the upstream before it answered anything (the usual keep-alive race)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_connections)
        await self._slots.acquire()
        head = b"".join(
            [method.encode("ascii"), b" ", self.base + target, b" HTTP/1.1\r\n"]
            + [b"%s: %s\r\n" % pair for pair in headers]
            + [b"\r\n"]
        )
        try:
            while True:
                conn = self._idle.pop() if self._idle else None
                if conn is not None and conn.closed:
                    continue
                reused = conn is not None
                if conn is None:
                    conn = await self._connect()
                try:
                    return await self._exchange(conn, method, head, headers, content)
                except RemoteProtocolError:
                    silent = conn.response is not None and not conn.response.started
                    conn.response = None
                    conn.close()
                    if not (reused and silent and isinstance(content, bytes)):
                        raise
                except BaseException:
                    conn.response = None
                    conn.close()
                    raise
        except BaseException:
            self._slots.release()
            raise

    async def _exchange(
        self,
        conn: _Connection,
        method: str,
        head: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes | AsyncIterator[bytes],
    ) -> Response:
        transport = conn.transport
        assert transport is not None
        resp = conn.response = Response(conn, head_only=method == "HEAD", read_timeout=self.timeout)
        if isinstance(content, bytes):
            transport.write(head + content)  # one write: one segment for a small request
        else:
            chunked = any(k.lower() == b"transfer-encoding" for k, _ in headers)
            transport.write(head)
            async for chunk in content:
                if chunk:
                    transport.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    await conn.drain(self.timeout)
            if chunked:
                transport.write(b"0\r\n\r\n")
        await resp.head()
        return resp

    def release(self, conn: _Connection, *, reuse: bool) -> None:
        """Take a connection back: kept for the next request, or closed."""
        if reuse:
            self._idle.append(conn)
        else:
            conn.close()
        if self._slots is not None:
            self._slots.release()

    async def aclose(self) -> None:
        """Close every idle connection to the upstream."""
        while self._idle:
            self._idle.pop().close()


def reason_of(response: Response) -> str:
    """The reason phrase the upstream sent, if any."""
    return response.reason
