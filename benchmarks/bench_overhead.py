"""Per-call overhead of ``@chaos`` against a bare OpenTelemetry span and a bare call, measured side by side.

    python benchmarks/bench_overhead.py [--n 5000] [--repeat 25] [--timer wall|cpu]
    python benchmarks/bench_overhead.py --profile       # where a call with the plan not firing spends its time

The baseline (issue 11, "hot-path baseline"): one SDK ``TracerProvider`` with no span processor of the
application, installed globally so that chaoskit and the bare span use the same provider; every case runs
inside a ``chaoskit.episode`` whose plan has a fault that targets the tool but does not fire. The cases run
interleaved (case 1, case 2, ..., then again) and each keeps its best run, so machine noise hits all alike;
many short runs rather than a few long ones, so that on a busy machine each case gets a quiet one.

Cases: the bare call; a bare span with no attributes around it, and one with the 10 attributes a not-firing
``@chaos`` records (set the same way: at start, then after the call; what the SDK alone costs); ``@chaos``
with no plan, with the plan not firing, with a fault firing on every call (``empty``: the real call runs, its
result is hollowed), and with tracing off (``configure(trace=False)``, compared with the bare call in µs
added). Then the cost of a call whose argument is a 200,000-row list against a 10-row one (describing and
hashing the arguments is bounded by the attribute cap, so the two should cost about the same).

``--timer cpu`` times with the process's CPU clock instead of the wall clock: on a loaded machine, time the
process spends waiting for a core then counts for no case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
import timeit
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

import chaoskit
from chaoskit import Plan, chaos

Case = tuple[str, Callable[[], object], Callable[[], contextlib.AbstractContextManager[Any]]]


def tool(order_id: str, amount: float = 1.0) -> dict[str, float]:
    return {order_id: amount}


def rows_tool(rows: list[dict[str, int]]) -> int:
    return len(rows)


NOT_FIRING = Plan(seed=1, faults=[{"type": "error", "tool": ["tool", "rows_tool"], "on_call": 10**9}])
FIRING = Plan(seed=1, faults=[{"type": "empty", "tool": "tool"}])


@contextlib.contextmanager
def tracing_off() -> Iterator[None]:
    try:
        chaoskit.configure(trace=False)
    except TypeError:
        # a chaoskit without the switch: report it as not measured
        raise NotImplementedError from None
    try:
        yield
    finally:
        chaoskit.configure(trace=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=5_000, help="calls per timed run")
    parser.add_argument("--repeat", type=int, default=25, help="interleaved runs per case (best kept)")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall", help="clock to time with")
    parser.add_argument("--profile", action="store_true", help="profile the no-fire path (cProfile) instead")
    opts = parser.parse_args()
    if opts.profile:
        profile_no_fire(opts.n * 20)
        return
    timer = time.perf_counter if opts.timer == "wall" else time.process_time

    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    tracer = provider.get_tracer("bench")
    wrapped = chaos(tool)
    wrapped_rows = chaos(rows_tool)
    big = [{"id": i, "qty": i % 7} for i in range(200_000)]
    small = big[:10]

    def bare_span() -> None:
        with tracer.start_as_current_span("execute_tool tool"):
            tool("4832", 2.0)

    # the attributes a not-firing @chaos puts on its span (the episode id aside, a constant here): what the SDK
    # alone costs for the same span, the floor of any wrapper that records them
    same = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "tool",
        "gen_ai.tool.type": "function",
        "chaoskit.tool.irreversible": False,
        "chaoskit.attempt": 1,
        "chaoskit.episode.id": "c38dbc73b79749bc8ba305f6e98e47b1",
    }

    def bare_span_attributes() -> None:
        with tracer.start_as_current_span("execute_tool tool", attributes=same) as span:
            span.set_attribute("chaoskit.args", json.dumps({"order_id": "4832", "amount": 2.0}, sort_keys=True))
            span.set_attribute("chaoskit.args.hash", "06568ebfacf85dec")
            tool("4832", 2.0)
            span.set_attribute("chaoskit.outcome", "ok")
            span.set_attribute("chaoskit.tool.executed", True)

    def in_episode(plan: Plan | None) -> Callable[[], contextlib.AbstractContextManager[Any]]:
        return lambda: chaoskit.episode("bench", plan=plan)

    @contextlib.contextmanager
    def off_in_episode() -> Iterator[None]:
        with tracing_off(), chaoskit.episode("bench", plan=NOT_FIRING):
            yield

    cases: list[Case] = [
        ("bare call", lambda: tool("4832", 2.0), in_episode(NOT_FIRING)),
        ("bare span (no attributes)", bare_span, in_episode(NOT_FIRING)),
        ("bare span, @chaos's attributes", bare_span_attributes, in_episode(NOT_FIRING)),
        ("@chaos, no plan", lambda: wrapped("4832", 2.0), in_episode(None)),
        ("@chaos, plan not firing", lambda: wrapped("4832", 2.0), in_episode(NOT_FIRING)),
        ("@chaos, fault firing (empty)", lambda: wrapped("4832", 2.0), in_episode(FIRING)),
        ("@chaos, tracing off", lambda: wrapped("4832", 2.0), off_in_episode),
        ("@chaos, 10-row argument", lambda: wrapped_rows(small), in_episode(NOT_FIRING)),
        ("@chaos, 200,000-row argument", lambda: wrapped_rows(big), in_episode(NOT_FIRING)),
    ]
    best: dict[str, float] = {}
    number: dict[str, int] = {}
    for name, stmt, setup in cases:
        # a slow case (a large argument before its cost was bounded) gets fewer calls per run, not hours
        try:
            with setup():
                once = timeit.timeit(stmt, timer=timer, number=3) / 3
        except NotImplementedError:
            continue
        number[name] = max(3, min(opts.n, int(0.1 / max(once, 1e-9))))
    for _ in range(opts.repeat):
        for name, stmt, setup in cases:
            if name not in number:
                continue
            n = number[name]
            try:
                # a fresh episode per run: the attempts it records are freed with it
                with setup():
                    seconds = timeit.timeit(stmt, timer=timer, number=n)
            except NotImplementedError:
                continue
            us = seconds / n * 1e6
            best[name] = min(best.get(name, us), us)

    bare, span = best["bare call"], best["bare span (no attributes)"]
    print(f"{'case':32} {'µs/call':>9} {'vs span':>8} {'added over bare call':>21}")
    for name, _, _ in cases:
        if name not in best:
            print(f"{name:32} {'n/a':>9}")
            continue
        us = best[name]
        print(f"{name:32} {us:9.2f} {us / span:7.2f}x {us - bare:+19.2f}µs")
    if "@chaos, 200,000-row argument" in best:
        ratio = best["@chaos, 200,000-row argument"] / best["@chaos, 10-row argument"]
        print(f"\n200,000-row argument vs 10-row argument: {ratio:.2f}x")


def profile_no_fire(n: int) -> None:
    """cProfile over ``n`` calls of ``@chaos`` with the plan not firing, in one episode: the functions that take
    the most time of their own, with their share of the total, chaoskit's and OpenTelemetry's alike."""
    import cProfile
    import pstats

    trace.set_tracer_provider(TracerProvider())
    wrapped = chaos(tool)
    plan = Plan(seed=1, faults=[{"type": "error", "tool": "tool", "on_call": 10**9}])
    with chaoskit.episode("bench", plan=plan):
        for _ in range(1000):
            wrapped("4832", 2.0)  # warm
        prof = cProfile.Profile(time.process_time)  # CPU time: a loaded machine's waits count for nothing
        prof.enable()
        for _ in range(n):
            wrapped("4832", 2.0)
        prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in raw.values())
    print(f"{n:,} calls, @chaos with the plan not firing; own CPU time by function (under the profiler, which")
    print("adds its own cost to every function call: the shares, not the µs, are what to read)")
    print(f"{'share':>6} {'µs/call':>8}  function")
    rows = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:18]
    for (path, line, func), (_, _, own, _, _) in rows:
        where = path.split("site-packages/")[-1].split("/chaoskit/")[-1]
        print(f"{own / total:6.1%} {own / n * 1e6:8.2f}  {func} ({where}:{line})")
    by: dict[str, float] = {}
    for (path, _, _), (_, _, own, _, _) in raw.items():
        side = "opentelemetry" if "opentelemetry" in path else "chaoskit" if "/chaoskit/" in path else "other"
        by[side] = by.get(side, 0.0) + own
    print("own time by package: " + ", ".join(f"{k} {v / total:.1%}" for k, v in sorted(by.items())))


if __name__ == "__main__":
    main()
