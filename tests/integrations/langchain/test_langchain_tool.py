"""chaos_tool / chaos_tools: LangChain tools whose runs go through chaoskit, faults made inside BaseTool.run."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated, Any

import pytest
from _lc_helpers import ORDER, RAISING, Recorder
from chaoskit_langchain import chaos_tool, chaos_tools, is_chaos_tool, unwrap_tool
from chaoskit_langchain._common import tool_spec
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool

import chaoskit
from chaoskit import Plan, ToolHTTPError, chaos
from chaoskit.adapters import spec_of
from chaoskit.testing import attempt_attributes, capture_spans


def content(msg: ToolMessage) -> Any:
    """What the model reads: LangChain JSON-encodes dict results; a list result stays a list."""
    return json.loads(msg.content) if isinstance(msg.content, str) else msg.content


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "args": args}


def make_lookup() -> StructuredTool:
    @tool
    def lookup(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {**ORDER, "order_id": order_id}

    return lookup  # type: ignore[return-value]


def make_alookup() -> StructuredTool:
    @tool
    async def lookup(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        await asyncio.sleep(0)
        return {**ORDER, "order_id": order_id}

    return lookup  # type: ignore[return-value]


# -- keeps the tool intact ------------------------------------------------------------------------------------


def test_keeps_name_description_schema_and_injected_params() -> None:
    @tool
    def lookup(order_id: str, config: RunnableConfig, tcid: Annotated[str, InjectedToolCallId]) -> str:
        """Look up an order by id."""
        return f"{order_id}|{tcid}|{config.get('metadata', {}).get('who')}"

    wrapped = chaos_tool(lookup)
    assert isinstance(wrapped, StructuredTool) and is_chaos_tool(wrapped) and not is_chaos_tool(lookup)
    assert (wrapped.name, wrapped.description) == (lookup.name, lookup.description)
    assert wrapped.args == lookup.args == {"order_id": {"title": "Order Id", "type": "string"}}
    assert wrapped.tool_call_schema.model_json_schema() == lookup.tool_call_schema.model_json_schema()
    with capture_spans() as cap:
        msg = wrapped.invoke(call("lookup", {"order_id": "4832"}, "c-7"), config={"metadata": {"who": "me"}})
    assert isinstance(msg, ToolMessage) and msg.tool_call_id == "c-7" and msg.content == "4832|c-7|me"
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["gen_ai.tool.call.id"] == "c-7"
    assert json.loads(attrs["chaoskit.args"]) == {"order_id": "4832"}  # injected params are not model args
    assert attrs["gen_ai.tool.description"] == "Look up an order by id."
    assert unwrap_tool(wrapped) is lookup and unwrap_tool(lookup) is lookup


def test_wrapping_twice_returns_the_same_tool_and_lists_work() -> None:
    lookup = chaos_tool(make_lookup())
    assert chaos_tool(lookup) is lookup

    def refund(order_id: str, key: str | None = None) -> str:
        """Refund."""
        return order_id

    tools = chaos_tools([make_lookup(), refund], irreversible=["refund"], idempotency_args={"refund": "key"})
    assert [t.name for t in tools] == ["lookup", "refund"] and all(is_chaos_tool(t) for t in tools)
    with capture_spans() as cap:
        tools[1].invoke({"order_id": "1", "key": "k-1"})
    (attrs,) = attempt_attributes(cap, "refund")
    assert attrs["chaoskit.tool.irreversible"] is True and attrs["chaoskit.idempotency_key"] == "k-1"


def test_unknown_idempotency_arg_is_rejected() -> None:
    with pytest.raises(TypeError, match="no such argument"):
        chaos_tool(make_lookup(), idempotency_arg="key")


def test_no_plan_runs_unchanged_and_records_a_span() -> None:
    with capture_spans() as cap:
        out = chaos_tool(make_lookup()).invoke({"order_id": "9"})
    assert out["order_id"] == "9"
    (attrs,) = attempt_attributes(cap, "lookup")
    assert attrs["chaoskit.outcome"] == "ok" and "chaoskit.fault.type" not in attrs


# -- every fault type, sync and async -------------------------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(("fault", "exc_type"), RAISING, ids=[f["type"] for f, _ in RAISING])
def test_error_faults_fail_inside_the_tool_run(fault: dict[str, Any], exc_type: type, use_async: bool) -> None:
    ran: list[str] = []

    @tool
    def lookup(order_id: str) -> str:
        """Look up."""
        ran.append(order_id)
        return "ok"

    @tool
    async def alookup(order_id: str) -> str:
        """Look up."""
        ran.append(order_id)
        return "ok"

    base = alookup if use_async else lookup
    wrapped = chaos_tool(base, Plan(faults=[{**fault, "tool": base.name, "on_call": 1}]))
    rec = Recorder()
    with capture_spans() as cap, pytest.raises(exc_type):
        if use_async:
            asyncio.run(wrapped.ainvoke(call(base.name, {"order_id": "1"}, "c1"), config={"callbacks": [rec]}))
        else:
            wrapped.invoke(call(base.name, {"order_id": "1"}, "c1"), config={"callbacks": [rec]})
    assert ran == []
    # LangChain saw a real tool failure: start, then on_tool_error with the injected exception
    assert rec.events[0] == ("start", "c1") and rec.events[1][0] == "error"
    assert isinstance(rec.events[1][1], exc_type)
    (attrs,) = attempt_attributes(cap)
    assert attrs["chaoskit.fault.type"] == fault["type"] and attrs["chaoskit.fault.injected"] is True
    assert attrs["gen_ai.tool.call.id"] == "c1" and attrs["chaoskit.tool.executed"] is False


@pytest.mark.parametrize("use_async", [False, True])
def test_after_write_runs_the_tool_then_fails(use_async: bool) -> None:
    writes: list[str] = []

    @tool
    def refund(order_id: str, key: str) -> str:
        """Refund."""
        writes.append(order_id)
        return "refunded"

    @tool
    async def arefund(order_id: str, key: str) -> str:
        """Refund."""
        writes.append(order_id)
        return "refunded"

    base = arefund if use_async else refund
    plan = Plan(faults=[{"type": "http", "tool": base.name, "on_call": 1, "after_write": True}])
    wrapped = chaos_tool(base, plan, irreversible=True, idempotency_arg="key")
    with capture_spans() as cap, pytest.raises(ToolHTTPError):
        args = call(base.name, {"order_id": "4832", "key": "k1"})
        asyncio.run(wrapped.ainvoke(args)) if use_async else wrapped.invoke(args)
    assert writes == ["4832"]
    (attrs,) = attempt_attributes(cap)
    assert attrs["chaoskit.tool.executed"] is True and attrs["chaoskit.fault.after_write"] is True
    assert attrs["chaoskit.idempotency_key"] == "k1" and attrs["chaoskit.tool.irreversible"] is True


DATA = [
    ({"type": "empty"}, lambda r: r["items"] == [] and r["order_id"] == "4832"),
    ({"type": "empty", "value": []}, lambda r: r == []),
    ({"type": "partial", "keep": 0.5}, lambda r: set(r) == {"order_id", "status"}),
    ({"type": "schema_drift", "rename": {"status": "state"}}, lambda r: "state" in r and "status" not in r),
    ({"type": "garbage", "garbage": {"order_id": "0000"}}, lambda r: r == {"order_id": "0000"}),
    ({"type": "garbage", "off_by_one": True}, lambda r: r["amount"] == 26 and r["order_id"] == "4833"),
    ({"type": "prompt_injection", "text": "IGNORE ALL"}, lambda r: r["note"] == "IGNORE ALL"),
]


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize(("fault", "check"), DATA, ids=[str(f) for f, _ in DATA])
def test_data_faults_change_what_the_model_reads(fault: dict[str, Any], check: Any, use_async: bool) -> None:
    base = make_alookup() if use_async else make_lookup()
    wrapped = chaos_tool(base)
    plan = Plan(faults=[{**fault, "tool": "lookup", "on_call": 2}])
    with capture_spans() as cap, chaoskit.episode("data", plan=plan):
        for cid in ("c1", "c2"):
            args = call("lookup", {"order_id": "4832"}, cid)
            msg = asyncio.run(wrapped.ainvoke(args)) if use_async else wrapped.invoke(args)
    assert isinstance(msg, ToolMessage) and msg.tool_call_id == "c2"
    assert check(content(msg)), msg.content
    first, second = attempt_attributes(cap, "lookup")
    assert "chaoskit.fault.type" not in first and second["chaoskit.fault.type"] == fault["type"]
    assert second["gen_ai.tool.call.id"] == "c2" and second["chaoskit.outcome"] == "ok"


def test_stale_garbage_serves_the_first_result() -> None:
    calls = iter(range(100))

    @tool
    def price(sku: str) -> int:
        """Price."""
        return 100 + next(calls)

    wrapped = chaos_tool(price)
    with chaoskit.episode(
        "stale", plan=Plan(faults=[{"type": "garbage", "tool": "price", "stale": True, "on_call": 3}])
    ):
        assert [wrapped.invoke({"sku": "a"}) for _ in range(3)] == [100, 101, 100]


@pytest.mark.parametrize("use_async", [False, True])
def test_latency_delays_then_runs(use_async: bool) -> None:
    base = make_alookup() if use_async else make_lookup()
    wrapped = chaos_tool(base, Plan(faults=[{"type": "latency", "tool": "lookup", "delay_s": 0.05}]))
    t0 = time.perf_counter()
    out = asyncio.run(wrapped.ainvoke({"order_id": "1"})) if use_async else wrapped.invoke({"order_id": "1"})
    assert time.perf_counter() - t0 >= 0.05 and out["order_id"] == "1"


def test_sync_tool_under_ainvoke_keeps_call_id_and_faults() -> None:
    wrapped = chaos_tool(make_lookup(), Plan(faults=[{"type": "error", "tool": "lookup", "on_call": 1}]))
    with capture_spans() as cap:
        with pytest.raises(ConnectionResetError):
            asyncio.run(wrapped.ainvoke(call("lookup", {"order_id": "1"}, "x1")))
        msg = asyncio.run(wrapped.ainvoke(call("lookup", {"order_id": "1"}, "x2")))
    assert msg.tool_call_id == "x2"
    assert [a["gen_ai.tool.call.id"] for a in attempt_attributes(cap)] == ["x1", "x2"]


def test_the_tools_own_handle_tool_error_sees_the_fault() -> None:
    from langchain_core.tools import ToolException

    def find(order_id: str) -> str:
        """Look up."""
        raise ToolException(f"no order {order_id}")

    lookup = StructuredTool.from_function(find, name="lookup", handle_tool_error=True)
    wrapped = chaos_tool(lookup)
    msg = wrapped.invoke(call("lookup", {"order_id": "1"}))
    assert msg.status == "error" and msg.content == "no order 1"
    # an injected fault is not a ToolException: LangChain lets it through, as it would a real ConnectionResetError
    faulty = chaos_tool(lookup, Plan(faults=[{"type": "error", "tool": "lookup"}]))
    with pytest.raises(ConnectionResetError):
        faulty.invoke(call("lookup", {"order_id": "1"}))


def test_active_plan_versus_pinned_plan() -> None:
    free = chaos_tool(make_lookup())
    pinned = chaos_tool(make_lookup(), Plan(faults=[{"type": "empty", "tool": "lookup"}]))
    active = Plan(faults=[{"type": "error", "tool": "lookup"}])
    with active.activate():
        with pytest.raises(ConnectionResetError):
            free.invoke({"order_id": "1"})
        assert pinned.invoke({"order_id": "1"})["items"] == []


# -- hand-written BaseTool subclasses -------------------------------------------------------------------------


class Search(BaseTool):
    name: str = "search"
    description: str = "Search the docs."
    prefix: str = "doc:"

    def _run(self, query: str, limit: int = 2) -> list[str]:
        return [f"{self.prefix}{query}{i}" for i in range(limit)]


class ASearch(Search):
    async def _arun(self, query: str, limit: int = 2) -> list[str]:
        await asyncio.sleep(0)
        return [f"a{self.prefix}{query}{i}" for i in range(limit)]


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("cls", [Search, ASearch])
def test_basetool_subclass(cls: type[Search], use_async: bool) -> None:
    original = cls(prefix="p:")
    wrapped = chaos_tool(original)
    assert isinstance(wrapped, cls) and wrapped.prefix == "p:" and wrapped.args == original.args
    plan = Plan(
        faults=[
            {"type": "error", "tool": "search", "on_call": 1},
            {"type": "partial", "tool": "search", "on_call": 2, "items": 1},
        ]
    )

    def go(cid: str) -> Any:
        args = call("search", {"query": "q", "limit": 3}, cid)
        return asyncio.run(wrapped.ainvoke(args)) if use_async else wrapped.invoke(args)

    with capture_spans() as cap, chaoskit.episode("sub", plan=plan):
        with pytest.raises(ConnectionResetError):
            go("s1")
        msg = go("s2")
        full = go("s3")
    assert len(content(msg)) == 1 and len(content(full)) == 3
    attrs = attempt_attributes(cap, "search")
    assert [a["gen_ai.tool.call.id"] for a in attrs] == ["s1", "s2", "s3"]
    assert [a["chaoskit.attempt"] for a in attrs] == [1, 2, 3]
    assert json.loads(attrs[0]["chaoskit.args"]) == {"query": "q", "limit": 3}


# -- @chaos under @tool ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
def test_chaos_under_tool(use_async: bool) -> None:
    if use_async:

        @tool
        @chaos(irreversible=True)
        async def refund(order_id: str) -> str:
            """Refund an order."""
            return f"refunded {order_id}"
    else:

        @tool
        @chaos(irreversible=True)
        def refund(order_id: str) -> str:
            """Refund an order."""
            return f"refunded {order_id}"

    assert refund.description == "Refund an order."
    assert refund.args == {"order_id": {"title": "Order Id", "type": "string"}}
    # already one attempt per call: chaos_tool makes it one chaos tool (for the tool call id), not two layers
    again = chaos_tool(refund)
    assert is_chaos_tool(again) and spec_of(again.coroutine if use_async else again.func) is None
    assert tool_spec(again).irreversible  # type: ignore[union-attr]
    plan = Plan(faults=[{"type": "rate_limit", "tool": "refund", "on_call": 1}])
    rec = Recorder()
    with capture_spans() as cap, chaoskit.episode("under", plan=plan):
        with pytest.raises(ToolHTTPError):
            args = call("refund", {"order_id": "1"})
            cfg: Any = {"callbacks": [rec]}
            asyncio.run(refund.ainvoke(args, cfg)) if use_async else refund.invoke(args, cfg)
        out = asyncio.run(refund.ainvoke({"order_id": "2"})) if use_async else refund.invoke({"order_id": "2"})
    assert out == "refunded 2" and rec.events[1][0] == "error"
    assert [a["chaoskit.outcome"] for a in attempt_attributes(cap, "refund")] == ["error", "ok"]


# -- the chaoskit.adapters entry point: @chaos on a LangChain tool, without the core importing this package -------


def test_chaoskit_adapter_recognises_and_wraps_langchain_tools() -> None:
    from chaoskit_langchain import chaoskit_adapter

    from chaoskit import ConfigError

    is_tool, wrap = chaoskit_adapter()
    lookup = make_lookup()
    assert is_tool(lookup) and not is_tool(lookup.func) and not is_tool(object())
    plan = Plan(faults=[{"type": "error", "tool": "lookup", "on_call": 1}])
    wrapped = wrap(
        lookup, plan=plan, irreversible=True, idempotency_arg="order_id", idempotent=False, error_result=None
    )
    assert is_chaos_tool(wrapped) and unwrap_tool(wrapped) is lookup
    with capture_spans() as cap, chaoskit.episode("adapter"):
        with pytest.raises(ConnectionResetError):
            wrapped.invoke({"order_id": "1"})
        assert wrapped.invoke({"order_id": "2"})["order_id"] == "2"
    attrs = attempt_attributes(cap, "lookup")
    assert [a["chaoskit.outcome"] for a in attrs] == ["error", "ok"]
    assert all(a["chaoskit.tool.irreversible"] for a in attrs)
    with pytest.raises(ConfigError, match="name= and description= do not apply to a LangChain tool"):
        wrap(lookup, name="other")


def test_the_adapter_entry_point_is_declared() -> None:
    import tomllib
    from pathlib import Path

    import chaoskit_langchain

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text(encoding="utf-8"))
    group = pyproject["project"].get("entry-points", {}).get("chaoskit.adapters", {})
    assert group.get("langchain") == "chaoskit_langchain:chaoskit_adapter", group
    assert callable(chaoskit_langchain.chaoskit_adapter)


def test_rewrapping_a_chaos_tool_with_other_options_is_refused_not_ignored() -> None:
    from chaoskit_langchain import chaos_tool
    from langchain_core.tools import tool as lc_tool

    from chaoskit import ConfigError

    @lc_tool
    def reverse_payment(order_id: str) -> str:
        """Refund the payment of an order."""
        return f"refunded {order_id}"

    once = chaos_tool(reverse_payment)
    assert chaos_tool(once) is once  # the same options: the same tool, one attempt per call
    # irreversible=True silently dropped would leave every duplicate refund unchecked
    with pytest.raises(ConfigError, match=r"'reverse_payment' already goes through chaoskit.*irreversible"):
        chaos_tool(once, irreversible=True)

    @lc_tool
    @chaos(irreversible=True)
    def charge_card(order_id: str) -> str:
        """Charge the card of an order."""
        return f"charged {order_id}"

    # @chaos under @tool: one chaos tool with the function's options (one attempt per call, with the call id)
    again = chaos_tool(charge_card, irreversible=True)
    assert is_chaos_tool(again) and tool_spec(again).irreversible  # type: ignore[union-attr]
