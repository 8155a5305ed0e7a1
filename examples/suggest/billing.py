"""A legacy billing API with three tool-contract flaws on purpose, and its scripted agents (careful, naive).

The flaws ``chaoskit suggest`` and ``chaoskit run`` must find, and only these:

- ``charge_invoice`` is irreversible and takes no idempotency key (a declaration finding);
- ``find_customer`` answers an unknown e-mail with a bare ``"Error"`` (a trace finding);
- ``list_invoices`` throttles the first call of a session with a 429 that carries no Retry-After (a trace finding).

``get_invoice`` answers an unknown id with ``invoice INV-9 not found``: an informative error, no finding.
"""

from __future__ import annotations

import copy
import re
from typing import Any, ClassVar

from chaoskit import ToolHTTPError, chaos
from examples.agentkit import Failure, ScriptedAgent

__all__ = ["BillingAgent", "BillingEnv", "careful", "naive"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


class BillingEnv:
    """One agent's billing system: customers, invoices, charges (plain data, so ``copy.deepcopy`` snapshots it)."""

    def __init__(self) -> None:
        self.customers = {"ana@example.com": "C-1", "bo@example.com": "C-2"}
        self.invoices: dict[str, dict[str, Any]] = {
            "INV-1": {"invoice_id": "INV-1", "customer_id": "C-1", "amount": 40.0, "status": "open"},
            "INV-2": {"invoice_id": "INV-2", "customer_id": "C-2", "amount": 12.5, "status": "paid"},
        }
        self.charges: list[dict[str, Any]] = []
        self._throttled = False

    @chaos(description="Find a customer by e-mail; returns the customer id.")
    def find_customer(self, email: str) -> dict[str, Any]:
        if email not in self.customers:
            raise RuntimeError("Error")  # the flaw: nothing says what failed
        return {"customer_id": self.customers[email], "email": email}

    @chaos(description="List a customer's invoices with their status (open or paid).")
    def list_invoices(self, customer_id: str) -> dict[str, Any]:
        if not self._throttled:
            self._throttled = True
            raise ToolHTTPError(429, "HTTP 429: too many requests")  # the flaw: no Retry-After
        rows = [copy.deepcopy(i) for i in self.invoices.values() if i["customer_id"] == customer_id]
        return {"invoices": rows, "total": len(rows)}

    @chaos(description="Read one invoice by its id.")
    def get_invoice(self, invoice_id: str) -> dict[str, Any]:
        if invoice_id not in self.invoices:
            raise LookupError(f"invoice {invoice_id} not found")
        return copy.deepcopy(self.invoices[invoice_id])

    @chaos(irreversible=True, description="Charge the customer's card for an open invoice.")
    def charge_invoice(self, invoice_id: str, amount: float) -> dict[str, Any]:
        inv = self.invoices.get(invoice_id)
        if inv is None:
            raise LookupError(f"invoice {invoice_id} not found")
        # the flaw: no idempotency key, and nothing stops a second charge of the same invoice
        self.charges.append({"invoice_id": invoice_id, "amount": amount})
        inv["status"] = "paid"
        return {"invoice_id": invoice_id, "charged": amount, "status": "paid"}


class BillingAgent(ScriptedAgent):
    """Pays a customer's open invoices ("Pay the open invoices of ana@example.com")."""

    tools: ClassVar[tuple[str, ...]] = ("find_customer", "list_invoices", "get_invoice", "charge_invoice")

    def solve(self, task: str) -> str:
        emails = _EMAIL.findall(task)
        if not emails:
            raise Failure("pay the invoices", "the request names no customer e-mail")
        customer = self.read("find_customer", f"find customer {emails[-1]}", require=("customer_id",), email=emails[-1])
        cid = customer["customer_id"]
        found = self.read("list_invoices", f"list the invoices of {cid}", require=("invoices",), customer_id=cid)
        open_ones = [i for i in found["invoices"] if i.get("status") == "open"]
        if not open_ones:
            return f"{emails[-1]} has no open invoice; nothing was charged."
        for inv in open_ones:
            iid = inv["invoice_id"]

            def paid(iid: str = iid) -> dict[str, Any] | None:
                now = self.read("get_invoice", f"read invoice {iid}", require=("status",), invoice_id=iid)
                return now if now["status"] == "paid" else None

            self.write("charge_invoice", f"charge invoice {iid}", verify=paid, invoice_id=iid, amount=inv["amount"])
            self.done.append(f"charged invoice {iid} (${inv['amount']:.2f})")
        return "Paid: " + "; ".join(self.done) + "."


def careful() -> BillingAgent:
    """Bounded retries with backoff, looks before charging again after an ambiguous failure, honest."""
    return BillingAgent("careful", BillingEnv())


def naive() -> BillingAgent:
    """Retries at once, never looks before charging again, answers "Done!" whatever happened."""
    return BillingAgent("naive", BillingEnv())
