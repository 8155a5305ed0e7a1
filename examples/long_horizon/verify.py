"""The end-state oracle of the long-horizon tasks: one order per low SKU the task named, of the right size."""

from __future__ import annotations

from typing import Any

from examples.long_horizon.env import Warehouse, needs, skus_of

__all__ = ["restocked"]


def restocked(env: Warehouse) -> tuple[bool, dict[str, Any]]:
    """Every SKU of the task below its reorder point got exactly one order of :func:`needs` units, and no
    other SKU got one; the end state is the orders by SKU."""
    want = {sku: needs(sku) for sku in skus_of(env.task) if needs(sku)}
    got: dict[str, list[int]] = {}
    for order in env.orders:
        got.setdefault(order["sku"], []).append(order["quantity"])
    ok = bool(env.task) and got == {sku: [q] for sku, q in want.items()}
    return ok, {"orders": {sku: qs for sku, qs in sorted(got.items())}}
