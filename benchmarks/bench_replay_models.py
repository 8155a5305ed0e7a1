"""Per-call cost of answering a LangChain model call from a cassette: the request hash and the reply rebuilt.

    python benchmarks/bench_replay_models.py [--n 2000] [--repeat 5]

A support-agent request (system message, task, two tool calls and their JSON results, three tools offered) is
hashed as ``ChaosMiddleware`` hashes it (``chaoskit.replay.request_key`` over each message's canonical JSON), and
a recorded one-message reply is turned back into a ``ModelResponse`` (``messages_from_dict``). CPU time, best
run kept; nothing here is a timed assertion. A real model call takes hundreds of milliseconds.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from chaoskit_langchain._replay import _from_reply, _request_key, _to_reply
from langchain.agents.middleware import ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


class _Request:
    """The fields of a ``ModelRequest`` the hash reads."""

    def __init__(self) -> None:
        self.system_message = SystemMessage("You are a support agent. Use lookup_order, issue_refund and send_email.")
        order = {"order_id": "4832", "amount": 25.0, "status": "pending", "customer_email": "ann@example.com"}
        refund = {"order_id": "4832", "amount": 25.0, "idempotency_key": "refund-4832"}
        self.messages = [
            HumanMessage("Refund order 4832 for the damaged item"),
            AIMessage("", tool_calls=[{"name": "lookup_order", "args": {"order_id": "4832"}, "id": "c1"}]),
            ToolMessage(json.dumps(order), tool_call_id="c1", name="lookup_order"),
            AIMessage("", tool_calls=[{"name": "issue_refund", "args": refund, "id": "c2"}]),
            ToolMessage(json.dumps({"refund_id": "R-1", **refund}), tool_call_id="c2", name="issue_refund"),
        ]
        self.tools: list[Any] = [{"name": n} for n in ("lookup_order", "issue_refund", "send_email")]


def _best(fn: Callable[[], Any], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, time.process_time() - start)
    return best / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (best kept)")
    args = parser.parse_args()
    request = _Request()
    usage = {"input_tokens": 120, "output_tokens": 9, "total_tokens": 129}
    reply = _to_reply(ModelResponse(result=[AIMessage("Refunded order 4832.", id="r1", usage_metadata=usage)]))
    print(f"{args.n} calls, best of {args.repeat} runs (µs per call, CPU time)")
    print(f"  request hash (6 messages, 3 tools)  {_best(lambda: _request_key(request), args.n, args.repeat):7.1f}")
    print(f"  reply rebuilt (1 message)           {_best(lambda: _from_reply(reply, 'x'), args.n, args.repeat):7.1f}")


if __name__ == "__main__":
    main()
