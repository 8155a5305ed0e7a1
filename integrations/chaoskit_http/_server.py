"""Running the proxy: the listening socket, uvicorn, the spans file, a clean stop, and the ``serve()`` API.

The socket is bound before the server starts, so the URL is known (and connectable) at once. On a stop (SIGINT,
SIGTERM, or :meth:`ProxyServer.stop`) held connections are released, requests in flight get up to
``grace`` seconds, and each attempt span has already reached ``traces`` when its call ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import logging
import os
import signal
import socket
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import uvicorn

# the MCP proxy's span file writer (OTLP-JSON Lines, chaoskit's one encoder, by a writer thread);
# chaoskit_mcp imports no part of the mcp SDK for it
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from chaoskit import ChaoskitError, ChaosWarning, Plan, telemetry
from chaoskit import episode as chaoskit_episode

from ._app import HttpProxy
from ._routes import Route, load_openapi

__all__ = ["ProxyServer", "parse_listen", "serve"]

log = logging.getLogger("chaoskit.http")

_LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def parse_listen(text: str) -> tuple[str, int]:
    """``(host, port)`` of ``--listen``: ``127.0.0.1:8080``, ``[::1]:8080``, ``:8080`` or ``8080`` (host
    127.0.0.1); port 0 picks a free port. A bad value is a ChaoskitError saying what is allowed."""
    allowed = "expected HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080) or a port"
    raw = text.strip()
    host, sep, port = raw.rpartition(":")
    if not sep:
        host, port = "", raw
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise ChaoskitError(f"--listen {text!r}: {allowed}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ChaoskitError(f"--listen {host}:{port}: cannot resolve or open it ({exc})") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(512)
    except OSError as exc:
        sock.close()
        raise ChaoskitError(f"--listen {host}:{port}: cannot listen there ({exc.strerror or exc})") from exc
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its own signal handling: the proxy stops it itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing (uvicorn would re-raise the signal after its shutdown)."""
        yield


class _WholeTarget(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the whole request target in ``raw_path``.

    uvicorn keeps only the path of an absolute-form target (``GET http://other/``); putting the target back
    lets the app refuse it, as it refuses every request that is not for a path on the upstream."""

    def on_headers_complete(self) -> None:
        """Parse the head as uvicorn does, then restore an absolute-form target."""
        super().on_headers_complete()
        if not self.url.startswith(b"/") and "raw_path" in self.scope:
            # the request's task has been created but has not run yet: it sees this raw_path
            self.scope["raw_path"] = self.url


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when installed (it also sends a response's head and body in one write), else
    asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


class _CutShort(logging.Filter):
    """Drops uvicorn's error line for a response the proxy cut short on purpose (a ``partial`` fault)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


_CUT_SHORT = _CutShort()


def _as_plan(plan: Plan | Mapping[str, Any] | str | os.PathLike[str]) -> tuple[Plan, str]:
    if isinstance(plan, Plan):
        return plan, "<plan>"
    if isinstance(plan, Mapping):
        return Plan.from_dict(plan), "<dict>"
    return Plan.from_yaml(plan), str(plan)


class ProxyServer:
    """One HTTP chaos proxy: ``url`` is where it listens. :meth:`start` runs it in a thread (``with`` does
    too); :meth:`run` runs it in this thread until SIGINT or SIGTERM.

    The calls are counted in the context the proxy was started from: inside ``chaoskit.episode(...)`` they
    are attempts of that episode (its spans' children, its counters); elsewhere, of the plan's own counters.
    """

    def __init__(
        self,
        plan: Plan | Mapping[str, Any] | str | os.PathLike[str],
        *,
        upstream: str,
        listen: str = "127.0.0.1:0",
        openapi: str | os.PathLike[str] | None = None,
        routes: list[Route] | None = None,
        traces: str | os.PathLike[str] | None = None,
        grace: float = 1.0,
        max_body: int = 8 * 1024 * 1024,
        episode: str | None = None,
    ) -> None:
        loaded, source = _as_plan(plan)
        #: with a name, the proxy's whole run is one episode (its ``invoke_agent`` span, its counters): model calls
        #: are recorded only as steps of an episode, so a standalone proxy needs one to record them
        self.episode = episode
        all_routes = [*(load_openapi(openapi) if openapi is not None else ()), *(routes or ())]
        self.app = HttpProxy(loaded, upstream, routes=all_routes, source=source, max_body=max_body)
        self.plan = loaded
        host, port = parse_listen(listen)
        if not is_loopback(host):
            warnings.warn(
                f"chaoskit http-proxy listens on {host}, not only on this machine: anyone who can reach it "
                "can call the upstream through it (with the credentials they send)",
                ChaosWarning,
                stacklevel=2,
            )
        self.traces = Path(traces) if traces is not None else None
        self._writer: telemetry.SpanFileWriter | None = None
        if self.traces is not None:
            try:
                self._writer = telemetry.SpanFileWriter(str(self.traces))
            except OSError as exc:
                raise ChaoskitError(f"--traces {self.traces}: cannot be written ({exc.strerror or exc})") from exc
        self.grace = grace
        self._sock = _bind(host, port)
        bound = self._sock.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        #: the proxy's base URL, e.g. ``http://127.0.0.1:38211``
        self.url = f"http://{shown}:{bound[1]}"
        self._server: _Uvicorn | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._processor: Any = None
        self._ready = threading.Event()
        self._serving = False

    # -- running -------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Serve in this (main) thread until SIGINT or SIGTERM, then stop cleanly."""
        self._run_loop(signals=True)

    def start(self) -> ProxyServer:
        """Serve in a background thread (in a copy of the caller's context); returns once it accepts calls."""
        if self._thread is not None:
            return self
        ctx = contextvars.copy_context()
        self._thread = threading.Thread(
            target=ctx.run, args=(self._run_loop, False), name="chaoskit-http-proxy", daemon=True
        )
        self._thread.start()
        self._ready.wait(timeout=30)
        if not self._serving:
            self.stop()
            raise ChaoskitError(f"chaoskit http-proxy could not start on {self.url} (see the log above)")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a proxy started with :meth:`start`: wait for it to finish (every span written)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._request_stop)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._sock.close()

    def __enter__(self) -> str:
        self.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _request_stop(self) -> None:
        server = self._server
        if server is not None:
            if server.should_exit:
                server.force_exit = True  # a second signal: stop now
            server.should_exit = True
        if self.app.stopping is not None:
            self.app.stopping.set()

    def _run_loop(self, signals: bool) -> None:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(self._main(signals=signals))

    async def _main(self, *, signals: bool) -> None:
        loop = self._loop = asyncio.get_running_loop()
        self.app.stopping = asyncio.Event()
        if self._writer is not None:
            # each span as its call ends, by a writer thread: a stop or a crash loses none already finished
            self._processor = telemetry.add_processor(self._writer)
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            http=_WholeTarget,
            loop="none",  # the loop is made by _run_loop
            ws="none",
            access_log=False,
            log_config=None,
            log_level="warning",
            server_header=False,
            proxy_headers=False,  # X-Forwarded-* from a client is not trusted: the proxy is no hop of a chain
            date_header=False,
            timeout_graceful_shutdown=max(1, round(self.grace)),
        )
        self._server = _Uvicorn(config)
        logging.getLogger("uvicorn.error").addFilter(_CUT_SHORT)  # the same filter once, however many proxies
        if signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self._request_stop)
        self._serving = True
        self._ready.set()
        try:
            if self.episode is None:
                await self._server.serve(sockets=[self._sock])
            else:
                # entered and left in this coroutine, so every connection's task (a copy of this context) sees it
                with chaoskit_episode(self.episode, plan=self.plan):
                    await self._server.serve(sockets=[self._sock])
        finally:
            if signals:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
            await self.app.aclose()
            if self._processor is not None:
                telemetry.remove_processor(self._processor)
                self._processor = None
            self._ready.set()


@contextlib.contextmanager
def serve(
    plan: Plan | Mapping[str, Any] | str | os.PathLike[str],
    *,
    upstream: str,
    listen: str = "127.0.0.1:0",
    openapi: str | os.PathLike[str] | None = None,
    traces: str | os.PathLike[str] | None = None,
    max_body: int = 8 * 1024 * 1024,
) -> Iterator[str]:
    """Run an HTTP chaos proxy in front of ``upstream`` while the block runs; yields its base URL.

    ``plan`` is a Plan, a dict or a YAML path; ``listen`` defaults to a free port on 127.0.0.1. Inside
    ``chaoskit.episode(...)`` the proxied calls are attempts of that episode. ``traces`` appends every span
    (as each call ends) to an OTLP-JSON Lines file."""
    server = ProxyServer(plan, upstream=upstream, listen=listen, openapi=openapi, traces=traces, max_body=max_body)
    with server as url:
        yield url
