"""The proxy as an ASGI app: each request is one tool attempt of the engine, answered with real HTTP.

Per request: match the route (the tool), read at most :data:`~chaoskit_http._wire.RECORD_BYTES` of the body as
the call's arguments, :func:`chaoskit.engine.begin` the attempt, then do what it decided:

- latency: wait, then forward; timeout: hold the connection (no answer) for ``after_s``, then 504;
- an HTTP fault (``http``, ``rate_limit``, ``auth_expired``, ``cascading_failure``): its status, a JSON error body
  and ``Retry-After``; ``after_write``: forward, let the upstream write, then answer the fault's status;
- ``error``: 502 Bad Gateway (403 for ``PermissionError``, 404 for ``FileNotFoundError``), with the message;
- data faults: the upstream's body (at most ``max_body`` bytes) rewritten; ``partial`` with only ``keep`` cuts
  the body short: the upstream's ``Content-Length``, the first bytes, then the connection closes.

Everything else streams: the request body to the upstream, the response body back, never held whole.

A ``POST`` to a model endpoint (``.../chat/completions``, ``.../v1/messages``) that no plan route names is a
model call instead (:mod:`chaoskit_http._llmcall`): counted per model, faulted with the plan's model faults.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from chaoskit import Plan
from chaoskit import semconv as sc
from chaoskit.engine import Attempt, begin

from . import _answers as answers
from . import _llm as llm
from . import _wire as wire
from ._client import CONNECT_FAILED, TIMED_OUT, Response, Upstream, reason_of
from ._llmcall import ModelEndpoint
from ._routes import DATA_FAULTS, IDEMPOTENCY_ARG, Route, RouteTable

__all__ = ["HTTP_REQUEST_METHOD", "HTTP_ROUTE", "URL_PATH", "HttpProxy", "UpstreamResponse"]

log = logging.getLogger("chaoskit.http")

#: OpenTelemetry HTTP attribute names the proxy adds to each attempt span (defined in chaoskit.semconv)
HTTP_REQUEST_METHOD = sc.HTTP_REQUEST_METHOD
HTTP_ROUTE = sc.HTTP_ROUTE
URL_PATH = sc.URL_PATH


class UpstreamResponse:
    """The upstream's answer as the attempt sees it when its body streams through unread: status and reason.

    A status of 400 or more is the upstream's own error: the attempt is recorded as a returned error
    (``chaoskit.tool.refused``), and the body still goes to the client as it came."""

    __slots__ = ("reason", "status")

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason

    def __repr__(self) -> str:
        return f"HTTP {self.status} {self.reason}"


def refusal(result: Any) -> str | bool:
    """The ToolSpec ``error_result`` of every route: an upstream status of 400 or more is a returned error."""
    if isinstance(result, UpstreamResponse) and result.status >= 400:
        return f"HTTP {result.status} {result.reason}"
    return False


class _Request:
    """One request being proxied: what the attempt and the upstream call need of it."""

    __slots__ = ("headers", "method", "path", "prefix", "query", "raw_path", "receive")

    def __init__(self, scope: MutableMapping[str, Any], receive: Any, prefix: wire.BodyPrefix) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.raw_path: bytes = scope.get("raw_path") or self.path.encode()
        self.query: bytes = scope.get("query_string", b"")
        self.headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        self.receive = receive
        self.prefix = prefix

    async def body(self) -> AsyncIterator[bytes]:
        """The whole request body: what was read already, then the rest as it arrives."""
        yield self.prefix.data
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ConnectionResetError("the client went away while sending the request body")
            yield message.get("body", b"")
            if not message.get("more_body", False):
                return


class HttpProxy:
    """The ASGI app of ``chaoskit http-proxy``: a reverse proxy to one ``upstream`` that fails what the plan names.

    It forwards only to ``upstream`` (scheme, host and port fixed here; the request's ``Host`` header and
    absolute-form targets are never used to pick a destination). ``max_body`` bounds the response bodies
    read for a data fault; larger ones stream through and the fault is skipped (with a ChaosWarning).
    """

    def __init__(
        self,
        plan: Plan,
        upstream: str,
        *,
        routes: list[Route] | None = None,
        source: str = "<plan>",
        max_body: int = 8 * 1024 * 1024,
        timeout: float | None = 300.0,
    ) -> None:
        self.upstream = Upstream(upstream, timeout=timeout)
        self._host = self.upstream.netloc
        self.table = RouteTable(plan, routes, refusal=refusal, source=source)
        self.plan = plan
        self.max_body = max_body
        self.stopping: asyncio.Event | None = None
        self._reads: dict[str, bool] = {}
        #: the model endpoints (``/chat/completions``, ``/v1/messages``): model calls, not tool attempts
        self.models = ModelEndpoint(self)

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the upstream connections."""
        await self.upstream.aclose()

    # -- ASGI ----------------------------------------------------------------------------------------------

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        """Serve one ASGI connection scope."""
        kind = scope["type"]
        if kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if kind != "http":
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        if scope["method"] == "CONNECT" or not raw_path.startswith(b"/") or raw_path.startswith(b"//"):
            # a forward-proxy request (absolute-form or CONNECT): this proxy talks to its one upstream only
            log.warning("chaoskit http-proxy: refused %s %r: not a path on the upstream", scope["method"], raw_path)
            await answers.respond(
                send, 400, answers.JSON, wire.json_error(400, "this proxy forwards paths to its one upstream only")
            )
            return
        prefix = await wire.read_prefix(receive)
        if prefix is None:
            return  # the client went away before its request was complete: no call was made
        req = _Request(scope, receive, prefix)
        provider = llm.provider_of(req.method, req.path)
        if provider is not None and self.table.match(req.method, req.path)[1] is None:
            # a model call (a route the plan names as a tool stays a tool)
            started = time.perf_counter()
            status = await self.models.handle(req, send, provider)
            if log.isEnabledFor(logging.INFO):
                ms = (time.perf_counter() - started) * 1000
                log.info(
                    "%s %s -> %s (%s model call, %.1f ms)", req.method, req.path, status or "no answer", provider, ms
                )
            return
        await self._handle(req, send)

    async def _handle(self, req: _Request, send: Any) -> None:
        spec, route, params = self.table.match(req.method, req.path)
        args: dict[str, Any] = {k: v for k, v in params.items() if k not in {"path", "query", "body", IDEMPOTENCY_ARG}}
        args["path"] = req.path
        if req.query:
            args["query"] = wire.query_args(req.query.decode("latin-1"))
        ctype = wire.header(req.headers, b"content-type") or ""
        length = wire.header(req.headers, b"content-length")
        body = wire.body_value(req.prefix, ctype, int(length) if length and length.isdigit() else None)
        if body is not None:
            args["body"] = body
        key = wire.idempotency_key(req.headers)
        if key is not None:
            args[IDEMPOTENCY_ARG] = key
        started = time.perf_counter()
        attempt = begin(spec, args, attach=False)
        span = attempt.span
        if span.is_recording():
            http_attrs = {HTTP_REQUEST_METHOD: req.method, URL_PATH: req.path}
            if route is not None:
                http_attrs[HTTP_ROUTE] = route.template
            span.set_attributes(http_attrs)
        if log.isEnabledFor(logging.DEBUG):
            fault = attempt.fault.type if attempt.fault is not None else "none"
            log.debug("%s %s: %s call %d, fault %s", req.method, req.path, spec.name, attempt.n, fault)
        status = 0
        try:
            status = await self._carry_out(attempt, req, send)
        except BaseException as exc:
            attempt.fail(exc)  # a no-op when the attempt was already finished
            raise
        finally:
            if log.isEnabledFor(logging.INFO):
                self._log(req, spec.name, attempt, status, started)

    def _log(self, req: _Request, tool: str, attempt: Attempt, status: int, started: float) -> None:
        query = wire.redact_query(req.query.decode("latin-1"))
        fault = attempt.fault.type if attempt.fault is not None else "none"
        log.info(
            "%s %s%s -> %s (%s call %d, fault %s, %.1f ms)",
            req.method,
            req.path,
            f"?{query}" if query else "",
            status or "no answer",
            tool,
            attempt.n,
            fault,
            (time.perf_counter() - started) * 1000,
        )
        if log.isEnabledFor(logging.DEBUG):
            log.debug("request headers: %s", wire.redact_headers(req.headers))

    async def _carry_out(self, attempt: Attempt, req: _Request, send: Any) -> int:
        pre = attempt.before
        if pre.sleep:
            if isinstance(pre.exc, TimeoutError):
                await self._hold(req, pre.sleep)
            else:
                await asyncio.sleep(pre.sleep)
        if pre.exc is not None:
            return await self._fail(attempt, pre.exc, send)
        if not pre.call:
            data, headers = answers.encode(pre.value)
            # the span ends before the answer leaves: the next attempt's gap (Retry-After) is never short
            attempt.succeed(pre.value)
            await answers.respond(send, 200, headers, data)
            return 200
        attempt.executed = True
        try:
            resp = await self._forward(req)
        except Exception as exc:
            # the upstream is down or broke off: a 502 (504 for its timeouts) naming what happened
            if isinstance(exc, CONNECT_FAILED):
                attempt.executed = False
            status = 504 if isinstance(exc, TIMED_OUT) else 502
            message = f"the upstream {self._host} failed: {type(exc).__name__}: {str(exc) or 'no detail'}"
            attempt.span.set_attribute(sc.HTTP_RESPONSE_STATUS_CODE, status)
            attempt.fail(exc)
            await answers.respond(send, status, answers.JSON, wire.json_error(status, message))
            return status
        try:
            return await self._answer(attempt, resp, send)
        finally:
            await resp.aclose()

    async def _hold(self, req: _Request, seconds: float) -> None:
        """Hold the connection without an answer for ``seconds``, or until the client or the proxy gives up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        stop = asyncio.ensure_future(self.stopping.wait()) if self.stopping is not None else None
        try:
            while (left := deadline - loop.time()) > 0:
                listen: asyncio.Future[Any] = asyncio.ensure_future(req.receive())
                tasks: set[asyncio.Future[Any]] = {listen} if stop is None else {listen, stop}
                done, _ = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                if listen not in done:
                    listen.cancel()
                elif listen.result()["type"] == "http.disconnect":
                    return
                if stop is not None and stop in done:
                    return
        finally:
            if stop is not None:
                stop.cancel()

    async def _fail(self, attempt: Attempt, exc: BaseException, send: Any) -> int:
        status, headers, body = answers.fault_response(exc)
        attempt.span.set_attribute(sc.HTTP_RESPONSE_STATUS_CODE, status)
        # the span ends before the answer leaves: an agent that waits the Retry-After it was given is measured
        # from the span's end, which must not come after the moment the agent got the answer
        attempt.fail(exc)
        await answers.respond(send, status, headers, body)
        return status

    async def _forward(self, req: _Request) -> Response:
        target = req.raw_path + (b"?" + req.query if req.query else b"")
        if req.prefix.more:
            headers = wire.forward_headers(req.headers, self._host, length=None)
            return await self.upstream.send(req.method, target, headers, req.body())
        data = req.prefix.data
        headers = wire.forward_headers(req.headers, self._host, length=len(data))
        return await self.upstream.send(req.method, target, headers, data)

    def _reads_body(self, tool: str) -> bool:
        """Whether a data fault targets ``tool``: then its response bodies are read (to rewrite or replay)."""
        found = self._reads.get(tool)
        if found is None:
            found = self._reads[tool] = any(f.type in DATA_FAULTS and f.targets(tool) for f in self.plan.faults)
        return found

    async def _answer(self, attempt: Attempt, resp: Response, send: Any) -> int:
        status = resp.status
        raw_headers = resp.headers
        span = attempt.span
        if span.is_recording():
            span.set_attribute(sc.HTTP_RESPONSE_STATUS_CODE, status)
            retry = wire.seconds(wire.header(raw_headers, b"retry-after"))
            if retry is not None:
                span.set_attribute(sc.RETRY_AFTER, retry)
        chunks: AsyncIterator[bytes] = resp.aiter_stream()
        if status < 400 and self._reads_body(attempt.spec.name):
            raw, rest = await answers.read_at_most(resp, self.max_body)
            if rest is None:
                body = answers.decoded(raw, wire.header(raw_headers, b"content-encoding"), self.max_body)
                if body is not None:
                    return await self._rewrite(attempt, status, raw_headers, (raw, body), send)
                attempt.skip("the response body's Content-Encoding cannot be decoded within max_body")
                rest = answers.chain([raw], None)
            else:
                attempt.skip(f"the response body is over {self.max_body} bytes (max_body)")
            chunks = rest
        result = UpstreamResponse(status, reason_of(resp) or answers.reason(status))
        try:
            attempt.transform(result)  # a returned error (status >= 400), or after_write raising here
        except Exception as exc:
            return await self._fail(attempt, exc, send)
        headers = wire.response_headers(raw_headers, rewritten=False)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        attempt.succeed(result)
        return status

    async def _rewrite(
        self,
        attempt: Attempt,
        status: int,
        raw_headers: list[tuple[bytes, bytes]],
        bodies: tuple[bytes, bytes],
        send: Any,
    ) -> int:
        """Answer with the upstream's body as the data fault leaves it (``bodies``: as sent, and decoded)."""
        raw, body = bodies
        ctype = (wire.header(raw_headers, b"content-type") or "").split(";", 1)[0].strip().lower()
        fault = attempt.fault
        # partial with only ``keep``: the body text is cut, and cut short on the wire
        cut = fault is not None and fault.type == "partial" and not getattr(fault, "path", None)
        cut = cut and getattr(fault, "items", None) is None
        value: Any = body
        is_json = not cut and (ctype == "application/json" or ctype.endswith("+json"))
        if is_json:
            try:
                value = json.loads(body)
            except ValueError:
                is_json = False
        if not is_json:
            try:
                value = body.decode("utf-8")
            except UnicodeDecodeError:
                value = body
        try:
            out = attempt.transform(value)
        except Exception as exc:
            return await self._fail(attempt, exc, send)
        if out is value:  # no data fault after all: the upstream's answer as it came
            await answers.respond(send, status, wire.response_headers(raw_headers, rewritten=False), raw)
            attempt.succeed(out)
            return status
        headers = wire.response_headers(raw_headers, rewritten=True)
        if cut and isinstance(out, str | bytes):
            # the whole length announced, the first bytes sent, then the connection closes
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": answers.to_bytes(out), "more_body": True})
            attempt.succeed(out)
            return status
        elif isinstance(out, str | bytes) and not is_json:
            data = answers.to_bytes(out)
        else:
            data = json.dumps(out, default=str).encode()
            if not is_json:
                headers = [h for h in headers if h[0].lower() != b"content-type"] + list(answers.JSON)
        headers.append((b"content-length", str(len(data)).encode()))
        await answers.respond(send, status, headers, data)
        attempt.succeed(out)
        return status
