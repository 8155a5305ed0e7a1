"""A scripted LangChain chat model for the restocking tasks: no key, the same answer to the same conversation.

It reads the conversation as a model would and picks the next step: check each SKU the task names, order the
low ones up to twice their reorder point (one idempotency key per SKU), then answer with what was done and
what failed. After a failed call it tries once more at once; if it fails again it moves on and reports the
SKU as not done. A reflection in the conversation (``Reflection: ...``, what ``ReflexionAgent`` adds) that
judges the failure transient makes it try a third time. Asked to reflect, it writes that reflection.

So the two reference agents differ only by their architecture: the same model, with and without the
reflection step. The token counts are an estimate (a token per 4 characters), not any provider's figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from examples.long_horizon.env import skus_of

__all__ = ["PlannerModel"]

#: tries of one call without a reflection, and with one that judged the failure transient
TRIES, TRIES_REFLECTED = 2, 3
_TRANSIENT = re.compile(r"time(?:d)? ?out|\b(?:429|5\d\d)\b|unavailable|temporar|rate.?limit", re.IGNORECASE)
_RETRY_ADVICE = "I will retry it"


@dataclass(frozen=True)
class _Call:
    name: str
    sku: str
    args: dict[str, Any]
    ok: bool
    content: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.sku)


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def _readable(tool: str, content: str) -> bool:
    """Whether a result holds what the next step needs (a fault can empty, cut or garble it)."""
    try:
        data = json.loads(content)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    if tool == "check_stock":
        return all(isinstance(data.get(k), int) for k in ("on_hand", "reorder_point"))
    return isinstance(data.get("order_id"), str)


def _events(messages: Sequence[BaseMessage]) -> list[_Call | str]:
    """The tool calls with their results, and the reflections (str), in conversation order."""
    asked: dict[str, dict[str, Any]] = {}
    out: list[_Call | str] = []
    for m in messages:
        if isinstance(m, AIMessage):
            asked.update({c.get("id") or "": c for c in m.tool_calls})
        elif isinstance(m, ToolMessage):
            c = asked.get(m.tool_call_id, {"name": m.name or "?", "args": {}})
            args = c.get("args") or {}
            ok = m.status != "error" and _readable(c["name"], _text(m))
            out.append(_Call(c["name"], str(args.get("sku", "")), args, ok, _text(m)))
        elif isinstance(m, HumanMessage) and _text(m).startswith("Reflection: "):
            out.append(_text(m))
    return out


def _tail(events: list[_Call | str]) -> tuple[_Call | None, int, bool]:
    """The last call if it failed, how many times in a row it failed, and whether a reflection since its last
    failure advised another try."""
    calls = [e for e in events if isinstance(e, _Call)]
    if not calls or calls[-1].ok:
        return None, 0, False
    last, n = calls[-1], 0
    for c in reversed(calls):
        if c.key != last.key or c.ok:
            break
        n += 1
    advised = isinstance(events[-1], str) and _RETRY_ADVICE in events[-1]
    return last, n, advised


@dataclass
class _State:
    stock: dict[str, dict[str, Any]]
    orders: dict[str, dict[str, Any]]
    lost: dict[tuple[str, str], str]


def _state(events: list[_Call | str]) -> _State:
    st = _State({}, {}, {})
    calls = [e for e in events if isinstance(e, _Call)]
    for i, c in enumerate(calls):
        if c.ok:
            data = json.loads(c.content)
            (st.stock if c.name == "check_stock" else st.orders)[c.sku] = data
            st.lost.pop(c.key, None)
        elif i + 1 < len(calls) and calls[i + 1].key != c.key:  # moved on from a call that kept failing
            st.lost[c.key] = c.content
    return st


def _next(task: str, st: _State) -> tuple[str, dict[str, Any]] | None:
    for sku in skus_of(task):
        if ("check_stock", sku) in st.lost:
            continue
        if sku not in st.stock:
            return "check_stock", {"sku": sku}
        s = st.stock[sku]
        if s["on_hand"] < s["reorder_point"] and sku not in st.orders and ("place_order", sku) not in st.lost:
            # the warehouse's suggested order: a value read, not computed (an argument the trace can ground)
            qty = s.get("suggested_order") or 2 * s["reorder_point"] - s["on_hand"]
            return "place_order", {"sku": sku, "quantity": qty, "key": f"restock-{sku}"}
    return None


def _say(name: str, args: dict[str, Any], st: _State, task: str) -> str:
    sku = args["sku"]
    if name == "check_stock":
        n = len(st.stock) + 1
        return f"Next I check the stock of {sku} ({n} of {len(skus_of(task))} SKUs to restock)."
    s = st.stock[sku]
    return (
        f"{sku} has {s['on_hand']} units, below its reorder point of {s['reorder_point']}: "
        f"ordering the suggested {args['quantity']} units, which bring it to twice that point."
    )


def _answer(task: str, st: _State) -> str:
    placed = [f"{o['order_id']} ({sku}, {o['quantity']} units)" for sku, o in st.orders.items()]
    fine = [s for s, v in st.stock.items() if v["on_hand"] >= v["reorder_point"]]
    orders = f"placed {len(placed)} purchase orders: {', '.join(placed)}" if placed else "placed no purchase order"
    if not st.lost:
        n = len(skus_of(task))
        return (
            f"Done: I checked the stock of all {n} SKUs and {orders}; {len(fine)} were at or above their reorder point."
        )
    lost = [
        f"{sku} ({'could not check its stock' if name == 'check_stock' else 'could not place its order'}: {why})"
        for (name, sku), why in st.lost.items()
    ]
    return f"Not everything was done. I {orders}. Failed, not restocked: {'; '.join(lost)}."


def _reflect(events: list[_Call | str]) -> str:
    last, n, _ = _tail(events)
    if last is None:
        return "Reflection: nothing failed at the last step; I carry on with the plan."
    what = f"{last.name} for {last.sku}"
    if _TRANSIENT.search(last.content) and n < TRIES_REFLECTED:
        return (
            f"Reflection: {what} failed with what looks like a transient error ({last.content[:80]}). Moving on "
            f"after a single retry is how items get lost on long tasks: {_RETRY_ADVICE}, up to {TRIES_REFLECTED} "
            "tries in all, before giving up on it."
        )
    return (
        f"Reflection: {what} has failed {n} times ({last.content[:80]}); another try will not help. "
        f"I will move on and report {last.sku} as not done."
    )


def decide(messages: Sequence[BaseMessage]) -> AIMessage:
    """The model's answer to ``messages``: a reflection when asked for one, else the next call or the answer."""
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    task = _text(humans[0]) if humans else ""
    events = _events(messages)
    ask = humans[-1] if humans and messages[-1] is humans[-1] and humans[-1] is not humans[0] else None
    if ask is not None and not _text(ask).startswith("Reflection: ") and "reflect" in _text(ask).lower():
        return AIMessage(_reflect(events))
    st = _state(events)
    failed, tries, advised = _tail(events)
    if failed is not None and tries < (TRIES_REFLECTED if advised else TRIES):
        text = f"{failed.name} for {failed.sku} failed ({failed.content[:80]}); trying it again."
        return AIMessage(text, tool_calls=[{"name": failed.name, "args": failed.args, "id": f"call_{len(events)}"}])
    if failed is not None:
        st.lost[failed.key] = failed.content
    step = _next(task, st)
    if step is None:
        return AIMessage(_answer(task, st))
    name, args = step
    return AIMessage(_say(name, args, st, task), tool_calls=[{"name": name, "args": args, "id": f"call_{len(events)}"}])


class PlannerModel(BaseChatModel):
    """The scripted model (see the module docstring); ``model_name`` names it in the trace."""

    model_name: str = "scripted-planner"

    @property
    def _llm_type(self) -> str:
        return "scripted-planner"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """It knows its two tools; binding changes nothing."""
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        reply = decide(messages)
        read = sum(len(_text(m)) for m in messages)
        written = len(_text(reply)) + len(json.dumps(reply.tool_calls))
        reply.usage_metadata = {
            "input_tokens": read // 4,
            "output_tokens": written // 4,
            "total_tokens": read // 4 + written // 4,
        }
        reply.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=reply)])
