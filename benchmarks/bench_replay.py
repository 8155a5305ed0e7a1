"""Per-call cost of a replayed ``@chaos`` call against the live call, measured side by side.

    python benchmarks/bench_replay.py [--n 2000] [--repeat 15] [--timer wall|cpu]

One SDK ``TracerProvider`` (no processor of the application) installed globally; a cassette recorded once from
the tool (``chaoskit.episode(record=...)``). Cases, interleaved, each keeping its best run:

- ``live``: the real tool (a dict built from the arguments) in a plain episode;
- ``replay``: the same calls answered from the cassette (``chaoskit.episode(replay=...)``): the look-up by tool,
  arguments hash and occurrence, the recorded JSON decoded into a fresh value, and the attempt path;
- ``lookup``: :meth:`chaoskit.replay.Replay.lookup` alone, against ``dict.get`` on a dict of the same size.

Ratios are printed against ``live`` (and ``lookup`` against ``dict.get``); nothing here is a timed assertion.
``--timer cpu`` times the process's CPU time instead of the wall clock: on a machine shared with other work the
wall clock counts the time the process waited for a core. The number of times a replayed call's arguments are
hashed is counted too (not timed).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

import chaoskit
import chaoskit.engine._attrs as _attrs
from chaoskit import chaos
from chaoskit.replay import Cassette, Replay


@chaos
def tool(order_id: str, amount: float = 1.0) -> dict[str, float]:
    return {order_id: amount, "total": amount * 2}


def calls(n: int) -> None:
    for i in range(n):
        tool(str(i % 50), amount=float(i % 50))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per run")
    parser.add_argument("--repeat", type=int, default=15, help="runs per case (best kept)")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall", help="wall clock or process CPU time")
    args = parser.parse_args()
    timer = time.process_time if args.timer == "cpu" else time.perf_counter
    trace.set_tracer_provider(TracerProvider())
    folder = Path(tempfile.mkdtemp(prefix="chaoskit-bench-replay-"))
    with chaoskit.episode("bench", record=folder):
        calls(50)
    cassette = Cassette.open(folder, "bench")

    def live() -> None:
        with chaoskit.episode("bench"):
            calls(args.n)

    def replayed() -> None:
        with chaoskit.episode("bench", replay=cassette):
            calls(args.n)

    spec = tool.__chaoskit_spec__  # type: ignore[attr-defined]
    replay = Replay(cassette)
    hashes = [h for h, _ in cassette.answers["tool"]]
    table = {h: i for i, h in enumerate(hashes)}

    def lookups() -> None:
        for i in range(args.n):
            replay.lookup(spec, None, hashes[i % 50])

    def dict_gets() -> None:
        for i in range(args.n):
            table.get(hashes[i % 50])

    cases = {"live": live, "replay": replayed, "lookup": lookups, "dict.get": dict_gets}
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.repeat):
        for name, fn in cases.items():
            best[name] = min(best[name], timeit.timeit(fn, number=1, timer=timer))
    per = {k: v / args.n * 1e6 for k, v in best.items()}
    print(f"{args.n} calls, best of {args.repeat} runs (µs per call, {args.timer} time)")
    print(f"  live      {per['live']:7.2f}")
    print(f"  replay    {per['replay']:7.2f}   x{per['replay'] / per['live']:.2f} of live")
    print(
        f"  lookup    {per['lookup']:7.3f}   x{per['lookup'] / per['dict.get']:.1f} of dict.get ({per['dict.get']:.3f})"
    )
    print(f"  arguments hashed per replayed call: {hashes_per_call(cassette):g}")


def hashes_per_call(cassette: Cassette, n: int = 50) -> float:
    """How many times the arguments of a replayed call are hashed (the span's hash, and any second one)."""
    count = 0
    real = _attrs.describe_args

    def counting(*a: Any, **kw: Any) -> tuple[str, str]:
        nonlocal count
        count += 1
        return real(*a, **kw)

    # every module that reached describe_args through the _attrs module object sees the counting one
    _attrs.describe_args = counting
    try:
        with chaoskit.episode("bench", replay=cassette):
            calls(n)
    finally:
        _attrs.describe_args = real
    return count / n


if __name__ == "__main__":
    main()
