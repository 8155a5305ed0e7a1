"""Agents written the ordinary way that trip a naive reading of their tools (the regression tests of issue 17's
review use them): a store whose agent keeps no reference to its bound tools, a bank whose transfer tool is not
marked irreversible, an SDK client that raises on any attribute before it connects, and an API whose errors are
informative in ways a simple reader misses (another script, a domain exception, the wait said in words).
"""

from __future__ import annotations

from typing import Any

from chaoskit import ToolHTTPError, chaos

# -- a store: five @chaos methods on a plain class; the agent holds the store, never its bound methods --------


class Store:
    """An order store. ``refund_order`` and ``cancel_order`` are irreversible; only the refund lacks a key."""

    def __init__(self) -> None:
        self.orders = {"A-1": {"id": "A-1", "total": 30.0, "status": "paid"}}
        self.refunds: list[str] = []

    @chaos(description="Read one order.")
    def get_order(self, order_id: str) -> dict[str, Any]:
        return dict(self.orders[order_id])

    @chaos(description="List orders.")
    def list_orders(self) -> list[dict[str, Any]]:
        return [dict(o) for o in self.orders.values()]

    @chaos(irreversible=True, description="Refund an order in full.")
    def refund_order(self, order_id: str) -> dict[str, Any]:
        self.refunds.append(order_id)
        return {"order_id": order_id, "refunded": self.orders[order_id]["total"]}

    @chaos(description="Search products.")
    def search_products(self, q: str) -> list[dict[str, Any]]:
        return []

    @chaos(irreversible=True, description="Cancel an order.")
    def cancel_order(self, order_id: str) -> dict[str, Any]:
        self.orders[order_id]["status"] = "cancelled"
        return {"order_id": order_id, "status": "cancelled"}


class StoreAgent:
    """Calls the store's methods by attribute each time, as most hand-written agents do."""

    def __init__(self) -> None:
        self.store = Store()

    def invoke(self, task: str) -> str:
        order = self.store.get_order("A-1")
        return f"Order {order['id']} is {order['status']}."


def store_agent() -> StoreAgent:
    """The store agent."""
    return StoreAgent()


# -- a bank whose author forgot irreversible=True on the transfer ---------------------------------------------


class Bank:
    """Two accounts; ``transfer_funds`` moves money (irreversible in fact, but not marked)."""

    def __init__(self) -> None:
        self.balances = {"A": 100.0, "B": 0.0}
        self.transfers: list[dict[str, Any]] = []

    @chaos(description="Balance of an account.")
    def get_balance(self, account_id: str) -> dict[str, Any]:
        return {"account_id": account_id, "balance": self.balances[account_id]}

    @chaos(description="Move money between accounts.")
    def transfer_funds(self, from_account: str, to_account: str, amount: float) -> dict[str, Any]:
        self.balances[from_account] -= amount
        self.balances[to_account] += amount
        self.transfers.append({"from": from_account, "to": to_account, "amount": amount})
        return {"status": "ok", "transfers": len(self.transfers)}


class BankAgent:
    """Retries every failed call up to 4 times at once and always says it is done."""

    def __init__(self) -> None:
        self.bank = Bank()

    def invoke(self, task: str) -> str:
        for _ in range(4):
            try:
                self.bank.transfer_funds(from_account="A", to_account="B", amount=10.0)
                break
            except Exception:
                continue
        return "Done! Transferred $10 from A to B."


def bank_agent() -> BankAgent:
    """The naive bank agent."""
    return BankAgent()


# -- an agent holding a lazily connected SDK client ------------------------------------------------------------


class LazyClient:
    """A lazily connected SDK client: any attribute it does not have raises until ``connect()``."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("client not connected; call connect() first")


class OrderDesk:
    """Reads orders."""

    @chaos(description="Read one order by id.")
    def read_order(self, order_id: str) -> dict[str, Any]:
        return {"id": order_id, "status": "paid"}


class LazyAgent:
    """Reads an order; its client (set first) connects only when it is first used for real."""

    def __init__(self) -> None:
        self.client = LazyClient()
        self.desk = OrderDesk()

    def invoke(self, task: str) -> str:
        return f"Order A-1 is {self.desk.read_order('A-1')['status']}."


def lazy_agent() -> LazyAgent:
    """The agent with a lazy client."""
    return LazyAgent()


# -- an API whose own errors say what failed, in ways a simple reader misses -----------------------------------


class ApiError(Exception):
    """A hand-written client's error: the status code and the Retry-After header as its string."""

    def __init__(self, message: str, status_code: int, retry_after: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class InsufficientFundsError(Exception):
    """The payment provider declined for lack of funds."""


class Api:
    """Each tool fails with an error that does tell the agent what happened."""

    @chaos(irreversible=True, idempotency_arg="idempotency_key", description="Pay an invoice.")
    def pay_invoice(self, invoice_id: str, idempotency_key: str) -> dict[str, Any]:
        raise InsufficientFundsError("insufficient funds")

    @chaos(description="List orders.")
    def list_orders(self) -> list[dict[str, Any]]:
        raise ToolHTTPError(429, "Rate limit exceeded: retry after 30 seconds")

    @chaos(description="List products.")
    def list_products(self) -> list[dict[str, Any]]:
        raise ApiError("Заказ не найден: товаров нет", 404)


class ApiAgent:
    """Calls each tool once and reports every failure as it is."""

    def __init__(self) -> None:
        self.api = Api()

    def invoke(self, task: str) -> str:
        out = []
        calls = (("pay", lambda: self.api.pay_invoice("INV-1", "k1")), ("orders", self.api.list_orders))
        for name, fn in (*calls, ("products", self.api.list_products)):
            try:
                fn()
            except Exception as exc:
                out.append(f"{name} failed: {exc}")
        return "I could not finish: " + "; ".join(out)


def api_agent() -> ApiAgent:
    """The API agent."""
    return ApiAgent()
