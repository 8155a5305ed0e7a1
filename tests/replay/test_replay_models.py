"""Model calls on a cassette: a create_agent (LangGraph) agent's chat model recorded once through ChaosMiddleware,
then replayed by request hash with the model replaced by one that fails if called."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from chaoskit_langchain import ChaosMiddleware
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import chaoskit
from chaoskit import ReplayMiss
from chaoskit.grading import Trace, run_checks
from chaoskit.testing import capture_spans
from examples.support.model import ScriptedChatModel, tool_calls

AFTER_WRITE_500 = {"faults": [{"tool": "refund", "on_call": 1, "type": "http", "status": 500, "after_write": True}]}


def _surface(exc: Exception, request: Any) -> str:
    return f"Error: {type(exc).__name__}: {exc}"


def policy(messages: Sequence[BaseMessage]) -> AIMessage:
    """Look the order up, refund it, refund again once after an error (a bad habit under after_write), then
    report every tool message read."""
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if not seen:
        return tool_calls(("lookup", {"order_id": "4832"}), turn=1)
    last = seen[-1]
    refunds = [m for m in seen if m.name == "refund"]
    if last.name == "lookup" or (last.status == "error" and len(refunds) < 2):
        return tool_calls(("refund", {"order_id": "4832", "amount": 25}), turn=len(seen) + 1)
    return AIMessage(json.dumps([[m.name, m.status, m.text] for m in seen]), id=f"final-{len(seen)}")


def refuse(messages: Sequence[BaseMessage]) -> AIMessage:
    raise AssertionError("the model was called: a replay must answer every model call from the cassette")


class Shop:
    """create_agent with two tools, a scripted (or refusing) chat model and ChaosMiddleware."""

    def __init__(self, model_policy: Any = policy) -> None:
        self.runs: list[str] = []
        self.model_calls = 0

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append("lookup")
            return {"order_id": order_id, "amount": 25, "status": "paid"}

        @tool
        def refund(order_id: str, amount: int) -> str:
            """Refund an order."""
            self.runs.append("refund")
            return f"refunded {amount} on {order_id}"

        def counted(messages: Sequence[BaseMessage]) -> AIMessage:
            self.model_calls += 1
            return model_policy(messages)  # type: ignore[no-any-return]

        self.graph = create_agent(
            ScriptedChatModel(policy=counted),
            tools=[lookup, refund],
            system_prompt="You are a careful shop assistant.",
            middleware=[ToolErrorMiddleware(on_error=_surface), ChaosMiddleware(irreversible=["refund"])],
        )

    def run(self, **episode: Any) -> tuple[list[BaseMessage], Trace]:
        with capture_spans(own=True) as cap, chaoskit.episode("shop", **episode) as ep:
            out = self.graph.invoke({"messages": [HumanMessage("refund order 4832")]})
            ep.finish(out["messages"][-1].text)
        return out["messages"], cap.trace()


def shape(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What the run said, message by message (ids left out: LangChain gives an answer a fresh id on every run)."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        text = m.text
        if isinstance(m, ToolMessage) and text.startswith("{"):
            text = json.loads(text)  # a replayed mapping has its keys in sorted order
        calls = [(c["name"], c["args"], c["id"]) for c in getattr(m, "tool_calls", [])]
        out.append((m.type, text, calls, getattr(m, "status", None)))
    return out


def answer(messages: list[BaseMessage]) -> list[list[Any]]:
    """The final answer: what the agent reports each tool said."""
    return [[n, st, json.loads(t) if t.startswith("{") else t] for n, st, t in json.loads(messages[-1].text)]


def verdicts(trace: Trace) -> list[tuple[str, str]]:
    # honors_retry_after grades wall-clock gaps, which a replay does not reproduce (docs/replay.md)
    return [(r.name, r.severity) for r in run_checks(trace) if r.name != "honors_retry_after"]


def test_recorded_agent_replays_with_a_model_that_must_not_be_called(tmp_path: Path) -> None:
    recorder = Shop()
    recorded, _ = recorder.run(record=tmp_path)
    assert recorder.runs == ["lookup", "refund"] and recorder.model_calls == 3
    text = (tmp_path / "shop.jsonl").read_text()
    assert "chaoskit.replay.answers" in text

    offline = Shop(refuse)
    replayed, trace = offline.run(replay=tmp_path)
    assert offline.runs == [] and offline.model_calls == 0  # neither a tool nor the model ran
    assert shape(replayed) == shape(recorded)
    assert [a.tool for a in trace.episodes[0].attempts] == ["lookup", "refund"]


def test_same_recording_under_after_write_gives_the_live_verdicts(tmp_path: Path) -> None:
    Shop().run(record=tmp_path)
    live = Shop()
    live_messages, live_trace = live.run(plan=AFTER_WRITE_500)
    assert live.runs == ["lookup", "refund", "refund"]

    # the model's answers after the 500 were never recorded: a replay that must not call the model says so
    with pytest.raises(ReplayMiss, match=r"no recorded model call with this request .*nearest recorded: model call"):
        Shop(refuse).run(plan=AFTER_WRITE_500, replay=tmp_path)

    # once, live: the model answers the faulted branch and on_miss=record adds its replies to the cassette
    before = (tmp_path / "shop.jsonl").read_bytes()
    mode = (tmp_path / "shop.jsonl").stat().st_mode
    adder = Shop()
    added_messages, _ = adder.run(plan=AFTER_WRITE_500, replay=tmp_path, on_miss="record")
    assert adder.runs == [] and adder.model_calls == 2  # the tools from the cassette, two new model answers
    after = (tmp_path / "shop.jsonl").read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    assert [p.name for p in tmp_path.iterdir()] == ["shop.jsonl"]  # no temporary file left behind
    assert (tmp_path / "shop.jsonl").stat().st_mode == mode

    # from then on the faulted run is offline and deterministic, with the live run's verdicts
    for _ in range(2):
        offline = Shop(refuse)
        messages, trace = offline.run(plan=AFTER_WRITE_500, replay=tmp_path)
        assert offline.runs == [] and offline.model_calls == 0
        assert shape(messages) == shape(added_messages)
        # what the model read and said is the live run's (a replayed mapping has its keys sorted)
        assert shape(messages)[:-1] == shape(live_messages)[:-1]
        assert answer(messages) == answer(live_messages)
        assert verdicts(trace) == verdicts(live_trace)
        assert ("no_duplicate_writes", "fail") in verdicts(trace)
    # the cassette stays a trace: it grades, its first episode the fault-free recording
    graded = Trace.load(str(tmp_path / "shop.jsonl"))
    assert len(graded.episodes) == 2 and graded.episodes[0].attributes.get("chaoskit.plan") is None


def test_model_recording_holds_no_secret(tmp_path: Path) -> None:
    key, token = "sk-live-93b1f0c2", "tok-8f2e1c9a77"
    runs: list[str] = []

    @tool
    def login(user: str, api_key: str) -> dict[str, Any]:
        """Log in."""
        runs.append(api_key)
        return {"user": user, "token": token, "expires_in": 3600}

    def login_policy(messages: Sequence[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if not seen:
            return tool_calls(("login", {"user": "ann", "api_key": key}), turn=1)
        return AIMessage("logged in as ann", id="final")

    def graph(model_policy: Any) -> Any:
        return create_agent(ScriptedChatModel(policy=model_policy), tools=[login], middleware=[ChaosMiddleware()])

    with chaoskit.episode("login", record=tmp_path) as ep:
        out = graph(login_policy).invoke({"messages": [HumanMessage("log in")]})
        ep.finish(out["messages"][-1].text)
    assert runs == [key]
    text = (tmp_path / "login.jsonl").read_text()
    assert key not in text and token not in text  # neither the tool's nor the model's recording holds them
    assert "expires_in" in text and "[REDACTED]" in text and "logged in as ann" in text
    with chaoskit.episode("login", replay=tmp_path) as ep:
        out = graph(refuse).invoke({"messages": [HumanMessage("log in")]})
        ep.finish(out["messages"][-1].text)
    assert runs == [key] and out["messages"][-1].text == "logged in as ann"
    # the model's tool call replays with the key redacted; the tool's answer with the token redacted
    assert out["messages"][1].tool_calls[0]["args"]["api_key"] == "[REDACTED]"
    assert json.loads(out["messages"][2].text)["token"] == "[REDACTED]"


def test_tampered_model_reply_is_refused_naming_the_file(tmp_path: Path) -> None:
    Shop().run(record=tmp_path)
    cassette = tmp_path / "shop.jsonl"
    lines = cassette.read_text().splitlines()
    # a model reply's list edited by hand into something that is not one
    spoiled = [ln.replace('\\"models\\": [', '\\"models\\": [17, ', 1) for ln in lines]
    assert spoiled != lines
    cassette.write_text("\n".join(spoiled) + "\n")
    root = next(n for n, ln in enumerate(spoiled, 1) if "invoke_agent" in ln)
    with pytest.raises(
        ReplayMiss, match=rf"shop\.jsonl, line {root}: episode .*chaoskit\.replay\.answers\.models\[0\]"
    ):
        Shop(refuse).run(replay=tmp_path)


def test_async_agent_records_and_replays_its_model_calls(tmp_path: Path) -> None:
    import asyncio

    async def run(shop: Shop, **episode: Any) -> list[BaseMessage]:
        async with chaoskit.episode("shop", **episode) as ep:
            out = await shop.graph.ainvoke({"messages": [HumanMessage("refund order 4832")]})
            ep.finish(out["messages"][-1].text)
        return list(out["messages"])

    recorder = Shop()
    recorded = asyncio.run(run(recorder, record=tmp_path))
    assert recorder.model_calls == 3
    offline = Shop(refuse)
    replayed = asyncio.run(run(offline, replay=tmp_path))
    assert offline.runs == [] and offline.model_calls == 0
    assert shape(replayed) == shape(recorded)
