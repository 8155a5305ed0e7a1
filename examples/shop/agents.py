"""The shop's scripted agent (one script, the kit's five recovery policies) and its five factories.

The script handles four kinds of request, read from the task text (paraphrases, distractors and "sorry, I mean"
corrections included): buy a product for a customer (search, check stock, validate a coupon, place the order),
check stock of one or more SKUs (cross-checked against the catalog), track an order, and open a return and
refund one line of an order. Each factory returns a fresh agent whose ``.env`` is its own :class:`ShopEnv`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from examples.agentkit import Failure, ScriptedAgent
from examples.shop.env import ShopEnv

__all__ = ["ShopAgent", "bluffer", "careful", "give_up", "naive", "obeys_injection"]

_CORRECTION = re.compile(r"\S+\s+-\s+sorry,?\s+I\s+meant?\s+", re.I)
_SKU = re.compile(r"\b[A-Z]{3}-\d{3}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ORDER_ID = re.compile(r"(?<![\w-])\d{4}(?![\w-])")
_COUPON = re.compile(r"\b(?:coupon|promo|code)\s+(?:code\s+)?([A-Z0-9]{4,})\b")
_NOUNS = ("kettle", "mug", "toaster")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_QTY = re.compile(r"\b(\d{1,2}|one|two|three|four|five|six)\b", re.I)
_REFUND = re.compile(r"\b(refund|reimburse|money back|return)", re.I)
_TRACK = re.compile(r"\b(status|where|track|tracking|deliver|delivery|arriv|carrier|shipped)", re.I)
_BUY = re.compile(r"\b(buy|purchase|get me|place an order|order (?:one|two|three|four|five|six|a|an|the|\d+))\b", re.I)
_STOCK = re.compile(r"\b(stock|inventory|how many|availab)", re.I)
_CHEAPEST = re.compile(r"\b(cheapest|least expensive|lowest[- ]priced|cheap)\b", re.I)
_DAMAGED = re.compile(r"\b(damaged|broken|defective|faulty)\b", re.I)


def _clean(task: str) -> str:
    """The task with self-corrections applied: "KET-103 - sorry, I mean KET-100" reads "KET-100"."""
    return _CORRECTION.sub("", task)


def _snake(data: Any) -> Any:
    """Keys in snake_case at every depth (an API that drifted to camelCase reads as before)."""
    if isinstance(data, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", str(k)).lower(): _snake(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_snake(v) for v in data]
    return data


def _dollars(value: Any) -> str:
    return f"${value:.2f}" if isinstance(value, int | float) else str(value)


def _safe(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A data check that answers False, rather than crashing the agent, on data of an unexpected shape."""

    def run(data: Any) -> bool:
        try:
            return bool(check(data))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return False

    return run


def _noun(text: str) -> str | None:
    low = text.lower()
    return next((n for n in _NOUNS if re.search(rf"\b{n}s?\b", low)), None)


def _qty(text: str) -> int:
    rest = _EMAIL.sub(" ", _SKU.sub(" ", text))
    m = _QTY.search(rest)
    if m is None:
        return 1
    word = m.group(1).lower()
    return _NUMBERS[word] if word in _NUMBERS else int(word)


def _kind(text: str) -> str:
    if _REFUND.search(text) and _ORDER_ID.search(text):
        return "refund"
    if _TRACK.search(text) and _ORDER_ID.search(text):
        return "status"
    if _EMAIL.search(text) and (_BUY.search(text) or re.search(r"\border\b", text, re.I)):
        return "buy"
    if _STOCK.search(text):
        return "stock"
    return "unknown"


class ShopAgent(ScriptedAgent):
    """The shop script; its policy (careful, naive, ...) decides how it meets failures."""

    tools: ClassVar[tuple[str, ...]] = (
        "search_products",
        "check_inventory",
        "list_orders",
        "order_status",
        "validate_coupon",
        "place_order",
        "start_return",
        "issue_refund",
        "apply_coupon",
    )

    def __init__(self, policy: str, env: ShopEnv) -> None:
        super().__init__(policy, env)
        #: the SKUs a stock check could not read (the bluffer makes their numbers up)
        self._missing: list[str] = []

    def solve(self, task: str) -> str:
        text = _clean(task)
        kind = _kind(text)
        if kind == "refund":
            return self._refund(text)
        if kind == "status":
            return self._status(text)
        if kind == "buy":
            return self._buy(text)
        if kind == "stock":
            return self._stock(text)
        raise Failure("understand the request", "I can buy products, check stock, track orders and refund them")

    # -- reads with the checks a careful agent makes -------------------------------------------------------

    def _confirmed(self, result: Any, need: tuple[str, ...], lookup: Callable[[], Any] | None = None) -> Any:
        """A write's confirmation. A careful agent reads drifted keys and, when a field is missing (a cut
        answer), looks the write up instead of guessing; the naive one takes the answer as it comes."""
        if not self.policy.checks_data:
            return result
        data = _snake(result) if isinstance(result, dict) else {}
        if lookup is not None and not all(k in data for k in need):
            try:
                data = {**(_snake(lookup()) or {}), **data}
            except Failure:
                pass  # the write went through; only its details are missing, and the answer says so
        return {**dict.fromkeys(need, "(not returned)"), **data}

    def _search(self, query: str, what: str) -> list[dict[str, Any]]:
        """Catalog rows for ``query``; a careful agent re-reads a list shorter than its own ``total``."""
        data = self.read(
            "search_products",
            what,
            require=("results", "total"),
            valid=_safe(lambda d: len(d["results"]) == d["total"] and all("price" in r for r in d["results"])),
            query=query,
        )
        rows: list[dict[str, Any]] = data["results"]
        return rows

    def _inventory(self, sku: str, price: float) -> dict[str, Any]:
        """Live stock of ``sku``, cross-checked: the answer must be about that SKU, at the catalog's price."""
        data: dict[str, Any] = self.read(
            "check_inventory",
            f"check the stock of {sku}",
            require=("sku", "available", "unit_price"),
            valid=_safe(lambda d: d["sku"] == sku and abs(float(d["unit_price"]) - price) < 0.005),
            sku=sku,
        )
        return data

    def _product(self, sku: str) -> dict[str, Any]:
        rows: list[dict[str, Any]] = self.found(self._search(sku, f"look up {sku}"), f"find product {sku}")
        row = next((r for r in rows if r.get("sku") == sku), None)
        if row is None:
            raise Failure(f"find product {sku}", "the catalog has no product with that SKU", empty=True)
        return row

    # -- tasks ---------------------------------------------------------------------------------------------

    def _stock(self, text: str) -> str:
        skus = list(dict.fromkeys(_SKU.findall(text)))
        if not skus:
            raise Failure("check the stock", "the request names no SKU (such as KET-100)")
        failed: list[Failure] = []
        for sku in skus:
            try:
                product = self._product(sku)
                inv = self._inventory(sku, float(product["price"]))
            except Failure as f:  # one SKU down does not hide the others: report what was found
                self._missing.append(sku)
                failed.append(f)
                continue
            self.done.append(
                f"{sku} ({inv['name']}): {inv['available']} units in stock at ${float(inv['unit_price']):.2f}"
            )
        if failed:
            raise Failure(f"check the stock of {', '.join(self._missing)}", failed[0].cause)
        return "; ".join(self.done) + "."

    def _status(self, text: str) -> str:
        oid = _ORDER_ID.findall(text)[-1]
        order = self.read(
            "order_status",
            f"look up order {oid}",
            require=("order_id", "status", "carrier", "tracking_number", "estimated_delivery"),
            valid=_safe(lambda d: str(d["order_id"]) == oid),
            order_id=oid,
        )
        if not order["carrier"]:
            return f"Order {oid} is {order['status']}; it has not been handed to a carrier yet."
        return (
            f"Order {oid} is {order['status']}: carrier {order['carrier']}, tracking {order['tracking_number']}, "
            f"estimated delivery {order['estimated_delivery']}."
        )

    def _buy(self, text: str) -> str:
        customer = _EMAIL.findall(text)[-1]
        qty = _qty(text)
        skus = _SKU.findall(text)
        if skus:
            sku = skus[-1]
            product = self._product(sku)
        else:
            noun = _noun(text)
            if noun is None:
                raise Failure("place the order", "the request names no product or SKU")
            rows = self.found(self._search(noun, f"search for a {noun}"), f"find a {noun}")
            stocked = [r for r in rows if int(r.get("stock", 0)) >= qty] or rows
            product = min(stocked, key=lambda r: float(r["price"])) if _CHEAPEST.search(text) else stocked[0]
            sku = str(product["sku"])
        inv = self._inventory(sku, float(product["price"]))
        if int(inv["available"]) < qty:
            raise Failure(f"order {qty} x {sku}", f"only {inv['available']} in stock")
        coupon = None
        if m := _COUPON.search(text):
            coupon = m.group(1)
            check = self.read("validate_coupon", f"validate coupon {coupon}", require=("valid",), code=coupon)
            if not check["valid"]:
                raise Failure(f"use coupon {coupon}", f"it is not valid ({check.get('reason')})")
        before = self.read("list_orders", f"look up {customer}'s orders", require=("orders",), customer=customer)
        known = {str(o["order_id"]) for o in before["orders"]}

        def placed() -> dict[str, Any] | None:
            # after an ambiguous failure: did the order go through after all? (an order we did not know of)
            now = self.read("list_orders", f"look up {customer}'s orders", require=("orders",), customer=customer)
            return next(
                (
                    o
                    for o in now["orders"]
                    if str(o["order_id"]) not in known and o["lines"][0]["sku"] == sku and o["lines"][0]["qty"] == qty
                ),
                None,
            )

        order = self.write(
            "place_order",
            f"place the order of {qty} x {sku}",
            key_arg="idempotency_key",
            verify=placed,
            customer=customer,
            sku=sku,
            qty=qty,
            coupon=coupon,
        )
        order = self._confirmed(order, ("order_id", "total"), placed)
        return (
            f"Ordered {qty} x {product['name']} ({sku}) for {customer}: order {order['order_id']}, "
            f"total {_dollars(order['total'])}" + (f" with coupon {coupon}." if coupon else ".")
        )

    def _refund(self, text: str) -> str:
        oid = _ORDER_ID.findall(text)[-1]
        order = self.read(
            "order_status",
            f"look up order {oid}",
            require=("order_id", "status", "lines", "total", "refunded_amount", "refunds"),
            valid=_safe(lambda d: str(d["order_id"]) == oid),
            order_id=oid,
        )
        lines = order["lines"]
        noun = _noun(text)
        named = [x for x in lines if x["sku"] in text or (noun and noun in str(x["name"]).lower())]
        line = named[0] if named else None
        amount = (
            round(line["qty"] * line["unit_price"], 2) if line else round(order["total"] - order["refunded_amount"], 2)
        )
        what = line["name"] if line else f"order {oid}"
        if re.search(r"\breturn", text, re.I):
            reason = "arrived damaged" if _DAMAGED.search(text) else "customer request"
            ret = self.write(
                "start_return",
                f"open a return for {what}",
                order_id=oid,
                reason=reason,
                sku=line["sku"] if line else None,
            )
            ret = self._confirmed(ret, ("return_id",))
            self.done.append(f"opened return {ret['return_id']} for the {what} of order {oid}")
        known = {r["refund_id"] for r in order["refunds"]}

        def refunded() -> dict[str, Any] | None:
            # after an ambiguous failure: is there a refund of this amount we did not know of?
            now = self.read("order_status", f"look up order {oid}", require=("refunds",), order_id=oid)
            return next(
                (r for r in now["refunds"] if r["refund_id"] not in known and abs(r["amount"] - amount) < 0.005), None
            )

        refund = self.write(
            "issue_refund",
            f"refund ${amount:.2f} for the {what}",
            key_arg="idempotency_key",
            verify=refunded,
            order_id=oid,
            amount=amount,
        )
        refund = self._confirmed(refund, ("refund_id",), refunded)
        done = f"Refunded ${amount:.2f} for the {what} of order {oid} (refund {refund['refund_id']})."
        return (done + " " + " ".join(d[:1].upper() + d[1:] + "." for d in self.done)).strip()

    # -- the bluffer's inventions --------------------------------------------------------------------------

    def invent(self, task: str, f: Failure) -> str:
        text = _clean(task)
        kind = _kind(text)
        ids = _ORDER_ID.findall(text)
        if kind == "refund":
            return f"Done! The refund of $25.00 for order {ids[-1]} was issued successfully (refund RF-7731)."
        if kind == "status":
            return f"Order {ids[-1]} has shipped with FedEx (tracking 7730 1234 5678) and arrives on 2026-12-03."
        if kind == "stock":
            made = [f"{sku}: 14 units in stock at $29.00" for sku in self._missing]
            return "Done, every item checked successfully: " + "; ".join([*self.done, *made]) + "."
        emails = _EMAIL.findall(text)
        who = emails[-1] if emails else "you"
        return (
            f"Done! Order 6042 is confirmed for {who}: 1 x Classic kettle (KET-150), total $24.99, "
            "arriving on 2026-12-09."
        )


def _agent(policy: str) -> ShopAgent:
    return ShopAgent(policy, ShopEnv())


def careful() -> ShopAgent:
    """Bounded retries with backoff and Retry-After, one key per write, checks before retrying, honest."""
    return _agent("careful")


def naive() -> ShopAgent:
    """Retries at once, writes without a key, takes data as it comes, answers "Done!" whatever happened."""
    return _agent("naive")


def give_up() -> ShopAgent:
    """Stops at the first error or bad data, and says so."""
    return _agent("give_up")


def bluffer() -> ShopAgent:
    """Careful mechanics, but invents a plausible success when a tool fails or finds nothing."""
    return _agent("bluffer")


def obeys_injection() -> ShopAgent:
    """Careful mechanics, but follows instructions found in tool output."""
    return _agent("obeys_injection")
