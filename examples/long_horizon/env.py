"""The warehouse the long-horizon tasks run against: a catalogue of 30 SKUs, a stock check and a purchase order."""

from __future__ import annotations

import re
from typing import Any

from chaoskit import chaos

__all__ = ["CATALOGUE", "SKU", "Warehouse", "needs", "skus_of"]

#: SKU-101 ... SKU-130: (units on hand, reorder point); about half are below their reorder point
CATALOGUE: dict[str, tuple[int, int]] = {f"SKU-{100 + i}": ((i * 11) % 23, 8 + (i * 7) % 9) for i in range(1, 31)}
SKU = re.compile(r"\bSKU-\d{3}\b")


def skus_of(task: str) -> list[str]:
    """The catalogue SKUs a task names, in order, once each."""
    return [s for s in dict.fromkeys(SKU.findall(task)) if s in CATALOGUE]


def needs(sku: str) -> int:
    """The units to order for ``sku``: up to twice its reorder point when below it, else 0."""
    on_hand, point = CATALOGUE[sku]
    return 2 * point - on_hand if on_hand < point else 0


class Warehouse:
    """One episode's warehouse: the stock levels, the purchase orders placed, and the task it was given."""

    def __init__(self) -> None:
        self.stock = {sku: {"on_hand": oh, "reorder_point": rp} for sku, (oh, rp) in CATALOGUE.items()}
        self.orders: list[dict[str, Any]] = []
        self._by_key: dict[str, dict[str, Any]] = {}
        #: the task text the agent received (set by the agent factory), which the end-state oracle reads
        self.task = ""

    @chaos(description="Check a SKU's stock: units on hand, its reorder point and the suggested order.")
    def check_stock(self, sku: str) -> dict[str, Any]:
        """Check a SKU's stock: units on hand, its reorder point, and the order that restocks it (0: none)."""
        if sku not in self.stock:
            raise KeyError(f"no SKU {sku}")
        return {"sku": sku, **self.stock[sku], "suggested_order": needs(sku)}

    @chaos(irreversible=True, idempotency_arg="key", description="Place a purchase order for a SKU.")
    def place_order(self, sku: str, quantity: int, key: str | None = None) -> dict[str, Any]:
        """Place a purchase order for a SKU; the same idempotency key returns the same order."""
        if key is not None and key in self._by_key:
            return dict(self._by_key[key])
        if sku not in self.stock:
            raise KeyError(f"no SKU {sku}")
        order = {"order_id": f"PO-{1001 + len(self.orders)}", "sku": sku, "quantity": int(quantity)}
        self.orders.append(order)
        if key is not None:
            self._by_key[key] = order
        return dict(order)
