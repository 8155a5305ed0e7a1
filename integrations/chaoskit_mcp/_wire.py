"""The JSON-RPC message types of the installed ``mcp`` SDK, 1.x or 2.x, behind one set of names.

mcp 2.x keeps the wire types in the ``mcp_types`` package and hands a transport's message over as the
concrete model; mcp 1.x keeps them in ``mcp.types`` and wraps each in a ``JSONRPCMessage`` root model. The
relay works on the concrete models: :func:`wrap` and :func:`unwrap` cross the SDK's transports, :func:`parse`
reads one line. Which SDK is installed is read from its distribution's version, not from what imports (an
environment may hold ``mcp_types`` beside an mcp 1.x).
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any, Final, cast

from mcp.shared.message import SessionMessage

from . import _compat

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "PARSE_ERROR",
    "SDK_MAJOR",
    "ErrorData",
    "JSONRPCError",
    "JSONRPCMessage",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "http_client",
    "parse",
    "unwrap",
    "wrap",
]

#: the major release of the installed ``mcp`` (1 or 2)
SDK_MAJOR: Final = (_compat._release(importlib.metadata.version(_compat.MCP.distribution)) or (2,))[0]
_WIRE: Any = importlib.import_module("mcp_types" if SDK_MAJOR >= 2 else "mcp.types")

if TYPE_CHECKING:  # the types are checked against mcp 2.x; at run time they are the installed SDK's
    from mcp_types import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        PARSE_ERROR,
        ErrorData,
        JSONRPCError,
        JSONRPCMessage,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
    )
else:
    INTERNAL_ERROR, INVALID_PARAMS, PARSE_ERROR = _WIRE.INTERNAL_ERROR, _WIRE.INVALID_PARAMS, _WIRE.PARSE_ERROR
    ErrorData, JSONRPCError, JSONRPCRequest = _WIRE.ErrorData, _WIRE.JSONRPCError, _WIRE.JSONRPCRequest
    JSONRPCNotification, JSONRPCResponse = _WIRE.JSONRPCNotification, _WIRE.JSONRPCResponse
    JSONRPCMessage = JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError

#: 2.x: the TypeAdapter of the message union; 1.x: the ``JSONRPCMessage`` root model around one
_ADAPTER: Any = getattr(_WIRE, "jsonrpc_message_adapter", None)
_ROOT: Any = _WIRE.JSONRPCMessage if SDK_MAJOR < 2 else None


def parse(line: bytes | str) -> JSONRPCMessage:
    """One JSON-RPC message from its JSON text (``ValueError`` when it is not one)."""
    if _ROOT is not None:
        return cast("JSONRPCMessage", _ROOT.model_validate_json(line).root)
    return cast("JSONRPCMessage", _ADAPTER.validate_json(line, by_name=False))


def wrap(message: JSONRPCMessage) -> SessionMessage:
    """The SDK transport's item for ``message`` (1.x: inside its root model)."""
    return SessionMessage(_ROOT(message) if _ROOT is not None else message)


def unwrap(item: SessionMessage) -> JSONRPCMessage:
    """The concrete message of an SDK transport's item."""
    return cast("JSONRPCMessage", getattr(item.message, "root", item.message))


def http_client(timeout: float, read: float) -> Any:
    """The HTTP client the SDK's Streamable HTTP transport takes: ``httpx2`` for mcp 2.x, ``httpx`` for 1.x."""
    http: Any = importlib.import_module("httpx2" if SDK_MAJOR >= 2 else "httpx")
    return http.AsyncClient(timeout=http.Timeout(timeout, read=read))
