"""A real MCP server (the official SDK's) that reports the trace context it received, for the proxy's CLIENT span
tests: ``python tests/_mcp_meta_server.py [PORT]`` (stdio without a port, Streamable HTTP on 127.0.0.1:PORT).

- ``whoami`` answers, as JSON text, the ``traceparent``, ``tracestate`` and other keys of its request's
  ``params._meta``, and the ``Mcp-Session-Id`` header of the request (HTTP);
- ``broken`` fails (the SDK answers ``isError: true``);
- ``refuse`` raises the SDK's ``MCPError`` (the SDK answers a JSON-RPC error, code -32602);
- ``slow`` answers after 30 s (for a client that cancels the call meanwhile).

With ``SERVER_SPANS=FILE`` the server's own OpenTelemetry spans (the mcp 2.x SDK makes one per request, parented
by the context in ``_meta``) are written to FILE, one JSON object a line.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError


def _tracing(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the process's life
    provider = TracerProvider()
    exporter = ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


if os.environ.get("SERVER_SPANS"):
    _tracing(os.environ["SERVER_SPANS"])

app = MCPServer("meta-reporter")


def _meta(ctx: Context) -> dict[str, Any]:
    meta: Any = ctx.request_context.meta
    if meta is None:
        return {}
    return dict(meta) if isinstance(meta, dict) else meta.model_dump(by_alias=True, exclude_none=True)


@app.tool()
def whoami(ctx: Context) -> str:
    """Report the request's _meta and session."""
    headers = ctx.headers or {}
    return json.dumps({"meta": _meta(ctx), "session": headers.get("mcp-session-id")})


@app.tool()
def broken() -> str:
    """Always fails."""
    raise ValueError("broken on purpose")


@app.tool()
def refuse() -> str:
    """Always refused as a protocol error."""
    raise MCPError(code=-32602, message="refused on purpose")


@app.tool()
async def slow() -> str:
    """Answers after 30 s."""
    import anyio

    await anyio.sleep(30)
    return "late"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        app.run()
