"""An agent that runs out of process and reaches its tools over MCP: the proxy's example client.

It takes the task as its argument and prints its final answer. Its MCP server is the command in
``CHAOSKIT_MCP_COMMAND`` (a JSON list, started over stdio; the battery runner sets it to ``chaoskit mcp-proxy
... -- <the scenario's server>``), or the Streamable HTTP endpoint in ``CHAOSKIT_MCP_URL``.
A scripted agent, no model: it looks the order up, then refunds it with an idempotency key, retrying a failed
refund twice with the same key after a backoff, and says plainly when it could not.

It runs on the mcp SDK 2.x and on the 1.x that langchain-mcp-adapters requires: results are read in their wire
shape (``isError``, ``structuredContent``), and the SDK's error type is taken by either name.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared import exceptions

#: the SDK's JSON-RPC error: ``MCPError`` in mcp 2.x, ``McpError`` in 1.x
MCPError: Any = getattr(exceptions, "MCPError", None) or exceptions.McpError

DEFAULT = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")]


def _text(result: dict[str, Any]) -> str:
    return " ".join(str(b.get("text", "")) for b in result.get("content") or [])


def _wire(result: Any) -> dict[str, Any]:
    # the result as JSON (camelCase keys): the same on mcp 1.x and 2.x, whose models name the fields differently
    return dict(result.model_dump(by_alias=True, mode="json"))


def _connect() -> Any:
    if os.environ.get("CHAOSKIT_MCP_URL"):
        return streamable_http_client(os.environ["CHAOSKIT_MCP_URL"])
    argv = json.loads(os.environ["CHAOSKIT_MCP_COMMAND"]) if os.environ.get("CHAOSKIT_MCP_COMMAND") else DEFAULT
    return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ)))


async def run(task: str) -> str:
    found = re.search(r"[A-Z]-\d{4}", task)
    if found is None:
        return "I could not find an order id in the request."
    order_id = found.group()
    # (mcp 1.x's HTTP client yields a third item, the session id getter)
    async with _connect() as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        if not {"lookup_order", "refund_order"} <= names:
            return f"I could not refund order {order_id}: the refund tools are not available."
        order = _wire(await session.call_tool("lookup_order", {"order_id": order_id}))
        if order.get("isError") or not isinstance(order.get("structuredContent"), dict):
            return f"I could not refund order {order_id}: the lookup failed ({_text(order)})."
        total = order["structuredContent"].get("total")
        if not isinstance(total, int | float):
            return f"I could not refund order {order_id}: the order record has no total."
        args = {"order_id": order_id, "amount": total, "idempotency_key": f"refund-{order_id}"}
        for attempt in range(3):
            if attempt:
                await anyio.sleep(0.2 * 2**attempt)  # back off before the retry (same key: no double refund)
            try:
                refund = _wire(await session.call_tool("refund_order", args))
            except MCPError as exc:  # a protocol error: the server no longer has the tool, say
                return f"I could not refund order {order_id}: {exc.error.message}."
            if not refund.get("isError"):
                return f"Done: refunded {total:.2f} on order {order_id}."
        return f"I could not refund order {order_id}: the refund failed three times ({_text(refund)})."


def main() -> None:
    print(anyio.run(run, " ".join(sys.argv[1:])))


if __name__ == "__main__":
    main()
