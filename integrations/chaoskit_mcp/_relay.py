"""One proxied MCP session: every message passes through; tools/call goes through the engine.

The relay works on JSON-RPC messages, not on an SDK ``Server``: whatever the upstream says (capabilities,
pagination, resources, prompts, server-to-client requests, notifications) reaches the client unchanged, except
where chaos acts. Every client request gets exactly one response, also when the upstream is gone, unless the
client cancels it (``notifications/cancelled``): then it gets none, as the MCP spec says. A cancel never
overtakes its request: one for a request still held by the proxy withdraws it (neither reaches the server).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from opentelemetry.trace import SpanKind

import chaoskit.semconv as sc
from chaoskit import telemetry

from ._calls import Held, Message, RequestCancelled, ToolCalls, UpstreamGone
from ._plan import ProtocolDecider, ProtocolFault
from ._upstream import Upstream
from ._wire import (
    INTERNAL_ERROR,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    unwrap,
    wrap,
)

__all__ = ["Relay"]

log = logging.getLogger("chaoskit.mcp")

#: the requests whose responses the proxy reads (or rewrites) before the client gets them
_WATCHED = frozenset({"initialize", "tools/list", "tools/call"})


@dataclass
class _Waiter:
    event: anyio.Event = field(default_factory=anyio.Event)
    response: Message | None = None
    gone: str | None = None


def _key(request_id: Any) -> Any:
    # a JSON-RPC id is a string or a number; anything else (a malformed cancel) matches no request
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


class Relay:
    """Relay one client session to one upstream, with the plan's faults on tools/call."""

    def __init__(
        self, calls: ToolCalls, upstream: Upstream, decider: ProtocolDecider, *, session: str | None = None
    ) -> None:
        self.calls = calls
        self.upstream = upstream
        self.decider = decider
        self.session = session
        #: tools the session no longer has, and the protocol fault that took each away
        self.gone_tools: dict[str, ProtocolFault] = {}
        self._waiters: dict[Any, _Waiter] = {}
        self._open: dict[Any, str] = {}
        #: requests handled in a task, by id, until their answer is on its way
        self._held: dict[Any, Held] = {}
        #: ids the client cancelled after they reached the upstream: their late answers are dropped
        self._dropped: set[Any] = set()
        self._write: Any = None
        self._listed = False
        #: the protocol version the upstream answered ``initialize`` with (``mcp.protocol.version``)
        self.protocol_version: str | None = None
        self._listing: anyio.Event | None = None
        self._lists_change = any(
            f.type == "list_changed" or (f.type == "tool_disappears" and f.params.get("notify"))
            for f in decider.by_index.values()
        )

    async def run(self, read: Any, write: Any) -> None:
        """Serve until the client's stream ends; then stop the upstream (always, also when cancelled)."""
        self._write = write
        try:
            # started before the task group: an HTTP upstream's own task group must close after this one
            try:
                await self.upstream.start()
                started = True
            except UpstreamGone as exc:
                log.error("chaoskit mcp-proxy: %s", exc)
                started = False
            async with anyio.create_task_group() as tg:
                if started:
                    tg.start_soon(self._pump_upstream)
                await self._read_client(read, tg)
                # the client is gone: answer nothing more, stop the upstream
                for held in list(self._held.values()):
                    held.cancel(RequestCancelled("the client closed the session before the answer"))
                tg.cancel_scope.cancel()
        finally:
            await self.upstream.stop()  # a stdio upstream shields its own stop

    async def _read_client(self, read: Any, tg: Any) -> None:
        # a stream the transport closed (an HTTP session's DELETE, a stop) ends the session like EOF does
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for item in read:
                if isinstance(item, Exception):
                    error = ErrorData(code=PARSE_ERROR, message=str(item))
                    await self._send(JSONRPCError(jsonrpc="2.0", id=None, error=error))
                    continue
                message = unwrap(item)
                if isinstance(message, JSONRPCRequest):
                    self._dropped.discard(_key(message.id))
                    if message.method == "tools/call":
                        tg.start_soon(self._tool_call, message, self._hold(message))
                    elif message.method in _WATCHED:
                        tg.start_soon(self._watched, message, self._hold(message))
                    else:
                        await self._forward_request(message)
                elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                    await self._cancelled(message)
                else:
                    await self._forward(message)

    def _hold(self, request: JSONRPCRequest) -> Held:
        held = self._held[request.id] = Held()
        return held

    async def _cancelled(self, note: JSONRPCNotification) -> None:
        params = note.params or {}
        request_id = _key(params.get("requestId"))
        reason = params.get("reason")
        held = self._held.pop(request_id, None)
        if held is not None:
            why = f"the client cancelled the request ({reason})" if reason else "the client cancelled the request"
            held.cancel(RequestCancelled(why))
            if held.sent:
                self._dropped.add(request_id)
                await self._forward(note)
            # else: withdrawn before it reached the server, which hears of neither
            return
        if self._open.pop(request_id, None) is not None:
            self._dropped.add(request_id)
        await self._forward(note)

    # -- to the client ---------------------------------------------------------------------------------

    async def _send(self, message: JSONRPCMessage) -> None:
        try:
            await self._write.send(wrap(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("chaoskit mcp-proxy: the client is gone; dropped %s", type(message).__name__)

    def _gone_error(self, request_id: Any, reason: str) -> JSONRPCError:
        return JSONRPCError(
            jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=f"chaoskit mcp-proxy: {reason}")
        )

    # -- to the upstream -------------------------------------------------------------------------------

    async def _forward(self, message: JSONRPCMessage) -> None:
        try:
            await self.upstream.send(message)
        except UpstreamGone:
            pass  # a notification or a response to the server's request: nobody waits for it

    async def _forward_request(self, request: JSONRPCRequest) -> None:
        self._open[request.id] = request.method
        try:
            await self.upstream.send(request)
        except UpstreamGone as exc:
            self._open.pop(request.id, None)
            if request.method == "ping":
                await self._send(JSONRPCResponse(jsonrpc="2.0", id=request.id, result={}))
            else:
                await self._send(self._gone_error(request.id, str(exc)))

    async def _request(self, request: JSONRPCRequest, held: Held | None = None) -> Message:
        waiter = self._waiters[request.id] = _Waiter()
        sent = False
        try:
            # a request cancelled while held is never sent: nothing may write it after its cancel
            await anyio.lowlevel.checkpoint_if_cancelled()
            sent = True
            if held is not None:
                held.sent = True
            await self.upstream.send(request)
            await waiter.event.wait()
        except BaseException:
            if sent and waiter.response is None:
                self._dropped.add(_key(request.id))  # its answer, if it comes, is nobody's
            raise
        finally:
            self._waiters.pop(request.id, None)
        if waiter.response is None:
            raise UpstreamGone(waiter.gone or "the upstream is gone", delivered=True)
        return waiter.response

    async def _pump_upstream(self) -> None:
        async for message in self.upstream.messages():
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                waiter = self._waiters.get(message.id)
                if waiter is not None:
                    waiter.response = message
                    waiter.event.set()
                    continue
                self._open.pop(message.id, None)
                if message.id in self._dropped:
                    self._dropped.discard(message.id)
                    continue  # the late answer to a request the client cancelled
            await self._send(message)
        reason = self.upstream.gone or "the upstream is gone"
        log.warning("chaoskit mcp-proxy: %s", reason)
        for waiter in list(self._waiters.values()):
            waiter.gone = reason
            waiter.event.set()
        for request_id in list(self._open):
            self._open.pop(request_id, None)
            await self._send(self._gone_error(request_id, reason))

    # -- the requests chaos acts on ---------------------------------------------------------------------

    def _release(self, request: JSONRPCRequest, held: Held) -> bool:
        # the answer goes out now: a cancel from here on is too late (the spec lets the answer stand)
        if held.stop is not None:
            return False
        if self._held.get(request.id) is held:
            del self._held[request.id]
        return True

    async def _watched(self, request: JSONRPCRequest, held: Held) -> None:
        with held.scope:
            try:
                response = await self._request(request, held)
            except UpstreamGone as exc:
                response = self._gone_error(request.id, str(exc))
            if isinstance(response, JSONRPCResponse):
                if request.method == "initialize":
                    version = response.result.get("protocolVersion")
                    self.protocol_version = version if isinstance(version, str) else None
                    response = await self._initialize(response)
                elif request.method == "tools/list":
                    response = self._tools_list(response)
            if self._release(request, held):
                await self._send(response)

    async def _initialize(self, response: JSONRPCResponse) -> JSONRPCResponse:
        fault = self.decider.slow_initialize()
        if fault is not None:
            delay = float(fault.params["delay_s"])
            log.warning(
                "chaoskit mcp-proxy: slow_initialize (fault #%d): initialize answered after %gs", fault.index, delay
            )
            self._record_slow_initialize(fault, delay)
            await anyio.sleep(delay)
        if not self._lists_change:
            return response
        # a client listens for tools/list_changed only from a server that says it sends it
        result = dict(response.result)
        caps = dict(result.get("capabilities") or {})
        caps["tools"] = {**(caps.get("tools") or {}), "listChanged": True}
        result["capabilities"] = caps
        return JSONRPCResponse(jsonrpc="2.0", id=response.id, result=result)

    def _record_slow_initialize(self, fault: ProtocolFault, delay: float) -> None:
        # a span of its own, ended (and in the span file) before the delay: a client that gives up on
        # initialize and kills the proxy still leaves a trace saying why
        span = telemetry.get_tracer().start_span("initialize", kind=SpanKind.SERVER)
        if span.is_recording():
            attrs: dict[str, Any] = {
                sc.MCP_METHOD_NAME: "initialize",
                sc.FAULT_TYPE: fault.type,
                sc.FAULT_INDEX: fault.index,
                sc.FAULT_INJECTED: True,
                sc.FAULT_SUMMARY: f"slow_initialize (#{fault.index}): initialize answered after {delay:g}s",
            }
            if self.session:
                attrs[sc.MCP_SESSION_ID] = self.session
            span.set_attributes(attrs)
        span.end()

    def _tools_list(self, response: JSONRPCResponse) -> JSONRPCResponse:
        tools = response.result.get("tools")
        self.calls.learn(tools)
        self._listed = True
        if not self.gone_tools or not isinstance(tools, list):
            return response
        kept = [t for t in tools if not (isinstance(t, dict) and t.get("name") in self.gone_tools)]
        return JSONRPCResponse(jsonrpc="2.0", id=response.id, result={**response.result, "tools": kept})

    async def _learn_tools(self) -> None:
        # a client may call a tool without listing first: the spec still gets its description and hints
        if self._listing is not None:
            await self._listing.wait()
            return
        self._listing = anyio.Event()
        ask = JSONRPCRequest(jsonrpc="2.0", id=f"chaoskit-mcp-proxy-{id(self)}-tools", method="tools/list")
        try:
            response = await self._request(ask)
            if isinstance(response, JSONRPCResponse):
                self.calls.learn(response.result.get("tools"))
        except UpstreamGone:
            pass
        finally:
            self._listed = True
            self._listing.set()

    def _peer(self) -> dict[str, Any]:
        # the attributes of a call's CLIENT span toward the upstream: its transport, session and protocol version
        peer = self.upstream.peer()
        if self.protocol_version:
            peer[sc.MCP_PROTOCOL_VERSION] = self.protocol_version
        return peer

    async def _tool_call(self, request: JSONRPCRequest, held: Held) -> None:
        async def forward(sent: JSONRPCRequest) -> Message:
            return await self._request(sent, held)

        if not self._listed:
            # outside the call's scope: a cancel meanwhile waits for the attempt, so calls count in arrival order
            await self._learn_tools()
        outcome = None
        with held.scope:
            outcome = await self.calls.call(
                request, forward, self.decider, gone=self.gone_tools, session=self.session, held=held, peer=self._peer()
            )
        if outcome is None:
            return  # cancelled: its span says so
        if not self._release(request, held):
            if held.stop is not None:
                outcome.cancel(held.stop)
            return
        # the span is in the file before the answer leaves: a client that kills the proxy on the answer keeps it
        outcome.finish()
        await self._send(outcome.response)
        if outcome.list_changed:
            if outcome.fault is not None:
                self.gone_tools.update(dict.fromkeys(outcome.drop, outcome.fault))
            await self._send(JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed"))
