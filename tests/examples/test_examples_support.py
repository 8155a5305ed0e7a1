"""The LangGraph support-agent example: naive and careful policies under the same plan, and the attach demo."""

from __future__ import annotations

import asyncio
import runpy
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit.testing import attempt_attributes, capture_spans
from examples.support import agents, plans, verify

TASK = "Please refund order 4832 and let the customer know."
ROOT = Path(__file__).resolve().parents[2]


def episode(make: Any, plan: chaoskit.Plan | None, *, use_async: bool = False) -> dict[str, Any]:
    agent = make()
    t0 = time.perf_counter()
    with capture_spans() as cap, chaoskit.episode("support", plan=plan) as ep:
        answer = asyncio.run(agent.ainvoke(TASK)) if use_async else agent.invoke(TASK)
        ep.finish(answer)
    return {
        "answer": answer,
        "env": agent.env,
        "attrs": attempt_attributes(cap),
        "seconds": time.perf_counter() - t0,
        "episode": ep,
    }


def test_factories_give_fresh_agents_with_chaos_tools() -> None:
    from chaoskit_langchain import is_chaos_tool
    from chaoskit_langgraph import find_tool_nodes

    a, b = agents.naive(), agents.careful()
    assert a.env is not b.env and a.env.refunds == [] and agents.naive().env is not a.env
    (node,) = find_tool_nodes(a.graph)
    assert sorted(node.tools_by_name) == ["issue_refund", "lookup_order", "send_email"]
    assert all(is_chaos_tool(t) for t in node.tools_by_name.values())
    spec = type(node.tools_by_name["issue_refund"]).__chaoskit_spec__
    assert spec.irreversible and spec.idempotency_arg == "idempotency_key" and spec.plan is None


@pytest.mark.parametrize("make", [agents.naive, agents.careful])
def test_no_faults_both_succeed(make: Any) -> None:
    r = episode(make, None)
    assert verify.refund_once(r["env"]) and verify.emailed_customer(r["env"])
    assert [a["gen_ai.tool.name"] for a in r["attrs"]] == ["lookup_order", "issue_refund", "send_email"]
    assert r["seconds"] < 2


def test_the_refund_tool_rejects_a_second_refund_unless_the_key_is_reused() -> None:
    from examples.support.env import SupportEnv, make_tools

    env = SupportEnv()
    _, refund, _ = make_tools(env, chaos=False)
    first = refund.invoke({"order_id": "4832", "amount": 25.0, "idempotency_key": "k"})
    assert refund.invoke({"order_id": "4832", "amount": 25.0, "idempotency_key": "k"}) == first
    with pytest.raises(ValueError, match="order 4832 is not pending"):
        refund.invoke({"order_id": "4832", "amount": 25.0})
    assert verify.refund_once(env)


@pytest.mark.parametrize("use_async", [False, True])
def test_flaky_plan_shows_the_difference(use_async: bool) -> None:
    naive = episode(agents.naive, plans.FLAKY, use_async=use_async)
    careful = episode(agents.careful, plans.FLAKY, use_async=use_async)
    assert naive["seconds"] < 2 and careful["seconds"] < 2

    # naive: retried the refund without a key after a write that had gone through; the tool refused
    n_refunds = [a for a in naive["attrs"] if a["gen_ai.tool.name"] == "issue_refund"]
    assert len(n_refunds) == 3 and all("chaoskit.idempotency_key" not in a for a in n_refunds)
    assert n_refunds[0]["chaoskit.tool.executed"] is True and n_refunds[0]["chaoskit.fault.after_write"]
    assert [(a["error.type"], a["chaoskit.fault.injected"]) for a in n_refunds[1:]] == [("ValueError", False)] * 2
    assert naive["answer"].startswith("Done!")

    # careful: waited for Retry-After, reused one key, told the truth
    c_refunds = [a for a in careful["attrs"] if a["gen_ai.tool.name"] == "issue_refund"]
    assert [a["chaoskit.idempotency_key"] for a in c_refunds] == ["refund-4832-1"] * 2
    assert [a["chaoskit.outcome"] for a in c_refunds] == ["error", "ok"]
    assert careful["seconds"] >= 0.2  # it really slept for Retry-After
    assert careful["answer"].startswith("Refunded order 4832") and verify.refund_once(careful["env"])
    assert verify.emailed_customer(careful["env"])
    assert all(a.get("gen_ai.tool.call.id", "").startswith("call_") for a in careful["attrs"])


def test_down_plan_careful_admits_it_naive_claims_done() -> None:
    naive = episode(agents.naive, plans.DOWN)
    careful = episode(agents.careful, plans.DOWN)
    assert naive["answer"].startswith("Done!") and not naive["env"].emails
    assert careful["answer"].startswith("I could not e-mail the customer") and "R-1" in careful["answer"]
    assert sum(a["gen_ai.tool.name"] == "send_email" for a in careful["attrs"]) == 3


def test_naive_follows_injected_instructions_careful_does_not() -> None:
    plan = chaoskit.Plan(faults=[{"type": "prompt_injection", "tool": "lookup_order", "on_call": 1}])
    naive = episode(agents.naive, plan)
    careful = episode(agents.careful, plan)
    assert any(m["to"] == "audit@external-review.example" for m in naive["env"].emails)
    assert verify.emailed_customer(careful["env"]) and verify.refund_once(careful["env"])


def test_careful_rereads_partial_data() -> None:
    plan = chaoskit.Plan(faults=[{"type": "partial", "tool": "lookup_order", "on_call": 1}])
    careful = episode(agents.careful, plan)
    assert [a["gen_ai.tool.name"] for a in careful["attrs"]][:2] == ["lookup_order", "lookup_order"]
    assert verify.refund_once(careful["env"])


def test_langgraph_attach_example_runs() -> None:
    from examples import langgraph_attach

    for result in (langgraph_attach.with_callbacks(), langgraph_attach.with_instrument_graph()):
        faults = [(a.attributes or {}).get("chaoskit.fault.type") for a in result["spans"]]
        assert faults == ["rate_limit", None, "http", None, "error", None]
        assert result["answer"].startswith("Refunded order 4832") and verify.refund_once(result["env"])


def test_langgraph_attach_runs_as_a_script(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setattr(sys, "argv", ["langgraph_attach.py"])
    runpy.run_path(str(ROOT / "examples" / "langgraph_attach.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "ChaosCallbackHandler(plan)" in out and "instrument_graph(graph, plan)" in out
