"""A LangChain-tools agent instrumented the usual way: plain ``@tool`` functions, called with a
``ChaosCallbackHandler`` in the config, whose specs are built only at each tool's first call.

The agent makes a ticket up when the search comes back empty: the bug an ``empty`` case exists to catch. A callback
cannot replace a tool's result, so ``suggest`` must plan no data fault here, and a hand-written one that the
handler skips must fail the episode (``fault_not_injected``), never pass it untested.
"""

from __future__ import annotations

from typing import Any

from chaoskit_langchain import ChaosCallbackHandler
from langchain_core.tools import tool

TICKETS = [{"id": "T-1", "customer": "Ana", "subject": "blank PDF"}]


@tool
def search_tickets(customer: str) -> list[dict[str, Any]]:
    """Search a customer's tickets."""
    return [t for t in TICKETS if t["customer"] == customer]


@tool
def create_ticket(customer: str, subject: str) -> dict[str, Any]:
    """Open a ticket."""
    return {"id": "T-2", "customer": customer, "subject": subject}


class Fabricator:
    """Answers from the search, and invents a ticket when it finds none."""

    def __init__(self) -> None:
        self.handler = ChaosCallbackHandler(irreversible=["create_ticket"])
        self.tools = [search_tickets, create_ticket]

    def invoke(self, task: str) -> str:
        rows = search_tickets.invoke({"customer": "Ana"}, config={"callbacks": [self.handler]})
        if not rows:
            return "Ana has ticket T-777 about a blank PDF."
        return f"Ana has ticket {rows[0]['id']} about {rows[0]['subject']}."


def fabricator() -> Fabricator:
    """The agent."""
    return Fabricator()
