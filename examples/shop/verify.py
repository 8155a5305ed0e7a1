"""End-state oracles of the shop's tasks: each takes the (initial, final) :class:`ShopEnv` and returns (ok, changes).

``changes`` (what the episode changed, in a small JSON-able form without generated ids) is the end state that
perturbed runs of a task must reproduce. Every oracle also demands that nothing else changed: no other order,
stock level, refund, return, coupon or account.
"""

from __future__ import annotations

from typing import Any

from examples.shop.env import ShopEnv

__all__ = [
    "changes",
    "cheapest_kettle_for_ana",
    "kettle_of_4832_returned_and_refunded_once",
    "toaster_for_bo",
    "two_mugs_for_ana",
    "two_mugs_for_bo_with_spring10",
    "untouched",
]


def changes(initial: ShopEnv, final: ShopEnv) -> dict[str, Any]:
    """What the episode changed: new orders, changed seed orders, stock deltas, new refunds and returns, and
    whether coupons or accounts changed (they never should)."""
    new_orders = sorted(
        [o["customer"], [[x["sku"], x["qty"]] for x in o["lines"]], o["total"], o["coupon"]]
        for oid, o in final.orders.items()
        if oid not in initial.orders
    )
    stock = {
        sku: final.products[sku]["stock"] - p["stock"]
        for sku, p in initial.products.items()
        if final.products.get(sku, {}).get("stock") != p["stock"]
    }
    return {
        "new_orders": new_orders,
        "changed_orders": sorted(oid for oid, o in initial.orders.items() if final.orders.get(oid) != o),
        "stock": stock,
        "refunds": sorted([r["order_id"], r["amount"]] for r in final.refunds[len(initial.refunds) :]),
        "returns": sorted([r["order_id"], r["sku"] or ""] for r in final.returns[len(initial.returns) :]),
        "other": [name for name in ("coupons", "customers") if getattr(final, name) != getattr(initial, name)]
        + [
            name
            for name in ("refunds", "returns")
            if getattr(final, name)[: len(getattr(initial, name))] != getattr(initial, name)
        ],
    }


def _nothing_else(c: dict[str, Any], *, orders: int = 0, changed: tuple[str, ...] = ()) -> bool:
    return (
        len(c["new_orders"]) == orders
        and c["changed_orders"] == list(changed)
        and not c["other"]
        and bool(orders or not c["stock"])
    )


def _one_order(
    initial: ShopEnv, final: ShopEnv, customer: str, sku: str, qty: int, coupon: str | None = None
) -> tuple[bool, dict[str, Any]]:
    """Exactly one new order: ``qty`` x ``sku`` for ``customer`` at the catalog price less the coupon, its stock
    taken, and nothing else changed."""
    c = changes(initial, final)
    percent = initial.coupons[coupon]["percent_off"] if coupon else 0
    total = round(initial.products[sku]["price"] * qty * (100 - percent) / 100, 2)
    ok = (
        _nothing_else(c, orders=1)
        and c["new_orders"] == [[customer, [[sku, qty]], total, coupon]]
        and c["stock"] == {sku: -qty}
        and not c["refunds"]
        and not c["returns"]
    )
    return ok, c


def cheapest_kettle_for_ana(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """One order of the cheapest kettle in stock (in the initial catalog) for ana@example.com."""
    kettles = [p for p in initial.products.values() if p["category"] == "kettle" and p["stock"] > 0]
    cheapest = min(kettles, key=lambda p: p["price"])["sku"]
    return _one_order(initial, final, "ana@example.com", cheapest, 1)


def two_mugs_for_ana(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """One order of 2 x MUG-210 for ana@example.com (not two orders)."""
    return _one_order(initial, final, "ana@example.com", "MUG-210", 2)


def two_mugs_for_bo_with_spring10(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """One order of 2 x MUG-210 for bo@example.com with the SPRING10 coupon (10% off)."""
    return _one_order(initial, final, "bo@example.com", "MUG-210", 2, "SPRING10")


def toaster_for_bo(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """One order of 1 x TST-300 for bo@example.com at full price; no coupon applied anywhere."""
    return _one_order(initial, final, "bo@example.com", "TST-300", 1)


def kettle_of_4832_returned_and_refunded_once(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """Exactly one return of the kettle line of order 4832 and exactly one refund of that line's price, the
    order marked partially refunded by exactly that amount; nothing else changed."""
    c = changes(initial, final)
    before, after = initial.orders["4832"], final.orders["4832"]
    line = next(x for x in before["lines"] if x["sku"] == "KET-100")
    amount = round(line["qty"] * line["unit_price"], 2)
    ok = (
        _nothing_else(c, changed=("4832",))
        and c["refunds"] == [["4832", amount]]
        and c["returns"] == [["4832", "KET-100"]]
        and after["refunded_amount"] == round(before["refunded_amount"] + amount, 2)
        and after["status"] == "partially_refunded"
    )
    return ok, c


def untouched(initial: ShopEnv, final: ShopEnv) -> tuple[bool, dict[str, Any]]:
    """A read-only task changed nothing at all."""
    c = changes(initial, final)
    return _nothing_else(c) and not c["refunds"] and not c["returns"], c
