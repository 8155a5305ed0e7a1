"""Serving the proxy: over stdio (one session), or Streamable HTTP (one relay and upstream per session)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio
from mcp.shared.message import SessionMessage

from chaoskit import Plan

from ._calls import ProxyOptions, ToolCalls
from ._episodes import EpisodeCounts
from ._plan import ProtocolDecider, ProtocolFault
from ._relay import Relay
from ._upstream import BUFFER_LIMIT, HttpUpstream, StdioUpstream, Upstream, is_credential, read_line
from ._wire import parse, unwrap, wrap

__all__ = ["ProxySetup", "serve_http", "serve_stdio", "stdio_streams"]

log = logging.getLogger("chaoskit.mcp")


class ProxySetup:
    """Everything a session needs: the plan (core and protocol faults), the options, how to reach upstream."""

    def __init__(
        self,
        plan: Plan,
        shadow: Plan,
        protocol: list[ProtocolFault],
        *,
        command: list[str] | None = None,
        upstream_url: str | None = None,
        options: ProxyOptions | None = None,
        counts: EpisodeCounts | None = None,
    ) -> None:
        self.plan = plan
        self.shadow = shadow
        self.protocol = protocol
        self.command = command
        self.upstream_url = upstream_url
        self.options = options or ProxyOptions()
        self.calls = ToolCalls(self.options, plan=plan, counts=counts)

    def upstream(self, credentials: dict[str, str] | None = None) -> Upstream:
        """A new connection to the real server (a new child for a command); an HTTP upstream gets the agent's
        ``credentials`` headers."""
        if self.command:
            return StdioUpstream(self.command)
        assert self.upstream_url is not None
        return HttpUpstream(self.upstream_url, credentials)

    async def relay(
        self, read: Any, write: Any, session: str | None = None, credentials: dict[str, str] | None = None
    ) -> None:
        """One session, with the plan active (fresh call counters) for its duration."""
        with self.plan.activate():
            upstream = self.upstream(credentials)
            relay = Relay(self.calls, upstream, ProtocolDecider(self.shadow, self.protocol), session=session)
            await relay.run(read, write)


# -- stdio -----------------------------------------------------------------------------------------------------


async def _lines() -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=BUFFER_LIMIT)
    pipe = os.fdopen(os.dup(0), "rb", 0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except (ValueError, OSError):
        # a regular file on stdin cannot be watched by the event loop: read it in a thread instead
        while line := await anyio.to_thread.run_sync(pipe.readline, abandon_on_cancel=True):
            yield line
        return
    try:
        while line := await read_line(reader):
            yield line
    finally:
        transport.close()


class _StdoutWriter:
    """The write half of the stdio pair: each message written at once (no writer task to hand it to)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = anyio.Lock()

    async def send(self, item: SessionMessage) -> None:
        """Write one message as one line; a client that closed stdout gets nothing more."""
        view = memoryview(unwrap(item).model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
        async with self._lock:  # one line at a time, also when a non-blocking stdout makes a write wait
            while view:
                try:
                    view = view[os.write(self.fd, view) :]
                except BlockingIOError:
                    await anyio.sleep(0.001)
                except OSError:
                    raise anyio.BrokenResourceError from None


async def _messages() -> AsyncIterator[SessionMessage | Exception]:
    async for line in _lines():
        if not line.strip():
            continue
        try:
            yield wrap(parse(line))
        except ValueError as exc:
            yield exc


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The process's stdin and stdout as the read and write halves the relay takes (``SessionMessage``)."""
    out = os.dup(1)
    # what anything else in this process prints must not land between JSON-RPC lines
    os.dup2(2, 1)
    try:
        yield _messages(), _StdoutWriter(out)
    finally:
        with contextlib.suppress(OSError):
            os.dup2(out, 1)
            os.close(out)


async def _on_signals(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def serve_stdio(setup: ProxySetup) -> None:
    """Serve one MCP session over stdin/stdout until the client closes stdin (or SIGTERM/SIGINT)."""
    async with stdio_streams() as (read, write), anyio.create_task_group() as tg:
        tg.start_soon(_on_signals, tg.cancel_scope)
        await setup.relay(read, write)
        tg.cancel_scope.cancel()


# -- Streamable HTTP -------------------------------------------------------------------------------------------


class _Sessions:
    """A minimal ASGI app: one SDK ``StreamableHTTPServerTransport`` and one relay per MCP session."""

    def __init__(self, setup: ProxySetup, tg: Any, hosts: list[str]) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        self.setup = setup
        self.tg = tg
        self.sessions: dict[str, Any] = {}
        # per session, the credential headers of the agent's latest request (the upstream reads them)
        self.credentials: dict[str, dict[str, str]] = {}
        self.security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts)

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        from mcp.server.streamable_http import StreamableHTTPServerTransport
        from starlette.responses import PlainTextResponse

        if scope["type"] != "http":
            return
        if scope.get("path", "").rstrip("/") != "/mcp":
            await PlainTextResponse("chaoskit mcp-proxy serves MCP at /mcp", status_code=404)(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        creds = {k: v for k, v in headers.items() if is_credential(k)}
        sid = headers.get("mcp-session-id")
        if sid is not None:
            transport = self.sessions.get(sid)
            if transport is None:
                await PlainTextResponse("Session not found", status_code=404)(scope, receive, send)
                return
            held = self.credentials.get(sid)
            if held is not None and held != creds:
                held.clear()
                held.update(creds)  # in place: the session's upstream posts with what the agent sends now
            await transport.handle_request(scope, receive, send)
            if transport.is_terminated:
                self.sessions.pop(sid, None)
            return
        session = uuid4().hex
        transport = StreamableHTTPServerTransport(mcp_session_id=session, security_settings=self.security)
        self.sessions[session] = transport
        self.credentials[session] = creds

        async def run(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            # the sessions share the front's task group: one session's end or failure must not end the others
            try:
                async with transport.connect() as (read, write):
                    task_status.started()
                    await self.setup.relay(read, write, session, creds)
            except Exception as exc:
                log.warning("chaoskit mcp-proxy: session %s ended: %s", session, _cause(exc))
            finally:
                self.sessions.pop(session, None)
                self.credentials.pop(session, None)

        await self.tg.start(run)
        await transport.handle_request(scope, receive, send)

    async def close(self) -> None:
        """End every session (each relay then stops its upstream)."""
        for transport in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await transport.terminate()


def _cause(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]  # the task groups wrap the one error that matters
    return f"{type(exc).__name__}: {exc}"


async def _stop_on_signals(server: Any) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            server.should_exit = True
            return


async def serve_http(setup: ProxySetup, host: str, port: int, *, ready_file: str | None = None) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp`` until SIGTERM/SIGINT; then end every session and stop
    every upstream before returning."""
    import uvicorn

    class Server(uvicorn.Server):
        # uvicorn re-raises a captured SIGTERM once it has stopped, which would kill the proxy before its
        # sessions stop their servers: the proxy handles the signals itself
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    async with anyio.create_task_group() as tg:
        named = f"[{host}]" if ":" in host else host  # an IPv6 address is bracketed in a Host header
        hosts = ["127.0.0.1:*", "localhost:*"] if host in ("127.0.0.1", "localhost") else [f"{named}:*"]
        app = _Sessions(setup, tg, hosts)
        server = Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
        tg.start_soon(_stop_on_signals, server)
        serving = asyncio.ensure_future(server.serve())
        while not server.started and not serving.done():
            await anyio.sleep(0.01)
        if serving.done():
            serving.result()
            raise OSError(f"cannot listen on {host}:{port}")
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{named}:{bound}/mcp"
        print(f"chaoskit mcp-proxy: listening on {url}", file=sys.stderr, flush=True)
        if ready_file:
            Path(ready_file).write_text(url + "\n", encoding="utf-8")
        await serving
        await app.close()
        tg.cancel_scope.cancel()
