"""Record once, replay with faults (chaoskit.episode(record=..., replay=...)): the cassette is the trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import parse_text, tool_graph
from chaoskit_langgraph import ChaosToolNode
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import chaoskit
from chaoskit import ReplayMiss, chaos
from chaoskit.grading import run_checks
from chaoskit.testing import capture_spans
from examples.support.model import ScriptedChatModel, tool_calls

AFTER_WRITE_500 = {"faults": [{"tool": "refund", "on_call": 1, "type": "http", "status": 500, "after_write": True}]}


class Shop:
    """A LangGraph agent (scripted model) that looks an order up, refunds it, retries the refund once on an error
    (a bad habit under after_write), and reports every ToolMessage it read."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []

        @tool
        def lookup(order_id: str) -> dict[str, Any]:
            """Look up an order."""
            self.runs.append(("lookup", order_id))
            return {"order_id": order_id, "amount": 25, "status": "paid"}

        @tool
        def refund(order_id: str, amount: int) -> str:
            """Refund an order."""
            self.runs.append(("refund", order_id))
            return f"refunded {amount} on {order_id}"

        self.tools = [lookup, refund]

    @staticmethod
    def policy(messages: list[BaseMessage]) -> AIMessage:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if not seen:
            return tool_calls(("lookup", {"order_id": "4832"}), turn=1)
        last = seen[-1]
        refunds = [m for m in seen if m.name == "refund"]
        if last.name == "lookup" or (last.status == "error" and len(refunds) < 2):
            return tool_calls(("refund", {"order_id": "4832", "amount": 25}), turn=len(seen) + 1)
        return AIMessage(json.dumps([[m.name, m.status, m.text] for m in seen]))

    def run(self, name: str = "shop", **episode: Any) -> tuple[Any, list[Any]]:
        graph = tool_graph(
            ScriptedChatModel(policy=self.policy),
            ChaosToolNode(self.tools, irreversible=["refund"], handle_tool_errors=True),
        )
        with capture_spans(own=True) as cap, chaoskit.episode(name, **episode) as ep:
            out = graph.invoke({"messages": [HumanMessage("refund order 4832")]})
            ep.finish(out["messages"][-1].text)
        return json.loads(out["messages"][-1].text), cap.trace()


def _parsed(answer: list[list[str]]) -> list[list[Any]]:
    return [[*m[:2], parse_text(m[2])] for m in answer]


def verdicts(trace: Any) -> list[tuple[str, str]]:
    # honors_retry_after grades the wall-clock gap before a retry: a replay answers faster than the live tools
    # (the recorded durations are not replayed), so that one check is left out of the comparison
    return [(r.name, r.severity) for r in run_checks(trace) if r.name != "honors_retry_after"]


def test_langgraph_agent_replayed_under_after_write_gets_the_live_verdicts(tmp_path: Path) -> None:
    recorder = Shop()
    recorded, _ = recorder.run(record=tmp_path)
    assert recorder.runs == [("lookup", "4832"), ("refund", "4832")]
    assert [m[:2] for m in recorded] == [["lookup", "success"], ["refund", "success"]]
    cassette = tmp_path / "shop.jsonl"
    assert cassette.is_file()

    live = Shop()
    live_answer, live_trace = live.run(plan=AFTER_WRITE_500)
    assert live.runs == [("lookup", "4832"), ("refund", "4832"), ("refund", "4832")]

    replayed = Shop()
    answer, trace = replayed.run(plan=AFTER_WRITE_500, replay=tmp_path)
    assert replayed.runs == []  # no real tool ran: every answer came from the cassette
    # what the agent read is the same (a mapping replays with its keys in sorted order: the recorded JSON's)
    assert _parsed(answer) == _parsed(live_answer)
    assert verdicts(trace) == verdicts(live_trace)
    # the duplicated irreversible write is caught on the replay as on the live run
    assert ("no_duplicate_writes", "fail") in verdicts(trace)
    (first, second) = trace.episodes[0].attempts_of("refund")
    assert first.injected and first.executed and first.http_status == 500
    assert second.outcome == "ok" and second.args_hash == first.args_hash


def test_replay_without_a_plan_gives_back_what_was_recorded(tmp_path: Path) -> None:
    recorded, _ = Shop().run(record=tmp_path)
    replayed = Shop()
    answer, trace = replayed.run(replay=tmp_path)
    assert replayed.runs == [] and _parsed(answer) == _parsed(recorded)
    assert isinstance(parse_text(answer[0][2]), dict)  # a dict result replays as the dict, not as its text
    assert all(v[1] != "fail" for v in verdicts(trace))


def test_cassette_holds_no_secret_value(tmp_path: Path) -> None:
    @chaos
    def login(user: str, api_key: str) -> dict[str, Any]:
        return {"user": user, "token": "tok-8f2e1c9a77", "expires_in": 3600}

    with chaoskit.episode("login", record=tmp_path) as ep:
        assert login("ann", api_key="sk-live-93b1f0c2")["token"] == "tok-8f2e1c9a77"
        ep.finish("ok")
    text = (tmp_path / "login.jsonl").read_text()
    assert "sk-live-93b1f0c2" not in text and "tok-8f2e1c9a77" not in text
    assert "expires_in" in text and "[REDACTED]" in text
    with chaoskit.episode("login", replay=tmp_path):
        # the redacted value is what a secret-holding result replays as (documented)
        assert login("ann", api_key="another-key") == {"user": "ann", "token": "[REDACTED]", "expires_in": 3600}


def _flaky_world() -> tuple[Any, list[str]]:
    runs: list[str] = []

    @chaos
    def fetch(url: str, ts: float = 0.0) -> Any:
        runs.append(url)
        if len(runs) == 1:
            raise ConnectionResetError("peer reset")
        return "text, not JSON" if url.endswith(".txt") else {"url": url, "n": len(runs)}

    return fetch, runs


def _agent(fetch: Any, ts: float = 0.0) -> list[Any]:
    out: list[Any] = []
    for url in ("a.json", "a.json", "b.txt"):
        try:
            out.append(fetch(url, ts=ts))
        except ConnectionResetError as exc:
            out.append(f"error: {exc}")
    return out


def test_occurrence_a_retry_meets_the_next_recorded_answer(tmp_path: Path) -> None:
    fetch, _ = _flaky_world()
    with chaoskit.episode("flaky", record=tmp_path):
        live = _agent(fetch)
    assert live == ["error: peer reset", {"url": "a.json", "n": 2}, "text, not JSON"]
    fetch2, runs2 = _flaky_world()
    with chaoskit.episode("flaky", replay=tmp_path):
        # the recorded error replays as the same built-in class with its message; the same call again gets the
        # next recorded answer
        replayed = _agent(fetch2)
    assert runs2 == [] and replayed == live

    class Odd(Exception):
        pass

    @chaos
    def odd() -> None:
        raise Odd("strange")

    with chaoskit.episode("odd", record=tmp_path), pytest.raises(Odd):
        odd()
    with chaoskit.episode("odd", replay=tmp_path), pytest.raises(chaoskit.replay.RecordedError) as err:
        odd()
    assert err.value.error_type == "test_occurrence_a_retry_meets_the_next_recorded_answer.<locals>.Odd"
    assert str(err.value) == "strange"


def test_ignored_arguments_match_a_call_whose_timestamp_changed(tmp_path: Path) -> None:
    fetch, _ = _flaky_world()
    with chaoskit.episode("ts", record=tmp_path):
        _agent(fetch, ts=1.0)
    fetch2, runs2 = _flaky_world()
    with pytest.raises(ReplayMiss, match="nearest recorded"), chaoskit.episode("ts", replay=tmp_path):
        _agent(fetch2, ts=2.0)
    with chaoskit.episode("ts", replay=tmp_path, ignore={"fetch": ["ts"]}):
        assert _agent(fetch2, ts=2.0)[1:] == [{"url": "a.json", "n": 2}, "text, not JSON"]
    assert runs2 == []


def test_a_miss_names_the_call_and_the_nearest_recorded_one(tmp_path: Path) -> None:
    @chaos
    def lookup(order_id: str, region: str = "eu") -> dict[str, str]:
        return {"order_id": order_id}

    with chaoskit.episode("miss", record=tmp_path):
        lookup("1")
        lookup("2", region="us")
    with pytest.raises(ReplayMiss) as err, chaoskit.episode("miss", replay=tmp_path):
        lookup("2", region="eu")
    text = str(err.value)
    assert "miss.jsonl" in text and '"order_id":"2"' in text and "lookup" in text
    assert 'nearest recorded: call 1 with {"order_id":"1","region":"eu"}' in text

    # an agent that swallows the miss as a tool error is still stopped at the end of the episode
    with pytest.raises(ReplayMiss), chaoskit.episode("miss", replay=tmp_path):
        try:
            lookup("9")
        except ReplayMiss:
            pass

    real: list[str] = []

    @chaos(name="lookup")
    def lookup2(order_id: str, region: str = "eu") -> dict[str, str]:
        real.append(order_id)
        return {"order_id": order_id, "live": "yes"}

    with chaoskit.episode("miss", replay=tmp_path, on_miss="passthrough") as ep:
        assert lookup2("1") == {"order_id": "1"}
        assert lookup2("7") == {"order_id": "7", "live": "yes"}
    assert real == ["7"] and len(ep.answers.misses) == 1


def _recorded(tmp_path: Path) -> Path:
    @chaos
    def lookup(order_id: str) -> dict[str, str]:
        return {"order_id": order_id}

    with chaoskit.episode("bad", record=tmp_path / "ok") as ep:
        lookup("1")
        lookup("2")
        ep.finish("done")
    return tmp_path / "ok" / "bad.jsonl"


def test_bad_cassettes_get_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    good = _recorded(tmp_path)
    text = good.read_text()

    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(ReplayMiss, match=r"cut\.jsonl, line 1"):
        chaoskit.episode("bad", replay=cut)

    def rewrite(name: str, change: Any) -> Path:
        docs = [json.loads(line) for line in text.splitlines()]
        for doc in docs:
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    ss["spans"] = [x for x in (change(sp) for sp in ss["spans"]) if x is not None]
        out = tmp_path / name
        out.write_text("".join(json.dumps(d) + "\n" for d in docs))
        return out

    root_lost = rewrite("noroot.jsonl", lambda sp: None if sp["name"].startswith("invoke_agent") else sp)
    with pytest.raises(ReplayMiss, match=r"noroot\.jsonl.*(root span|cut short|no complete episode)"):
        chaoskit.episode("bad", replay=root_lost)

    def tamper(sp: dict[str, Any]) -> dict[str, Any]:
        for kv in sp["attributes"]:
            if kv["key"] == "chaoskit.outcome":
                kv["value"] = {"stringValue": "fine"}
        return sp

    with pytest.raises(ReplayMiss, match=r"tampered\.jsonl, line 1.*chaoskit\.outcome"):
        chaoskit.episode("bad", replay=rewrite("tampered.jsonl", tamper))

    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(ReplayMiss, match=r"foreign\.json"):
        chaoskit.episode("bad", replay=foreign)

    with pytest.raises(ReplayMiss, match=r"nothing\.jsonl: no recording there"):
        chaoskit.episode("bad", replay=tmp_path / "nothing.jsonl")


def test_a_trace_without_results_cannot_answer_and_says_how_to_record(tmp_path: Path) -> None:
    @chaos
    def lookup(order_id: str) -> dict[str, str]:
        return {"order_id": order_id}

    path = tmp_path / "plain.jsonl"
    processor = chaoskit.telemetry.write_jsonl(path)
    try:
        with chaoskit.episode("plain"):
            lookup("1")
    finally:
        chaoskit.telemetry.remove_processor(processor)
    with pytest.raises(ReplayMiss, match=r"plain\.jsonl: span \w+ \(lookup call 1\): the span holds no result"):
        chaoskit.episode("plain", replay=path)


def test_recording_leaves_results_off_again_and_bad_arguments_are_named(tmp_path: Path) -> None:
    assert chaoskit.engine._config.CONFIG.record_results is False
    _recorded(tmp_path)
    assert chaoskit.engine._config.CONFIG.record_results is False
    with pytest.raises(chaoskit.ConfigError, match="on_miss='skip'"):
        chaoskit.episode("bad", replay=tmp_path / "ok", on_miss="skip")
    with pytest.raises(chaoskit.ConfigError, match=r"ignore\['lookup'\]"):
        chaoskit.episode("bad", replay=tmp_path / "ok", ignore={"lookup": "ts"})
    with pytest.raises(chaoskit.ConfigError, match="record="):
        chaoskit.episode("bad", record=42)  # type: ignore[arg-type]


def test_async_tools_replay_with_faults_on_top(tmp_path: Path) -> None:
    import asyncio

    runs: list[str] = []

    @chaos(irreversible=True)
    async def pay(order_id: str) -> dict[str, str]:
        runs.append(order_id)
        return {"paid": order_id}

    async def agent() -> list[Any]:
        out: list[Any] = []
        for _ in range(2):
            try:
                out.append(await pay("7"))
            except chaoskit.ToolHTTPError as exc:
                out.append(exc.status)
        return out

    async def record() -> list[Any]:
        async with chaoskit.episode("pay", record=tmp_path):
            return await agent()

    async def replay() -> list[Any]:
        plan = {"faults": [{"tool": "pay", "on_call": 1, "type": "http", "status": 500, "after_write": True}]}
        async with chaoskit.episode("pay", plan=plan, replay=tmp_path):
            return await agent()

    assert asyncio.run(record()) == [{"paid": "7"}, {"paid": "7"}] and runs == ["7", "7"]
    assert asyncio.run(replay()) == [500, {"paid": "7"}] and runs == ["7", "7"]


def test_a_trace_already_read_replays_like_a_file(tmp_path: Path) -> None:
    # what fetch_phoenix / Trace.from_jaeger return: a Trace; here read from captured spans
    chaoskit.configure(record_results=True)
    try:
        shop = Shop()
        recorded, trace = shop.run("from-trace")
    finally:
        chaoskit.configure(record_results=False)
    replayed = Shop()
    answer, _ = replayed.run("from-trace", replay=trace)
    assert replayed.runs == [] and _parsed(answer) == _parsed(recorded)
    with pytest.raises(ReplayMiss, match="<trace>: no complete episode"):
        chaoskit.replay.Cassette.from_trace(chaoskit.Trace([]))


def test_a_cassette_holds_only_its_own_episode_while_others_run(tmp_path: Path) -> None:
    import threading

    @chaos
    def ping(who: str) -> str:
        return f"pong {who}"

    started = threading.Barrier(2, timeout=10)

    def other() -> None:
        with chaoskit.episode("other"):
            started.wait()
            for _ in range(20):
                ping("other")

    thread = threading.Thread(target=other)
    thread.start()
    with chaoskit.episode("mine", record=tmp_path):
        started.wait()
        for _ in range(20):
            ping("mine")
    thread.join(timeout=10)
    episodes = chaoskit.Trace.load(tmp_path / "mine.jsonl").episodes
    assert [e.name for e in episodes] == ["mine"]
    assert [a.result for a in episodes[0].attempts] == ["pong mine"] * 20
