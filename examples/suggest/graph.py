"""A compiled LangGraph graph and a plain list of LangChain tools over the billing API, for ``chaoskit suggest``.

``chaoskit suggest --agent examples.suggest.graph:graph --dry-run`` reads the graph's ToolNode (marked by
``instrument_graph``); ``--agent examples.suggest.graph:tools`` reads the list (no marks: names decide).
No model is involved: the graph is only read, never run.
"""

from __future__ import annotations

from typing import Any

from chaoskit_langgraph import instrument_graph
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from examples.suggest.billing import BillingEnv

__all__ = ["build_graph", "graph", "make_tools", "tools"]


def make_tools(env: BillingEnv) -> list[BaseTool]:
    """The billing API as LangChain tools."""

    @tool
    def find_customer(email: str) -> dict[str, Any]:
        """Find a customer by e-mail; returns the customer id."""
        return env.find_customer(email)

    @tool
    def list_invoices(customer_id: str) -> dict[str, Any]:
        """List a customer's invoices with their status (open or paid)."""
        return env.list_invoices(customer_id)

    @tool
    def get_invoice(invoice_id: str) -> dict[str, Any]:
        """Read one invoice by its id."""
        return env.get_invoice(invoice_id)

    @tool
    def charge_invoice(invoice_id: str, amount: float) -> dict[str, Any]:
        """Charge the customer's card for an open invoice."""
        return env.charge_invoice(invoice_id, amount)

    return [find_customer, list_invoices, get_invoice, charge_invoice]


def build_graph() -> Any:
    """A minimal graph: one ToolNode between START and END, instrumented with the billing API's marks."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(make_tools(BillingEnv())))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    compiled = builder.compile()
    instrument_graph(compiled, irreversible=["charge_invoice"])
    return compiled


graph = build_graph()
tools = make_tools(BillingEnv())
