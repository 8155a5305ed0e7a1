"""``chaoskit suggest`` for MCP: the tools a server lists (``tools/list``), read through the official SDK client.

Registered under the ``chaoskit.describers`` entry-point group; it recognises a
:class:`chaoskit.suggest.McpServer` (``chaoskit suggest --mcp "python server.py"``), starts the server, lists its
tools and stops it. No tool is called. The annotations are read as the proxy reads them: only an explicit
``destructiveHint: true`` marks a write irreversible (MCP's default of true would make every unannotated tool
one), ``readOnlyHint: true`` marks a read and ``idempotentHint: true`` an idempotent write.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from chaoskit.suggest import McpServer, Param, SuggestError, ToolInfo

from . import _compat

__all__ = ["describe"]


def _tool(info: dict[str, Any], source: str) -> ToolInfo:
    schema = info.get("inputSchema") if isinstance(info.get("inputSchema"), dict) else {}
    if not isinstance(schema, dict) or not isinstance(schema.get("properties", {}), dict):
        raise SuggestError(
            f"MCP tool {info.get('name')!r}: its inputSchema cannot be read (expected a JSON object schema)"
        )
    required = set(schema.get("required") or [])
    params = tuple(
        Param(str(n), p.get("type") if isinstance(p, dict) else None, n in required)
        for n, p in schema.get("properties", {}).items()
    )
    notes = info.get("annotations") or {}
    read_only = notes.get("readOnlyHint") is True
    return ToolInfo(
        name=str(info["name"]),
        description=(info.get("description") or "").strip().split("\n")[0] or None,
        params=params,
        result=info.get("outputSchema") if isinstance(info.get("outputSchema"), dict) else None,
        irreversible=True if notes.get("destructiveHint") is True and not read_only else (False if read_only else None),
        idempotent=True if notes.get("idempotentHint") is True and not read_only else None,
        source=source,
        replaces_result=True,
    )


async def _list(server: McpServer) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=server.command[0], args=list(server.command[1:]))
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        listed = await session.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]


def describe(obj: Any) -> list[ToolInfo] | None:
    """The ``chaoskit.describers`` entry point: the tools of an MCP server command; None for anything else."""
    if not isinstance(obj, McpServer):
        return None
    shown = " ".join(obj.command)
    try:
        _compat.check_installed()
    except Exception as exc:  # no SDK, or an unsupported release: say which to install
        raise SuggestError(f"--mcp {shown}: {exc}") from None
    # a thread of its own: suggest may run where an event loop is already running (a notebook, a test)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(asyncio.run, asyncio.wait_for(_list(obj), obj.timeout_s))
        try:
            tools = future.result()
        except TimeoutError:
            raise SuggestError(f"--mcp {shown}: the server did not list its tools within {obj.timeout_s:g} s") from None
        except Exception as exc:
            cause: BaseException = exc
            while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
                cause = cause.exceptions[0]  # the SDK's task group wraps the one error that matters
            raise SuggestError(
                f"--mcp {shown}: cannot list the server's tools ({type(cause).__name__}: {cause}); "
                "is it an MCP server speaking stdio? its own error output is above"
            ) from None
    return [_tool(t, f"mcp:{shown}") for t in tools]
