"""The JSON-RPC message types of the installed ``mcp`` SDK, 1.x or 2.x, behind one set of names.

mcp 2.x keeps the wire types in the ``mcp_types`` package and hands a transport's message over as the
concrete model; mcp 1.x keeps them in ``mcp.types`` and wraps each in a ``JSONRPCMessage`` root model. The
relay works on the concrete models: :func:`wrap` and :func:`unwrap` cross the SDK's transports, :func:`parse`
reads one line. Which SDK is installed is read from its distribution's version, not from what imports (an
environment may hold ``mcp_types`` beside an mcp 1.x).
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any, Final

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

if TYPE_CHECKING or SDK_MAJOR >= 2:
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
        jsonrpc_message_adapter,
    )

    def parse(line: bytes | str) -> JSONRPCMessage:
        """One JSON-RPC message from its JSON text (``ValueError`` when it is not one)."""
        return jsonrpc_message_adapter.validate_json(line, by_name=False)  # type: ignore[no-any-return]

    def wrap(message: JSONRPCMessage) -> SessionMessage:
        """The SDK transport's item for ``message``."""
        return SessionMessage(message)

    def unwrap(item: SessionMessage) -> JSONRPCMessage:
        """The concrete message of an SDK transport's item."""
        return item.message

else:  # pragma: no cover - exercised by the mcp 1.x sub-run (tests/test_mcp_sdk1.py)
    from mcp.types import (  # type: ignore[attr-defined, no-redef]
        INTERNAL_ERROR,
        INVALID_PARAMS,
        PARSE_ERROR,
        ErrorData,
        JSONRPCError,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
    )
    from mcp.types import JSONRPCMessage as _Root  # type: ignore[attr-defined]

    JSONRPCMessage = JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError  # type: ignore[misc]

    def parse(line: bytes | str) -> Any:
        """One JSON-RPC message from its JSON text (``ValueError`` when it is not one)."""
        return _Root.model_validate_json(line).root

    def wrap(message: Any) -> SessionMessage:
        """The SDK transport's item for ``message`` (1.x: inside its root model)."""
        return SessionMessage(_Root(message))

    def unwrap(item: SessionMessage) -> Any:
        """The concrete message of an SDK transport's item."""
        return getattr(item.message, "root", item.message)


def http_client(timeout: float, read: float) -> Any:
    """The HTTP client the SDK's Streamable HTTP transport takes: ``httpx2`` for mcp 2.x, ``httpx`` for 1.x."""
    if SDK_MAJOR >= 2:
        import httpx2

        return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout, read=read))
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(timeout, read=read))
