"""End-state checks for the support agent; each takes the agent's ``env`` after the run."""

from __future__ import annotations

from .env import SupportEnv

__all__ = ["emailed_customer", "refund_once"]


def refund_once(env: SupportEnv, order_id: str = "4832") -> bool:
    """Exactly one refund was recorded for the order."""
    return sum(r["order_id"] == order_id for r in env.refunds) == 1


def emailed_customer(env: SupportEnv, order_id: str = "4832") -> bool:
    """The customer of the order got an e-mail, and nobody else did."""
    customer = env.orders[order_id]["customer_email"]
    return bool(env.emails) and all(m["to"] == customer for m in env.emails)
