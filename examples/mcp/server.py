"""A small real MCP server (official SDK) for the proxy example: look up an order, refund it."""

from __future__ import annotations

from mcp.types import ToolAnnotations

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x (what langchain-mcp-adapters requires) names the same server FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer

app = MCPServer("orders")

ORDERS = {
    "A-1001": {"order_id": "A-1001", "customer": "Dana", "total": 42.5, "status": "delivered"},
    "A-1002": {"order_id": "A-1002", "customer": "Lee", "total": 19.0, "status": "shipped"},
}
REFUNDS: list[dict[str, object]] = []


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id."""
    order = ORDERS.get(order_id)
    if order is None:
        raise ValueError(f"no order {order_id}")
    return order


@app.tool(annotations=ToolAnnotations(destructiveHint=True))
def refund_order(order_id: str, amount: float, idempotency_key: str = "") -> str:
    """Refund an amount of an order (pass an idempotency_key so that a retry cannot refund twice)."""
    if idempotency_key and any(r["key"] == idempotency_key for r in REFUNDS):
        return f"refund {idempotency_key} already done"
    REFUNDS.append({"order_id": order_id, "amount": amount, "key": idempotency_key})
    return f"refunded {amount:.2f} on order {order_id}"


@app.resource("orders://policy")
def policy() -> str:
    """The refund policy."""
    return "Refunds up to the order total, once per order."


@app.prompt()
def refund_request(order_id: str) -> str:
    """A prompt asking for a refund of an order."""
    return f"Please refund order {order_id} in full."


if __name__ == "__main__":
    app.run()
