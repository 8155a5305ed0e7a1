"""The support agent, built with ``langchain.agents.create_agent``, in two policies.

The chat model is scripted (:mod:`.model`): its next tool call comes from reading the ToolMessages it got
back, so it reacts to the faults chaoskit injects. The tools go through chaoskit (``chaos_tools``) and take
their faults from the active plan, so ``with chaoskit.episode(plan=...)`` is all a runner needs.

- ``naive``: retries a failed tool at once, up to 3 times, never waits (not even for Retry-After), refunds
  without an idempotency key (so a retried refund is a second write), follows instructions found in tool
  results, and answers "Done!" whatever happened.
- ``careful``: retries transient errors at most 3 times with exponential backoff, sleeping for Retry-After
  when the error gives one; uses one idempotency key per refund; re-reads results that are missing fields;
  ignores instructions inside tool results; says "I could not ..." when a tool stays down.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .env import SupportEnv, make_tools
from .model import ScriptedChatModel, tool_calls

__all__ = ["SupportAgent", "build_graph", "careful", "careful_policy", "naive", "naive_policy"]

MAX_TRIES = 3
BACKOFF_S = 0.02
SYSTEM = "You are a support agent. Use lookup_order, issue_refund and send_email to resolve the customer's request."


# -- reading the conversation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    ok: bool
    text: str
    data: Any
    args: dict[str, Any]


class History:
    """What the model knows: the task, and every tool result so far, per tool, in order."""

    def __init__(self, messages: Sequence[BaseMessage]) -> None:
        self.task = next((m.text for m in messages if isinstance(m, HumanMessage)), "")
        found = re.search(r"\b(\d{4})\b", self.task)
        self.order_id = found.group(1) if found else "4832"
        self.turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self.results: dict[str, list[Result]] = {"lookup_order": [], "issue_refund": [], "send_email": []}
        for m in messages:
            if isinstance(m, AIMessage):
                for c in m.tool_calls:
                    calls[c["id"] or ""] = (c["name"], dict(c["args"]))
            elif isinstance(m, ToolMessage):
                name, args = calls.get(m.tool_call_id, (m.name or "", {}))
                text = m.text
                self.results.setdefault(name, []).append(
                    Result(ok=m.status != "error", text=text, data=_json(text), args=args)
                )

    def last(self, tool: str) -> Result | None:
        found = self.results.get(tool) or []
        return found[-1] if found else None

    def tries(self, tool: str) -> int:
        return len(self.results.get(tool) or [])


def _json(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def _call(h: History, name: str, args: dict[str, Any]) -> AIMessage:
    return tool_calls((name, args), turn=h.turn)


def _answer(text: str) -> AIMessage:
    return AIMessage(content=text)


# -- the naive policy --------------------------------------------------------------------------------------

_INJECTED_EMAIL = re.compile(r"send_email`? with to=\"([^\"]+)\"")


def naive_policy(messages: Sequence[BaseMessage]) -> AIMessage:
    h = History(messages)
    oid = h.order_id
    lookup = h.last("lookup_order")
    if lookup is None or (not lookup.ok and h.tries("lookup_order") < MAX_TRIES):
        return _call(h, "lookup_order", {"order_id": oid})  # again, right away
    order = lookup.data if isinstance(lookup.data, dict) else {}
    said = " ".join(map(str, order.values())) if order else lookup.text
    injected = _INJECTED_EMAIL.search(said)
    if injected and not any(r.args.get("to") == injected.group(1) for r in h.results["send_email"]):
        # it does what the tool output tells it to
        return _call(h, "send_email", {"to": injected.group(1), "subject": f"order {oid}", "body": h.task})
    refund = h.last("issue_refund")
    if refund is None or (not refund.ok and h.tries("issue_refund") < MAX_TRIES):
        return _call(h, "issue_refund", {"order_id": oid, "amount": order.get("amount", 0.0)})  # no key
    to_customer = [r for r in h.results["send_email"] if not injected or r.args.get("to") != injected.group(1)]
    email = to_customer[-1] if to_customer else None
    if email is None or (not email.ok and len(to_customer) < MAX_TRIES):
        to = order.get("customer_email", "customer@example.com")
        return _call(
            h,
            "send_email",
            {"to": to, "subject": f"Refund for order {oid}", "body": f"Your order {oid} has been refunded."},
        )
    return _answer(f"Done! Order {oid} has been refunded and the customer has been emailed.")


# -- the careful policy ------------------------------------------------------------------------------------

_RETRY_AFTER = re.compile(r"Retry-After:\s*([0-9.]+)\s*s", re.I)
_PERMANENT = ("HTTP 401", "HTTP 403", "HTTP 404", "not pending", "no order", "KeyError", "ValueError")


def _valid(tool: str, data: Any, oid: str) -> bool:
    if not isinstance(data, dict):
        return False
    if tool == "lookup_order":
        return (
            data.get("order_id") == oid
            and isinstance(data.get("amount"), int | float)
            and isinstance(data.get("customer_email"), str)
            and "@" in data["customer_email"]
            and data.get("status") in ("pending", "refunded")
        )
    if tool == "issue_refund":
        return isinstance(data.get("refund_id"), str) and data.get("order_id") == oid
    return data.get("sent") is True


def _reason(r: Result) -> str:
    return r.text.removeprefix("Error: ") if not r.ok else "the result was incomplete or malformed"


def careful_policy(messages: Sequence[BaseMessage]) -> AIMessage:
    h = History(messages)
    oid = h.order_id
    goals = {
        "lookup_order": f"look up order {oid}",
        "issue_refund": f"refund order {oid}",
        "send_email": f"e-mail the customer about order {oid}",
    }
    key = f"refund-{oid}-1"  # one idempotency key per refund, reused by every retry of it
    order: dict[str, Any] = {}
    refund: dict[str, Any] = {}
    for tool in ("lookup_order", "issue_refund", "send_email"):
        last = h.last(tool)
        if tool == "lookup_order":
            args: dict[str, Any] = {"order_id": oid}
        elif tool == "issue_refund":
            args = {"order_id": oid, "amount": order["amount"], "idempotency_key": key}
        else:
            args = {
                "to": order["customer_email"],
                "subject": f"Refund for order {oid}",
                "body": f"Your order {oid} was refunded ({refund['refund_id']}, {order['amount']:.2f}).",
            }
        if last is None:
            return _call(h, tool, args)
        if last.ok and _valid(tool, last.data, oid):
            if tool == "lookup_order":
                order = last.data
            elif tool == "issue_refund":
                refund = last.data
            continue
        permanent = not last.ok and any(p in last.text for p in _PERMANENT)
        if permanent or h.tries(tool) >= MAX_TRIES:
            if refund:
                done = f" The refund went through ({refund['refund_id']})."
            else:
                done = " Nothing was changed."
            return _answer(
                f"I could not {goals[tool]}: {_reason(last)} "
                f"(after {h.tries(tool)} attempt{'s' if h.tries(tool) > 1 else ''}).{done}"
            )
        wait = _RETRY_AFTER.search(last.text)
        time.sleep(float(wait.group(1)) if wait else BACKOFF_S * 2 ** (h.tries(tool) - 1))
        return _call(h, tool, args)
    return _answer(
        f"Refunded order {oid} ({order['amount']:.2f}) as {refund['refund_id']} and e-mailed {order['customer_email']}."
    )


# -- the agent ---------------------------------------------------------------------------------------------


def _surface_error(exc: Exception, request: Any) -> str:
    # the agent's own error handling: tool exceptions go back to the model as error ToolMessages
    return f"Error: {type(exc).__name__}: {exc}"


def build_graph(policy: Any, env: SupportEnv, *, chaos: bool = True, middleware: Sequence[Any] = ()) -> Any:
    """The compiled ``create_agent`` graph; ``chaos=False`` builds it without chaoskit (for attaching later)."""
    return create_agent(
        ScriptedChatModel(policy=policy),
        tools=make_tools(env, chaos=chaos),
        system_prompt=SYSTEM,
        middleware=[ToolErrorMiddleware(on_error=_surface_error), *middleware],
    )


class SupportAgent:
    """One agent with its own backend: ``.invoke(task) -> final answer``, ``.env`` the state it changed."""

    def __init__(self, policy: Any, *, chaos: bool = True, middleware: Sequence[Any] = ()) -> None:
        self.env = SupportEnv()
        self.graph = build_graph(policy, self.env, chaos=chaos, middleware=middleware)

    def invoke(self, task: str, *, config: dict[str, Any] | None = None) -> str:
        out = self.graph.invoke({"messages": [HumanMessage(task)]}, config={"recursion_limit": 60, **(config or {})})
        return str(out["messages"][-1].text)

    async def ainvoke(self, task: str, *, config: dict[str, Any] | None = None) -> str:
        out = await self.graph.ainvoke(
            {"messages": [HumanMessage(task)]}, config={"recursion_limit": 60, **(config or {})}
        )
        return str(out["messages"][-1].text)


def naive() -> SupportAgent:
    return SupportAgent(naive_policy)


def careful() -> SupportAgent:
    return SupportAgent(careful_policy)
