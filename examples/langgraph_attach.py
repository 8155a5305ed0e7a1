"""Chaos for an agent you already have, in one line: a callback handler, or instrumenting the compiled graph.

Run from the repository root:  python examples/langgraph_attach.py
The agent (``create_agent`` + a scripted model, see examples/support) is built with no chaoskit in it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make `examples` importable
    sys.path.insert(0, str(ROOT))

from chaoskit_langchain import ChaosCallbackHandler  # noqa: E402
from chaoskit_langgraph import instrument_graph, uninstrument_graph  # noqa: E402

import chaoskit  # noqa: E402
from chaoskit import semconv, telemetry  # noqa: E402
from examples.support import agents  # noqa: E402
from examples.support.plans import FLAKY  # noqa: E402

TASK = "Please refund order 4832 and let the customer know."


def with_callbacks() -> dict[str, Any]:
    agent = agents.SupportAgent(agents.careful_policy, chaos=False)
    with telemetry.capture() as cap, chaoskit.episode("attach-callbacks") as ep:
        # one line: the graph is untouched, the handler rides along in the config
        answer = agent.invoke(TASK, config={"callbacks": [ChaosCallbackHandler(FLAKY)]})
        ep.finish(answer)
    return {"answer": answer, "spans": cap.attempt_spans(), "env": agent.env}


def with_instrument_graph() -> dict[str, Any]:
    agent = agents.SupportAgent(agents.careful_policy, chaos=False)
    instrument_graph(
        agent.graph, FLAKY, irreversible=["issue_refund"], idempotency_args={"issue_refund": "idempotency_key"}
    )  # one line
    try:
        with telemetry.capture() as cap, chaoskit.episode("attach-instrument") as ep:
            answer = agent.invoke(TASK)
            ep.finish(answer)
    finally:
        uninstrument_graph(agent.graph)
    return {"answer": answer, "spans": cap.attempt_spans(), "env": agent.env}


def _show(title: str, result: dict[str, Any]) -> None:
    print(f"== {title}")
    for span in result["spans"]:
        a = span.attributes or {}
        fault = a.get(semconv.FAULT_TYPE) or "-"
        call_id = a.get(semconv.GEN_AI_TOOL_CALL_ID)
        print(
            f"  {a[semconv.GEN_AI_TOOL_NAME]:<13} #{a[semconv.ATTEMPT]}  call_id={call_id}  "
            f"fault={fault:<10} outcome={a[semconv.OUTCOME]}"
        )
    print(f"  answer: {result['answer']}")
    print(f"  refunds: {result['env'].refunds}")


def main() -> None:
    _show('config={"callbacks": [ChaosCallbackHandler(plan)]}', with_callbacks())
    _show("instrument_graph(graph, plan)", with_instrument_graph())


if __name__ == "__main__":
    main()
