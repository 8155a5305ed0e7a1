"""The ``tools/call {tool}`` CLIENT span toward the upstream server, and the trace context it carries there.

The OpenTelemetry MCP conventions (semantic-conventions-genai, ``docs/gen-ai/mcp.md``) describe a call from the
client's side as a CLIENT span named ``tools/call {tool}`` whose context travels in the request's
``params._meta`` (``traceparent``, ``tracestate``, ``baggage``, unprefixed), so that the server's own span is its
child. The proxy keeps its ``execute_tool {tool}`` attempt span (what chaoskit grades) and puts this span under
it for the one message it really sends: a call the proxy answers itself (an injected error, timeout or fake
value, a tool that disappeared) sends nothing, so it has no CLIENT span. The span carries no ``chaoskit.*``
attribute and no ``gen_ai.operation.name``: the readers grade attempts only, and a GenAI backend does not show
the call twice as a tool execution.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
from opentelemetry import propagate
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, StatusCode

import chaoskit.semconv as sc
from chaoskit import telemetry

from ._wire import JSONRPCError, JSONRPCRequest, JSONRPCResponse

__all__ = ["http_peer", "stdio_peer", "upstream_call"]

Message = JSONRPCResponse | JSONRPCError


def stdio_peer() -> dict[str, Any]:
    """The transport attributes of a server over stdio: a pipe, no address (the conventions' stdio example)."""
    return {sc.NETWORK_TRANSPORT: "pipe"}


def http_peer(url: str) -> dict[str, Any]:
    """The transport attributes of a Streamable HTTP server: TCP, HTTP, and the host and port of its URL."""
    parts = urlsplit(url)
    attrs: dict[str, Any] = {sc.NETWORK_TRANSPORT: "tcp", sc.NETWORK_PROTOCOL_NAME: "http"}
    if parts.hostname:
        attrs[sc.SERVER_ADDRESS] = parts.hostname
        with contextlib.suppress(ValueError):  # a port out of range: the address alone
            attrs[sc.SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
    return attrs


def _with_context(request: JSONRPCRequest, span: Any) -> JSONRPCRequest:
    """``request`` with the span's context in ``params._meta`` (the client's other ``_meta`` keys kept)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=otel_trace.set_span_in_context(span))
    if not carrier:
        return request  # no valid context (tracing off, no parent): the request goes as the client sent it
    params = dict(request.params or {})
    meta = params.get("_meta")
    params["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), **carrier}
    data = request.model_dump(by_alias=True, exclude_unset=True)
    data["params"] = params
    return type(request).model_validate(data)


def _record(span: Any, response: Message) -> None:
    if isinstance(response, JSONRPCError):
        code = str(response.error.code)
        span.set_attributes({sc.ERROR_TYPE: code, sc.RPC_RESPONSE_STATUS_CODE: code})
        span.set_status(StatusCode.ERROR, response.error.message)
    elif isinstance(response.result, Mapping) and response.result.get("isError") is True:
        span.set_attribute(sc.ERROR_TYPE, sc.MCP_TOOL_ERROR)
        span.set_status(StatusCode.ERROR)


@contextlib.contextmanager
def _client_span(attempt_span: Any, name: str, request: JSONRPCRequest, peer: Mapping[str, Any]) -> Iterator[Any]:
    parent = otel_trace.set_span_in_context(attempt_span)
    span = telemetry.get_tracer().start_span(f"tools/call {name}", context=parent, kind=SpanKind.CLIENT)
    try:
        if span.is_recording():
            attrs: dict[str, Any] = {sc.MCP_METHOD_NAME: "tools/call", sc.GEN_AI_TOOL_NAME: name, **peer}
            if request.id is not None:
                attrs[sc.JSONRPC_REQUEST_ID] = str(request.id)
            span.set_attributes(attrs)
        yield span
    except BaseException as exc:  # the upstream went away, or the client cancelled: the message was sent
        if span.is_recording():
            span.set_attribute(sc.ERROR_TYPE, type(exc).__qualname__)
            # a cancellation's own text names a task and a cancel scope: say what happened instead
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            why = "cancelled before the server answered" if cancelled else str(exc) or type(exc).__qualname__
            span.set_status(StatusCode.ERROR, why)
        raise
    finally:
        span.end()


async def upstream_call(
    attempt_span: Any,
    name: str,
    request: JSONRPCRequest,
    forward: Callable[[JSONRPCRequest], Awaitable[Message]],
    peer: Mapping[str, Any],
) -> Message:
    """Send ``request`` through ``forward`` under a ``tools/call {name}`` CLIENT span, a child of the attempt's
    span, with its context in ``params._meta``; ``peer``: the transport, session and protocol attributes."""
    if attempt_span is None or not attempt_span.get_span_context().is_valid:
        return await forward(request)  # chaoskit's tracing is off: no span, the request as the client sent it
    with _client_span(attempt_span, name, request, peer) as span:
        response = await forward(_with_context(request, span))
        if span.is_recording():
            _record(span, response)
        return response
