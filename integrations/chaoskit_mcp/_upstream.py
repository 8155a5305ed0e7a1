"""The real MCP server behind the proxy: a child process over stdio, or a Streamable HTTP endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import re
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import anyio

import chaoskit.semconv as sc

from . import _wire as types
from ._calls import UpstreamGone
from ._client import http_peer, stdio_peer
from ._wire import http_client, parse, unwrap, wrap

__all__ = ["HttpUpstream", "StdioUpstream", "Upstream", "read_line"]

log = logging.getLogger("chaoskit.mcp")

#: how long a child gets after its stdin closes, then after SIGTERM, before the next step (2 s exit budget)
GRACE_S = 0.5
#: how much a stdio reader buffers before it stops reading the pipe (flow control); it does not bound a line
BUFFER_LIMIT = 1024 * 1024
#: signals that stop a process on purpose (a stop, not a crash)
_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


async def read_line(reader: asyncio.StreamReader) -> bytes:
    """One newline-delimited line of any length (the rest at EOF, ``b""`` after it), as the SDK's stdio
    transports read them: the reader's limit bounds its buffer, never a message."""
    parts: list[bytes] = []
    while True:
        try:
            parts.append(await reader.readuntil(b"\n"))
        except asyncio.IncompleteReadError as exc:
            parts.append(exc.partial)
        except asyncio.LimitOverrunError as exc:
            parts.append(await reader.readexactly(exc.consumed))  # a long line: take what is buffered, go on
            continue
        return b"".join(parts)


class Upstream(Protocol):
    """What the relay needs of the real server: send, receive until it is gone, stop."""

    describe: str
    gone: str | None

    async def start(self) -> None:
        """Connect (or start the child)."""

    async def send(self, message: types.JSONRPCMessage) -> None:
        """Send one message; raise :class:`UpstreamGone` when the server is gone."""

    def messages(self) -> AsyncIterator[types.JSONRPCMessage]:
        """The server's messages until it is gone (then ``gone`` says why)."""
        ...

    async def stop(self) -> None:
        """Close the connection; stop the child and everything it started."""

    def peer(self) -> dict[str, Any]:
        """The transport attributes of a call's CLIENT span toward this server (and its session id, if any)."""
        ...


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Linux: the child gets SIGTERM if the proxy dies without stopping it (SIGKILL, a crash): no orphans
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class StdioUpstream:
    """The server as a child process in its own process group, speaking newline-delimited JSON-RPC."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.env = env
        self.describe = f"the MCP server `{shlex.join(self.argv)}`"
        self.gone: str | None = None
        self.proc: asyncio.subprocess.Process | None = None

    def peer(self) -> dict[str, Any]:
        """A pipe: no address, and no session id (stdio has none)."""
        return stdio_peer()

    @property
    def pid(self) -> int | None:
        """The child's process id (its process group id too)."""
        return self.proc.pid if self.proc is not None else None

    async def start(self) -> None:
        """Start the child; an error names the command."""
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                limit=BUFFER_LIMIT,
            )
        except OSError as exc:
            self.gone = f"{self.describe} could not be started: {exc.strerror or exc}"
            raise UpstreamGone(self.gone) from None

    async def send(self, message: types.JSONRPCMessage) -> None:
        """Write one line to the child's stdin."""
        proc = self.proc
        if self.gone is not None or proc is None or proc.stdin is None:
            raise UpstreamGone(self.gone or f"{self.describe} is not running")
        data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise UpstreamGone(await self._exit_reason()) from exc

    async def messages(self) -> AsyncIterator[types.JSONRPCMessage]:
        """Parsed lines of the child's stdout; a line that is not JSON-RPC is logged and skipped."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        while True:
            try:
                line = await read_line(proc.stdout)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                log.warning("chaoskit mcp-proxy: reading %s failed: %s", self.describe, exc)
                break
            if not line:
                break
            if not line.strip():
                continue
            try:
                yield parse(line)
            except ValueError:
                log.warning("chaoskit mcp-proxy: %s wrote a line that is not JSON-RPC: %.200r", self.describe, line)
        self.gone = await self._exit_reason()

    async def _exit_reason(self) -> str:
        proc = self.proc
        if proc is None:
            return f"{self.describe} is not running"
        try:
            code = await asyncio.wait_for(proc.wait(), GRACE_S)
        except TimeoutError:
            return f"{self.describe} closed its output but is still running"
        if code < 0:
            try:
                sig = signal.Signals(-code)
            except ValueError:
                return f"{self.describe} crashed (killed by signal {-code})"
            if sig in _STOPS:
                return f"{self.describe} was stopped ({sig.name})"
            return f"{self.describe} crashed (killed by {sig.name})"
        return f"{self.describe} exited with status {code}" + (" (crashed)" if code else "")

    async def stop(self) -> None:
        """Close stdin, wait a little, then SIGTERM and SIGKILL the child's whole process group (also when the
        caller is being cancelled)."""
        with anyio.CancelScope(shield=True):
            await self._stop()

    async def _stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            try:
                await asyncio.wait_for(proc.wait(), GRACE_S)
            except TimeoutError:
                continue
            break
        # the server's own children (same process group) go with it, even when it exited on its own
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if self.gone is None:
            self.gone = f"{self.describe} was stopped"


_CREDENTIAL_WORDS = frozenset(
    {"authorization", "auth", "cookie", "token", "secret", "apikey", "credential", "credentials", "signature", "jwt"}
)


def is_credential(name: str) -> bool:
    """Whether a request header named ``name`` carries the agent's credentials (``Authorization``, ``Cookie``,
    ``X-Api-Key``, ``X-Auth-Token`` ...): those are forwarded to an HTTP upstream, and never written down."""
    low = name.lower()
    if low in ("mcp-session-id", "mcp-protocol-version", "proxy-authorization"):
        return False  # the transport's own, and a hop-by-hop header meant for this hop only
    words = re.findall(r"[a-z0-9]+", low)
    return (
        any(w in _CREDENTIAL_WORDS for w in words)
        or "apikey" in "".join(words)
        or (len(words) > 1 and words[-1] == "key")
    )


class HttpUpstream:
    """The server at a Streamable HTTP URL, through the SDK's client transport.

    ``credentials`` is the session's mapping of credential headers (see :func:`is_credential`), which the
    HTTP front keeps equal to those of the agent's latest request: each message is posted with them, as the
    agent sent them (a refreshed token included)."""

    def __init__(self, url: str, credentials: dict[str, str] | None = None) -> None:
        self.url = url
        self.describe = f"the MCP server at {url}"
        self.gone: str | None = None
        self.credentials = credentials if credentials is not None else {}
        self._sent: dict[str, str] = {}
        self._client: Any = None
        self._stack = contextlib.AsyncExitStack()
        self._read: Any = None
        self._write: Any = None
        #: the ``Mcp-Session-Id`` the server gave this session (read off its responses)
        self.session_id: str | None = None
        self._peer = http_peer(url)

    def peer(self) -> dict[str, Any]:
        """TCP to the URL's host and port, and the server's session id once it gave one."""
        return {**self._peer, sc.MCP_SESSION_ID: self.session_id} if self.session_id else dict(self._peer)

    async def _note_session(self, response: Any) -> None:
        # an event hook of the SDK's HTTP client: mcp 1.x and 2.x differ in how they expose the id, not in this
        found = response.headers.get("mcp-session-id")
        if found:
            self.session_id = found

    async def start(self) -> None:
        """Open the SDK transport (its task group lives until :meth:`stop`, in the same task)."""
        from mcp.client.streamable_http import streamable_http_client

        # the SDK's own client settings (30 s, 300 s to read a held stream), with the agent's credentials
        self._client = await self._stack.enter_async_context(http_client(30.0, 300.0))
        self._client.event_hooks = {**self._client.event_hooks, "response": [self._note_session]}
        self._sync_credentials()
        # mcp 1.x yields a third item (the session id getter), 2.x two
        streams = await self._stack.enter_async_context(streamable_http_client(self.url, http_client=self._client))
        self._read, self._write = streams[0], streams[1]

    def _sync_credentials(self) -> None:
        if self._client is None or self.credentials == self._sent:
            return
        for name in self._sent.keys() - self.credentials.keys():
            del self._client.headers[name]
        self._client.headers.update(self.credentials)
        self._sent = dict(self.credentials)

    async def send(self, message: types.JSONRPCMessage) -> None:
        """Post one message (with the agent's current credentials)."""
        self._sync_credentials()
        if self.gone is not None or self._write is None:
            raise UpstreamGone(self.gone or f"{self.describe} is not connected")
        try:
            await self._write.send(wrap(message))
        except Exception as exc:
            self.gone = f"{self.describe} is unreachable ({type(exc).__name__})"
            raise UpstreamGone(self.gone) from exc

    async def messages(self) -> AsyncIterator[types.JSONRPCMessage]:
        """The server's messages; transport errors are logged."""
        try:
            async for item in self._read:
                if isinstance(item, Exception):
                    log.warning("chaoskit mcp-proxy: %s: %s", self.describe, item)
                    continue
                yield unwrap(item)
        except Exception as exc:
            log.warning("chaoskit mcp-proxy: reading %s failed: %s", self.describe, exc)
        if self.gone is None:
            self.gone = f"{self.describe} closed the connection"

    async def stop(self) -> None:
        """Close the transport (the SDK ends the HTTP session)."""
        # not in a shielded scope of the caller's: the SDK's task group, entered in start, must be the scope exited
        with contextlib.suppress(Exception):
            await self._stack.aclose()
        if self.gone is None:
            self.gone = f"{self.describe} was disconnected"
