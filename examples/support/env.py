"""The in-memory backend of the support agent and its three tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool, tool

__all__ = ["SupportEnv", "make_tools"]


def _orders() -> dict[str, dict[str, Any]]:
    return {
        "4832": {
            "order_id": "4832",
            "customer_email": "ana@example.com",
            "amount": 25.0,
            "status": "pending",
            "items": ["kettle"],
        },
        "5120": {
            "order_id": "5120",
            "customer_email": "bo@example.com",
            "amount": 40.0,
            "status": "shipped",
            "items": ["lamp"],
        },
    }


@dataclass
class SupportEnv:
    """Orders, refunds and e-mails of one agent run; a fresh one per agent, so runs never share state."""

    orders: dict[str, dict[str, Any]] = field(default_factory=_orders)
    refunds: list[dict[str, Any]] = field(default_factory=list)
    emails: list[dict[str, str]] = field(default_factory=list)
    by_key: dict[str, dict[str, Any]] = field(default_factory=dict)


def make_tools(env: SupportEnv, *, chaos: bool = True) -> list[BaseTool]:
    """The agent's tools over ``env``; with ``chaos`` they go through chaoskit and use the active plan."""

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id: customer e-mail, amount, status, items."""
        if order_id not in env.orders:
            raise KeyError(f"no order {order_id}")
        return dict(env.orders[order_id])

    @tool
    def issue_refund(order_id: str, amount: float, idempotency_key: str | None = None) -> dict[str, Any]:
        """Refund an order in full. Pass an idempotency_key so a retried refund is not paid twice."""
        if idempotency_key is not None and idempotency_key in env.by_key:
            return dict(env.by_key[idempotency_key])  # the same request again: the first answer, no new write
        order = env.orders.get(order_id)
        if order is None:
            raise KeyError(f"no order {order_id}")
        if order["status"] != "pending":
            raise ValueError(f"order {order_id} is not pending (status: {order['status']})")
        order["status"] = "refunded"
        refund = {"refund_id": f"R-{len(env.refunds) + 1}", "order_id": order_id, "amount": amount}
        env.refunds.append(refund)
        if idempotency_key is not None:
            env.by_key[idempotency_key] = refund
        return dict(refund)

    @tool
    def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
        """Send an e-mail to a customer."""
        env.emails.append({"to": to, "subject": subject, "body": body})
        return {"sent": True, "to": to}

    tools: list[BaseTool] = [lookup_order, issue_refund, send_email]
    if not chaos:
        return tools
    from chaoskit_langchain import chaos_tools

    return chaos_tools(tools, irreversible=["issue_refund"], idempotency_args={"issue_refund": "idempotency_key"})
