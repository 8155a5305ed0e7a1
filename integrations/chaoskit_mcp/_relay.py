"""One proxied MCP session: every message passes through; tools/call goes through the engine.

The relay works on JSON-RPC messages, not on an SDK ``Server``: whatever the upstream says (capabilities,
pagination, resources, prompts, server-to-client requests, notifications) reaches the client unchanged, except
where chaos acts. Every client request gets exactly one response, also when the upstream is gone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._calls import Message, ToolCalls, UpstreamGone
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
        self._write: Any = None
        self._listed = False
        self._listing: anyio.Event | None = None
        self._lists_change = any(
            f.type == "list_changed" or (f.type == "tool_disappears" and f.params.get("notify"))
            for f in decider.by_index.values()
        )

    async def run(self, read: Any, write: Any) -> None:
        """Serve until the client's stream ends; then stop the upstream (always, also when cancelled)."""
        self._write = write
        try:
            async with anyio.create_task_group() as tg:
                try:
                    await self.upstream.start()
                except UpstreamGone as exc:
                    log.error("chaoskit mcp-proxy: %s", exc)
                else:
                    tg.start_soon(self._pump_upstream)
                async for item in read:
                    if isinstance(item, Exception):
                        await self._send(
                            JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=str(item)))
                        )
                        continue
                    message = unwrap(item)
                    if isinstance(message, JSONRPCRequest):
                        if message.method == "tools/call":
                            tg.start_soon(self._tool_call, message)
                        elif message.method in _WATCHED:
                            tg.start_soon(self._watched, message)
                        else:
                            await self._forward_request(message)
                    else:
                        await self._forward(message)
                # the client is gone: answer nothing more, stop the upstream
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.upstream.stop()

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

    async def _request(self, request: JSONRPCRequest) -> Message:
        waiter = self._waiters[request.id] = _Waiter()
        try:
            await self.upstream.send(request)
            await waiter.event.wait()
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

    async def _watched(self, request: JSONRPCRequest) -> None:
        try:
            response = await self._request(request)
        except UpstreamGone as exc:
            await self._send(self._gone_error(request.id, str(exc)))
            return
        if isinstance(response, JSONRPCResponse):
            if request.method == "initialize":
                response = await self._initialize(response)
            elif request.method == "tools/list":
                response = self._tools_list(response)
        await self._send(response)

    async def _initialize(self, response: JSONRPCResponse) -> JSONRPCResponse:
        fault = self.decider.slow_initialize()
        if fault is not None:
            delay = float(fault.params["delay_s"])
            log.warning(
                "chaoskit mcp-proxy: slow_initialize (fault #%d): initialize answered after %gs", fault.index, delay
            )
            await anyio.sleep(delay)
        if not self._lists_change:
            return response
        # a client listens for tools/list_changed only from a server that says it sends it
        result = dict(response.result)
        caps = dict(result.get("capabilities") or {})
        caps["tools"] = {**(caps.get("tools") or {}), "listChanged": True}
        result["capabilities"] = caps
        return JSONRPCResponse(jsonrpc="2.0", id=response.id, result=result)

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

    async def _tool_call(self, request: JSONRPCRequest) -> None:
        async def forward() -> Message:
            return await self._request(request)

        if not self._listed:
            await self._learn_tools()

        outcome = await self.calls.call(request, forward, self.decider, gone=self.gone_tools, session=self.session)
        await self._send(outcome.response)
        # recorded once the answer is on its way: the span's export never delays the agent
        outcome.finish()
        if outcome.list_changed:
            if outcome.fault is not None:
                self.gone_tools.update(dict.fromkeys(outcome.drop, outcome.fault))
            await self._send(JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed"))
