"""Per-call overhead of @chaos with no fault firing, against a bare call and a bare OTel span.

    python benchmarks/bench_overhead.py [--n 50000]

Prints microseconds per call (best of 5 runs). Cases:
- bare: the undecorated function;
- otel span: the function inside `tracer.start_as_current_span` on an SDK provider with no exporter;
- @chaos, no plan: the pass-through path (span + argument hashing);
- @chaos, plan active, no fault firing: adds counting and the (pure) decision;
- @chaos, in an episode: adds recording the attempt on the episode.
Then the fault decision alone (counting the call and choosing the fault, no span), with and without a
probability draw, and the memory an episode holds per recorded attempt.
Also prints peak memory per 10,000 attempts inside one episode (tracemalloc).
"""

from __future__ import annotations

import argparse
import timeit
import tracemalloc

from opentelemetry.sdk.trace import TracerProvider

import chaoskit
from chaoskit import Plan, chaos


def tool(order_id: str, amount: float = 1.0) -> dict[str, float]:
    return {order_id: amount}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    n = parser.parse_args().n

    wrapped = chaos(tool)
    tracer = TracerProvider().get_tracer("bench")

    def with_span() -> None:
        with tracer.start_as_current_span("execute_tool tool"):
            tool("4832", 2.0)

    # a plan whose faults target another tool: the decision runs, nothing fires
    plan = Plan(seed=1, faults=[{"type": "error", "tool": "other", "probability": 0.5},
                                {"type": "latency", "tool": "tool", "on_call": 10**9}])

    def best(stmt: object) -> float:
        return min(timeit.repeat(stmt, number=n, repeat=5)) / n * 1e6  # type: ignore[arg-type]

    rows = [("bare call", best(lambda: tool("4832", 2.0))), ("bare otel span", best(with_span))]
    rows.append(("@chaos, no plan", best(lambda: wrapped("4832", 2.0))))
    with plan.activate():
        rows.append(("@chaos, plan active, no fault", best(lambda: wrapped("4832", 2.0))))
    with chaoskit.episode("bench", plan=plan):
        rows.append(("@chaos, in an episode", best(lambda: wrapped("4832", 2.0))))

    # the pure decision alone: count the call and pick the fault (no span, no argument handling)
    from chaoskit.engine._context import Scope

    scope = Scope()
    args = {"order_id": "4832", "amount": 2.0}
    decide_us = best(lambda: scope.next_call(plan, "tool", args))
    prob_plan = Plan(seed=1, faults=[{"type": "error", "tool": "tool", "probability": 0.0}])
    decide_prob_us = best(lambda: scope.next_call(prob_plan, "tool", args))

    base = rows[0][1]
    span = rows[1][1]
    print(f"{'case':34} {'µs/call':>9} {'vs bare':>9} {'vs span':>9}")
    for name, us in rows:
        print(f"{name:34} {us:9.2f} {us - base:+9.2f} {us - span:+9.2f}")
    print(f"\nfault decision alone (count + decide): {decide_us:.2f} µs; "
          f"with a probability draw: {decide_prob_us:.2f} µs")

    tracemalloc.start()
    with chaoskit.episode("mem", plan=plan):
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(10_000):
            wrapped("4832", 2.0)
        peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"\nmemory held by one episode over 10,000 attempts: {(peak - before) / 1024:.0f} KiB "
          f"(~{(peak - before) / 10_000:.0f} B per recorded attempt)")


if __name__ == "__main__":
    main()
