"""Every ``tools/call`` through chaoskit's attempt engine, by its public adapter interface."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from opentelemetry import context as otel_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit.semconv as sc
from chaoskit import Plan
from chaoskit.engine import Attempt, SharedScope, ToolSpec, begin
from chaoskit.semconv import (
    JSONRPC_REQUEST_ID,
    MCP_METHOD_NAME,
    MCP_SESSION_ID,
    NETWORK_TRANSPORT,
    RPC_RESPONSE_STATUS_CODE,
)

from ._client import upstream_call
from ._content import error_result, fake_result, malformed, payload_of
from ._episodes import EpisodeCounts, trace_id_of, traceparent_of
from ._plan import ProtocolDecider, ProtocolFault
from ._wire import INVALID_PARAMS, ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

__all__ = [
    "JSONRPC_REQUEST_ID",
    "KEY_ARGUMENTS",
    "MCP_METHOD_NAME",
    "MCP_SESSION_ID",
    "NETWORK_TRANSPORT",
    "CallOutcome",
    "Held",
    "ProxyOptions",
    "RequestCancelled",
    "ToolCalls",
    "UnknownToolError",
    "UpstreamError",
    "UpstreamGone",
]


Message = JSONRPCResponse | JSONRPCError


class UpstreamGone(Exception):
    """The upstream MCP server is gone (it exited, crashed or closed the connection).

    ``delivered``: the request had reached the server before it went (the tool may have run).
    """

    def __init__(self, reason: str, *, delivered: bool = False) -> None:
        super().__init__(reason)
        self.delivered = delivered


class RequestCancelled(BaseException):
    """The client no longer waits for the request: it cancelled it, or closed the session first.

    A ``BaseException``, as ``asyncio.CancelledError`` is: the span's outcome is ``cancelled``, not ``error``.
    """


@dataclass
class Held:
    """A client request the relay works on in a task of its own (tools/call, initialize, tools/list): its
    cancel scope, whether it reached the upstream, and why the client stopped waiting for it."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    #: the request was written to the upstream (a cancel then follows it there)
    sent: bool = False
    #: why the client no longer waits for it (its span ends with this)
    stop: RequestCancelled | None = None

    def cancel(self, why: RequestCancelled) -> None:
        self.stop = why
        self.scope.cancel()


class UpstreamError(Exception):
    """The upstream answered a tools/call with a JSON-RPC error (forwarded to the client as it is)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code


class UnknownToolError(Exception):
    """A call to a tool the server no longer has (the ``tool_disappears`` fault)."""


@dataclass(frozen=True)
class ProxyOptions:
    """What the proxy knows about the upstream's tools beyond their MCP annotations."""

    irreversible: Collection[str] = ()
    idempotent: Collection[str] = ()
    idempotency_args: Mapping[str, str] = field(default_factory=dict)
    transport: str = "pipe"


@dataclass
class CallOutcome:
    """The response to send, what to record once it is sent, and whether the tool list changed."""

    response: Message
    finish: Callable[[], None]
    list_changed: bool = False
    #: tools the next tools/list leaves out (a ``list_changed`` fault's ``drop``), and that fault
    drop: tuple[str, ...] = ()
    fault: ProtocolFault | None = None
    attempt: Attempt | None = None

    def cancel(self, why: RequestCancelled) -> None:
        """Record the call as cancelled instead (the client cancelled it as its answer was ready)."""
        if self.attempt is not None:
            self.attempt.fail(why)


def _noop() -> None:
    return None


#: argument names taken as the idempotency key when the tool's input schema has one (and no option says else)
KEY_ARGUMENTS: Final = ("idempotency_key", "idempotencyKey", "request_id", "requestId")


def _key_argument(info: Mapping[str, Any]) -> str | None:
    schema = info.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return next((k for k in KEY_ARGUMENTS if isinstance(props, dict) and k in props), None)


class ToolCalls:
    """The tools/call path of one proxy: one :class:`ToolSpec` per tool, one attempt per call.

    With ``counts`` (and the ``plan``), a call made for an episode (a ``traceparent`` in its ``_meta`` or in
    ``$TRACEPARENT``) is counted in that episode's shared counts, whichever proxy process serves it
    (``_episodes``); its span hangs under that ``traceparent``."""

    def __init__(self, options: ProxyOptions, *, plan: Plan | None = None, counts: EpisodeCounts | None = None) -> None:
        self.options = options
        self.plan = plan
        self.counts = counts
        self._tools: dict[str, dict[str, Any]] = {}
        self._specs: dict[str, ToolSpec] = {}
        self._scopes: dict[str, SharedScope] = {}
        env = os.environ.get("TRACEPARENT")
        self._env_trace = trace_id_of(env)

    def learn(self, tools: Any) -> None:
        """Remember the tools a ``tools/list`` result names (descriptions and annotations shape the specs)."""
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"] not in self._specs:
                self._tools[tool["name"]] = tool

    def spec(self, name: str) -> ToolSpec:
        """The spec of tool ``name``, built at its first call from what ``tools/list`` said and the options."""
        spec = self._specs.get(name)
        if spec is None:
            info = self._tools.get(name, {})
            found = info.get("annotations")
            notes: dict[str, Any] = found if isinstance(found, dict) else {}
            description = info.get("description")
            spec = self._specs[name] = ToolSpec(
                name=name,
                # MCP's destructiveHint defaults to true, which would make every unannotated tool a write:
                # only an explicit hint (or --irreversible) counts
                irreversible=name in self.options.irreversible or notes.get("destructiveHint") is True,
                idempotent=name in self.options.idempotent
                or notes.get("idempotentHint") is True
                or notes.get("readOnlyHint") is True,
                idempotency_arg=self.options.idempotency_args.get(name) or _key_argument(info),
                description=description.splitlines()[0] if isinstance(description, str) and description else None,
                tool_type="extension",
            )
        return spec

    def _annotate(self, attempt: Attempt, request: JSONRPCRequest, session: str | None) -> None:
        span = attempt.span
        if span is None or not span.is_recording():
            return
        attrs: dict[str, Any] = {
            MCP_METHOD_NAME: "tools/call",
            JSONRPC_REQUEST_ID: str(request.id),
            NETWORK_TRANSPORT: self.options.transport,
        }
        if session:
            attrs[MCP_SESSION_ID] = session
        span.set_attributes(attrs)

    @staticmethod
    def _mark(attempt: Attempt, fault: ProtocolFault) -> None:
        span = attempt.span
        if span is not None and span.is_recording():
            span.set_attributes({sc.FAULT_TYPE: fault.type, sc.FAULT_INDEX: fault.index, sc.FAULT_INJECTED: True})

    async def call(
        self,
        request: JSONRPCRequest,
        forward: Callable[[JSONRPCRequest], Awaitable[Message]],
        protocol: ProtocolDecider,
        *,
        gone: dict[str, ProtocolFault],
        session: str | None = None,
        held: Held | None = None,
        peer: Mapping[str, Any] | None = None,
    ) -> CallOutcome:
        """Answer one tools/call: decide, fake or forward, transform; ``finish()`` records it.

        ``forward`` sends the request it is given to the upstream (under the ``tools/call`` CLIENT span, see
        ``_client``, whose context it carries in ``params._meta``); ``peer``: that span's transport, session
        and protocol attributes.

        Cancelled (``held.stop`` says why the client gave up), the span ends at once as ``cancelled``; a call
        cancelled before it reached the server did not run, and a cancel while the proxy held the call for its
        fault (a timeout's or latency's delay) is the fault's doing."""
        params = request.params or {}
        name = params.get("name")
        args = params.get("arguments")
        if not isinstance(name, str) or not name or not (args is None or isinstance(args, dict)):
            return CallOutcome(await forward(request), _noop)  # not a call chaoskit can name: the server answers it
        args = args or {}
        fault, attempt = self._begin(name, args, params, protocol, gone)
        self._annotate(attempt, request, session)
        if fault is not None and fault.type != "list_changed":
            attempt.skip(f"the MCP protocol fault {fault.type} (#{fault.index}) fires on this call")
        if fault is not None and fault.type != "tool_disappears":
            self._mark(attempt, fault)
        if fault is not None and fault.type == "tool_disappears":
            gone[name] = fault
        if name in gone:
            return self._unknown(attempt, request, gone[name], notify=fault is not None)
        try:
            response, value = await self._carry_out(attempt, request, forward, peer or {})
        except BaseException as exc:  # cancelled: the client gave up, or went away
            why = held.stop if held is not None else None
            if why is not None and held is not None and not held.sent:
                attempt.executed = False
                if attempt.fault is not None:
                    attempt.injected_exc = why  # the client gave up during the fault's delay: the fault did that
            attempt.fail(why if why is not None else exc)
            raise
        if fault is not None and fault.type == "malformed_result" and isinstance(response, JSONRPCResponse):
            response = JSONRPCResponse(
                jsonrpc="2.0", id=request.id, result=malformed(response.result, fault.params["shape"])
            )
        changed = fault is not None and fault.type == "list_changed"
        drop = tuple(fault.params.get("drop") or ()) if fault is not None and changed else ()
        if isinstance(value, BaseException):
            failed = value
            return CallOutcome(
                response, lambda: attempt.fail(failed), list_changed=changed, drop=drop, fault=fault, attempt=attempt
            )
        return CallOutcome(
            response, lambda: attempt.succeed(value), list_changed=changed, drop=drop, fault=fault, attempt=attempt
        )

    def _begin(
        self,
        name: str,
        args: dict[str, Any],
        params: Mapping[str, Any],
        protocol: ProtocolDecider,
        gone: dict[str, ProtocolFault],
    ) -> tuple[ProtocolFault | None, Attempt]:
        """Count the call and decide its faults: in the episode's shared counts when the call names an episode."""
        traceparent = traceparent_of(params)
        parent = _carrier(params, traceparent)
        trace_id = trace_id_of(traceparent) if traceparent else self._env_trace
        if trace_id is None or self.counts is None or self.plan is None:
            with _parent(parent):
                return protocol.decide(name, args), begin(self.spec(name), args, attach=False)
        scope = self._scopes.get(trace_id)
        if scope is None:
            scope = self._scopes[trace_id] = SharedScope(self.plan)
        # no await in here: the file stays locked only while the call is counted and decided
        with self.counts.hold(trace_id) as state, _parent(parent):
            fault = protocol.decide(name, args, counts=state.setdefault("protocol", {}))
            with scope.activate(state.setdefault("core", {})):
                attempt = begin(self.spec(name), args, attach=False)
            taken = state.setdefault("gone", {})
            if fault is not None and fault.type == "tool_disappears":
                taken[name] = fault.index
            for tool, index in taken.items():  # gone in an earlier session of the episode: gone here too
                if tool not in gone and index in protocol.by_index:
                    gone[tool] = protocol.by_index[index]
        return fault, attempt

    def _unknown(self, attempt: Attempt, request: JSONRPCRequest, fault: ProtocolFault, *, notify: bool) -> CallOutcome:
        # what a server answers for a tool it does not have: a JSON-RPC error, as the protocol says
        name = attempt.spec.name
        exc = UnknownToolError(f"Unknown tool: {name}")
        attempt.injected_exc = exc  # the proxy made this failure: the span says the fault was injected
        self._mark(attempt, fault)
        span = attempt.span
        if span is not None and span.is_recording():
            span.set_attribute(RPC_RESPONSE_STATUS_CODE, str(INVALID_PARAMS))
        error = JSONRPCError(jsonrpc="2.0", id=request.id, error=ErrorData(code=INVALID_PARAMS, message=str(exc)))
        changed = notify and fault.type == "tool_disappears" and bool(fault.params.get("notify"))
        return CallOutcome(error, lambda: attempt.fail(exc), list_changed=changed, attempt=attempt)

    async def _carry_out(
        self,
        attempt: Attempt,
        request: JSONRPCRequest,
        forward: Callable[[JSONRPCRequest], Awaitable[Message]],
        peer: Mapping[str, Any],
    ) -> tuple[Message, Any]:
        # (response, value recorded on success, or the exception recorded as the failure)
        name, request_id = attempt.spec.name, request.id
        try:
            pre = attempt.before
            if pre.sleep:
                await anyio.sleep(pre.sleep)
            if pre.exc is not None:
                raise pre.exc
            if not pre.call:
                result = fake_result(pre.value)
                return _ok(request_id, result), pre.value
            attempt.executed = True
            # the one message sent upstream: its CLIENT span (a fault the proxy answers itself sends none)
            response = await upstream_call(attempt.span, name, request, forward, peer)
            if isinstance(response, JSONRPCError):
                # the server refused the call as a protocol error (unknown tool, bad arguments): it did not run
                attempt.executed = False
                span = attempt.span
                if span is not None and span.is_recording():
                    span.set_attribute(RPC_RESPONSE_STATUS_CODE, str(response.error.code))
                return response, UpstreamError(response.error.code, response.error.message)
            result = response.result
            if result.get("isError") is True:
                return response, attempt.transform(result)
            payload, rebuild = payload_of(result)
            out = attempt.transform(payload)
            if out is payload:
                return response, out
            return _ok(request_id, rebuild(out)), out
        except Exception as exc:
            if isinstance(exc, UpstreamGone) and not exc.delivered:
                attempt.executed = False
            # errors are results: an injected error or timeout, an after_write failure, a crashed upstream
            return _ok(request_id, error_result(name, exc)), exc


def _carrier(params: Mapping[str, Any], traceparent: str | None) -> dict[str, str] | None:
    """The W3C trace context of the request's ``_meta``: its valid ``traceparent``, and its ``tracestate``."""
    if traceparent is None:
        return None
    meta = params.get("_meta")
    state = meta.get("tracestate") if isinstance(meta, Mapping) else None
    return {"traceparent": traceparent, **({"tracestate": state} if isinstance(state, str) else {})}


@contextlib.contextmanager
def _parent(carrier: dict[str, str] | None) -> Iterator[None]:
    """The client's span (the trace context of the request's ``_meta``) as the parent of the attempt's span (its
    ``tracestate`` kept, so that the CLIENT span passes it on to the server)."""
    if carrier is None:
        yield
        return
    token = otel_context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def _ok(request_id: Any, result: dict[str, Any]) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
