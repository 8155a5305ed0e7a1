"""Episodes per second and scaling efficiency of the thread, process and Ray executors, at 1 and 2 workers.

    python benchmarks/bench_executors.py                  # both workloads, every executor
    python benchmarks/bench_executors.py --only io --executors thread,process

Two workloads:

- ``cpu``: the example battery (``chaoskit run examples/``, 205 episodes of the 5 agents of each domain):
  the agents, the engine and the grading are Python code, so threads share one GIL.
- ``io``: an agent whose tools each sleep 50 ms (3 calls per episode): waiting, not computing.

Efficiency is ``rate(N) / (N x rate(1))`` of the same executor. Ray's start-up (about 10 s) is left out: a
local Ray is started once, with 2 CPUs, before its runs; the process pool's start-up (spawning the workers)
is in. On a machine shared with other work the figures move with its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chaoskit import chaos  # noqa: E402
from chaoskit.runner import _progress  # noqa: E402
from chaoskit.runner._battery import run_battery  # noqa: E402

SLEEP_S = 0.05


@chaos
def fetch_page(n: int) -> str:
    time.sleep(SLEEP_S)
    return f"page {n}"


class IOAgent:
    """Three tool calls that each wait 50 ms."""

    def invoke(self, task: str) -> str:
        pages = [fetch_page(n) for n in range(3)]
        return "done: " + ", ".join(pages)


def io_agent() -> IOAgent:
    return IOAgent()


def _workload(name: str, tmp: Path) -> dict[str, Any]:
    if name == "cpu":
        return {"paths": [str(ROOT / "examples")]}
    sc = tmp / "io.yaml"
    sc.write_text('name: io-bound\ntask: "fetch three pages"\nsuccess: {output_contains: ["done"]}\n')
    return {"paths": [str(sc)], "agent": "bench_executors:io_agent", "repeat": 60}


def _rate(executor: str, workers: int, kwargs: dict[str, Any]) -> tuple[float, float, int, float]:
    """(episodes/s over the whole run, episodes/s from the first finished episode to the last, episodes, wall)."""
    stamps: list[float] = []
    update = _progress.Progress.update

    def stamped(self: _progress.Progress, result: Any) -> None:
        stamps.append(time.perf_counter())
        update(self, result)

    _progress.Progress.update = stamped  # type: ignore[method-assign]
    t0 = time.perf_counter()
    try:
        result = run_battery(
            kwargs["paths"], executor=executor, workers=workers, **{k: v for k, v in kwargs.items() if k != "paths"}
        )
    finally:
        _progress.Progress.update = update  # type: ignore[method-assign]
    wall = time.perf_counter() - t0
    n = len(result.episodes)
    steady = (n - 1) / max(stamps[-1] - stamps[0], 1e-9)
    return n / wall, steady, n, wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=("cpu", "io"), default=None)
    p.add_argument("--executors", default="thread,process,ray")
    args = p.parse_args()
    os.chdir(ROOT)
    executors = [e.strip() for e in args.executors.split(",") if e.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for load in [args.only] if args.only else ["cpu", "io"]:
            kwargs = _workload(load, Path(tmp))
            for ex in executors:
                ray = None
                if ex == "ray":
                    try:
                        import ray
                    except ImportError:
                        print("ray: not installed (pip install 'chaoskit[ray]'), skipped")
                        continue
                    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                try:
                    r1, s1, n, w1 = _rate(ex, 1, kwargs)
                    r2, s2, _, w2 = _rate(ex, 2, kwargs)
                finally:
                    if ray is not None:
                        ray.shutdown()
                rows.append((load, ex, n, r1, r2, r2 / (2 * r1), s1, s2, s2 / (2 * s1)))
                print(f"{load:>4} {ex:>8}: {n} episodes, 1 worker {r1:6.1f}/s ({w1:.1f}s), ", end="")
                print(f"2 workers {r2:6.1f}/s ({w2:.1f}s); after start-up {s1:6.1f}/s and {s2:6.1f}/s", flush=True)
    print()
    print("Whole run (start-up included), and from the first finished episode to the last (after start-up):")
    print()
    print("| workload | executor | episodes | 1 worker | 2 workers | efficiency | 1, steady | 2, steady | efficiency |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for load, ex, n, r1, r2, eff, s1, s2, seff in rows:
        print(f"| {load} | {ex} | {n} | {r1:.1f}/s | {r2:.1f}/s | {eff:.2f} | {s1:.1f}/s | {s2:.1f}/s | {seff:.2f} |")


if __name__ == "__main__":
    main()
