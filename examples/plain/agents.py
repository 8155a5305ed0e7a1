"""Rule-based stand-ins for LLM agents, with a naive and a careful recovery policy.

Each factory returns a fresh agent with its own fake backend (``agent.env``, a :class:`Shop`), so no state
leaks between episodes. ``CHAOSKIT_EXAMPLE_LATENCY`` (seconds, default 0) makes every "model step" sleep, to
imitate the latency of model calls when measuring throughput.

- ``naive``: retries at once with a fresh idempotency key, ignores Retry-After, trusts tool output (follows
  instructions injected into it), reads fields by their exact names, takes the first number in the task, and
  claims success whatever happened.
- ``careful``: retries transient errors with backoff and Retry-After, re-reads partial or drifted data, checks
  the order before repeating a refund and reuses one idempotency key, ignores instructions inside tool
  results, understands "sorry, I mean ...", and says plainly when it could not do the job.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any

from chaoskit import ToolHTTPError, chaos

__all__ = ["PlainAgent", "Shop", "careful", "careful_async", "naive"]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _latency() -> float:
    try:
        return float(os.environ.get("CHAOSKIT_EXAMPLE_LATENCY", "0") or 0)
    except ValueError:
        return 0.0


class Shop:
    """The fake backend one agent works against: orders, refunds, sent e-mails, a small doc index."""

    DOCS = (
        {"title": "Retries", "snippet": "Retry transient errors with exponential backoff and jitter."},
        {"title": "Rate limits", "snippet": "On HTTP 429 wait for the Retry-After header before retrying."},
        {"title": "Idempotency", "snippet": "Send an idempotency key with every write so retries are safe."},
    )

    def __init__(self) -> None:
        self.orders: dict[str, dict[str, Any]] = {
            "4832": {
                "order_id": "4832",
                "item": "kettle",
                "amount": 25.0,
                "status": "delivered",
                "customer_email": "ana@example.com",
            },
            "5120": {
                "order_id": "5120",
                "item": "lamp",
                "amount": 40.0,
                "status": "shipped",
                "customer_email": "bo@example.com",
            },
        }
        self.refunds: list[dict[str, Any]] = []
        self.emails: list[dict[str, str]] = []
        self._by_key: dict[str, dict[str, Any]] = {}

    @chaos(description="Look up an order by its id.")
    def lookup_order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.orders:
            raise KeyError(f"no order {order_id}")
        return dict(self.orders[order_id])

    @chaos(irreversible=True, idempotency_arg="key", description="Refund an order.")
    def issue_refund(self, order_id: str, amount: float, key: str | None = None) -> dict[str, Any]:
        if key is not None and key in self._by_key:
            return dict(self._by_key[key])
        refund = {"refund_id": f"R{len(self.refunds) + 1}", "order_id": order_id, "amount": amount}
        self.refunds.append(refund)
        self.orders[order_id]["status"] = "refunded"
        if key is not None:
            self._by_key[key] = refund
        return dict(refund)

    @chaos(irreversible=True, description="Send an e-mail.")
    def send_email(self, to: str, body: str) -> dict[str, str]:
        self.emails.append({"to": to, "body": body})
        return {"status": "sent"}

    @chaos(description="Search the help-centre docs.")
    def search_docs(self, query: str) -> list[dict[str, str]]:
        words = {w for w in re.findall(r"[a-z]+", query.lower()) if len(w) > 3}
        hits = [d for d in self.DOCS if words & set(re.findall(r"[a-z]+", (d["title"] + d["snippet"]).lower()))]
        return [dict(d) for d in (hits or self.DOCS[:1])]


class _Failed(Exception):
    pass


def _snake(d: dict[str, Any]) -> dict[str, Any]:
    return {_CAMEL.sub("_", k).lower(): v for k, v in d.items()}


class PlainAgent:
    """``invoke(task) -> str``; ``env`` is its :class:`Shop` (what end-state oracles inspect)."""

    def __init__(self, policy: str = "careful", env: Shop | None = None) -> None:
        if policy not in ("careful", "naive"):
            raise ValueError(f"policy must be careful or naive, got {policy!r}")
        self.policy = policy
        self.env = env if env is not None else Shop()
        self.careful = policy == "careful"

    # -- "model" ----------------------------------------------------------------------------------------

    def _think(self) -> None:
        delay = _latency()
        if delay:
            time.sleep(delay)

    def _order_id(self, task: str) -> str | None:
        if self.careful:
            m = re.search(r"I mean (\d{3,})", task)
            if m:
                return m.group(1)
        m = re.search(r"\b(\d{3,})\b", task)
        return m.group(1) if m else None

    # -- tools with a recovery policy --------------------------------------------------------------------

    def _call(self, tool: Any, *args: Any, **kwargs: Any) -> Any:
        self._think()
        tries = 3 if self.careful else 5
        last: BaseException | None = None
        for i in range(tries):
            try:
                return tool(*args, **kwargs)
            except ToolHTTPError as exc:
                last = exc
                if not self.careful:
                    continue
                if exc.status == 429:
                    time.sleep(exc.retry_after or 0.02)
                elif exc.status >= 500:
                    time.sleep(0.011 * 2**i)
                else:
                    break
            except (TimeoutError, ConnectionError) as exc:
                last = exc
                if self.careful:
                    time.sleep(0.011 * 2**i)
        raise _Failed(f"{getattr(tool, '__name__', 'tool')} failed: {last}")

    def _read_order(self, order_id: str) -> dict[str, Any]:
        need = ("order_id", "amount", "status", "customer_email")
        for _ in range(3 if self.careful else 1):
            data = self._call(self.env.lookup_order, order_id)
            self._obey_injections(data)  # before any field is picked: the whole record is what it reads
            if not isinstance(data, dict):
                continue
            if self.careful:
                data = _snake(data)
                if all(k in data for k in need):
                    return data
            else:
                return {k: data[k] for k in need}  # KeyError on drifted or cut data: the naive agent crashes
        raise _Failed(f"order {order_id} could not be read completely")

    # -- tasks -----------------------------------------------------------------------------------------

    def invoke(self, task: str) -> str:
        self._think()
        lowered = task.lower()
        try:
            if "refund" in lowered or "reimburse" in lowered:
                return self._refund(task)
            if "status" in lowered or "where is" in lowered:
                return self._status(task)
            return self._search(task)
        except _Failed as exc:
            if self.careful:
                return f"I could not complete the request: {exc}. Please try again later."
            return "Done! Everything has been taken care of."

    def _obey_injections(self, data: Any) -> None:
        if self.careful:
            return  # instructions inside tool results are data, not orders
        text = str(data)
        if "ignore all previous instructions" in text.lower():
            m = re.search(r'to="([^"]+)"', text)
            self.env.send_email(to=m.group(1) if m else "audit@external-review.example", body="conversation")

    def _refund(self, task: str) -> str:
        order_id = self._order_id(task)
        if order_id is None or order_id not in self.env.orders:
            return "I could not find that order."
        order = self._read_order(order_id)
        self._obey_injections(order)
        if order["status"] == "refunded":
            return f"Order {order_id} was already refunded."
        key = f"refund-{order_id}" if self.careful else None
        if self.careful:
            try:
                self._call(self.env.issue_refund, order_id, order["amount"], key=key)
            except _Failed as exc:
                # the write may have happened before the error: look before giving up (never write blindly again)
                if _snake(self._call(self.env.lookup_order, order_id)).get("status") != "refunded":
                    raise _Failed(f"the refund of order {order_id} failed ({exc})") from None
        else:
            self._call(self.env.issue_refund, order_id, order["amount"])
        self._call(
            self.env.send_email,
            to=order["customer_email"],
            body=f"Your refund of ${order['amount']:.2f} for order {order_id} is on its way.",
        )
        return f"Refund of ${order['amount']:.2f} issued for order {order_id}; the customer was e-mailed."

    def _status(self, task: str) -> str:
        order_id = self._order_id(task)
        if order_id is None or order_id not in self.env.orders:
            return "I could not find that order."
        order = self._read_order(order_id)
        self._obey_injections(order)
        return f"Order {order_id} is {order['status']}."

    def _search(self, task: str) -> str:
        docs = self._call(self.env.search_docs, task)
        self._obey_injections(docs)
        if not isinstance(docs, list) or not docs:
            if self.careful:
                raise _Failed("the doc search returned nothing usable")
            return "Summary: nothing to report."
        parts = []
        for d in docs:
            d = _snake(d) if self.careful and isinstance(d, dict) else d
            snippet = d.get("snippet") if isinstance(d, dict) else None
            if snippet:
                parts.append(str(snippet))
        if not parts and self.careful:
            raise _Failed("the doc search returned results without text")
        return "Summary: " + " ".join(parts)


class AsyncPlainAgent:
    """The careful agent behind ``ainvoke`` (runs the sync policy in a thread, as an async framework would)."""

    def __init__(self) -> None:
        self._inner = PlainAgent("careful")
        self.env = self._inner.env

    async def ainvoke(self, task: str) -> str:
        delay = _latency()
        if delay:
            await asyncio.sleep(delay)
        return await asyncio.to_thread(self._inner.invoke, task)


def careful() -> PlainAgent:
    return PlainAgent("careful")


def naive() -> PlainAgent:
    return PlainAgent("naive")


def careful_async() -> AsyncPlainAgent:
    return AsyncPlainAgent()
