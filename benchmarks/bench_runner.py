"""Throughput of ``chaoskit run``: episodes per second at 1 and 8 workers, and the runner's own overhead.

    python benchmarks/bench_runner.py                 # 1,280 episodes, 20 ms of "model latency" per step
    python benchmarks/bench_runner.py --episodes 320 --latency 0.01

The example agents (examples/plain) sleep ``CHAOSKIT_EXAMPLE_LATENCY`` seconds per model step to imitate
I/O-bound model calls; with N workers the runner should approach N x the single-worker throughput. The
runner's own overhead per episode (planning, the episode context, span collection, grading, scoring) is
measured with a no-op agent (one ``@chaos`` tool call, no faults, no sleeps), so nearly all of the time per
episode is the runner's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaoskit import chaos  # noqa: E402
from chaoskit.runner._battery import run_battery  # noqa: E402
from chaoskit.scenarios._scenario import Scenario, load_battery  # noqa: E402

PLAIN = (
    "refund-after-500.yaml",
    "refund-rate-limited.yaml",
    "refund-outage.yaml",
    "status-timeouts.yaml",
    "status-schema-drift.yaml",
    "status-injection.yaml",
    "search-partial.yaml",
)


def scenarios() -> list[Scenario]:
    """The 7 plain-agent scenarios of examples/scenarios and a renamed copy of one: 8 x 2 lambdas x 80 = 1280."""
    found = load_battery([ROOT / "examples" / "scenarios" / name for name in PLAIN])
    copy = found[-1].model_copy(update={"name": found[-1].name + "-copy"})
    copy._source = found[-1].source
    return [*found, copy]


@chaos
def ping(x: int) -> int:
    return x


class NoOp:
    def invoke(self, task: str) -> str:
        ping(1)
        return "pong"


def bench(episodes: int, workers: int, latency: float, agent: str) -> tuple[int, float, float]:
    os.environ["CHAOSKIT_EXAMPLE_LATENCY"] = str(latency)
    battery = scenarios()
    repeat = max(1, episodes // (len(battery) * 2))
    t0 = time.perf_counter()
    result = run_battery(scenarios=battery, agent=agent, repeat=repeat, intensities=[0.0, 0.2], seed=1, workers=workers)
    wall = time.perf_counter() - t0
    n = len(result.episodes)
    return n, n / wall, wall


def overhead(episodes: int) -> float:
    """Seconds per episode of the runner itself, with a no-op agent."""
    with tempfile.TemporaryDirectory() as tmp:
        sc = Path(tmp) / "noop.yaml"
        sc.write_text('name: noop\ntask: "ping"\nsuccess: {output_contains: ["pong"]}\n')
        run_battery([sc], agent=NoOp, repeat=20)  # warm-up
        t0 = time.perf_counter()
        run_battery([sc], agent=NoOp, repeat=episodes)
        return (time.perf_counter() - t0) / episodes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=1280)
    p.add_argument("--latency", type=float, default=0.02, help="seconds per model step (default 0.02)")
    p.add_argument("--agent", default="examples.plain.agents:careful")
    args = p.parse_args()
    os.chdir(ROOT)
    print(f"{args.episodes} episodes of {args.agent}, {args.latency * 1000:.0f} ms per model step")
    rates = {}
    for workers in (1, 8):
        n, rate, wall = bench(args.episodes, workers, args.latency, args.agent)
        rates[workers] = rate
        print(f"  workers={workers}: {rate:8.1f} episodes/s  ({n} episodes in {wall:.1f}s)")
    print(f"  speed-up 8 vs 1 worker: {rates[8] / rates[1]:.2f}x")
    per = overhead(args.episodes)
    print(f"  runner overhead: {per * 1000:.2f} ms per episode (no-op agent: episode, spans, grading, score)")


if __name__ == "__main__":
    main()
