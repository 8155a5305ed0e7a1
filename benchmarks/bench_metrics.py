"""The cost of the trajectory metrics per 1,000 model steps (issue 18).

    python benchmarks/bench_metrics.py                 # 1,000 steps as 100 episodes of 10, and as 1 of 1,000
    python benchmarks/bench_metrics.py --repeat 5      # the fastest of 5 runs per cell
    python benchmarks/bench_metrics.py --long          # also peak memory on 1,000-4,000-step episodes

Each step is a realistic scripted-agent step (a sentence naming the task's objects, one tool call with an
argument, the previous call's result read) with one tool attempt, built once with ``Episode.step`` and a
``@chaos`` tool under capture, then read back into trajectories. Timed: every metric at once
(``trajectory_metrics``), then each one alone on fresh trajectories (CDI and RIC share one TF-IDF fit per
trajectory, so the first of them pays for it), and the failure modes and the cost. scikit-learn's import (about
1 s, paid once per process) is done before timing. Figures are milliseconds per 1,000 steps.

``--long`` adds one episode each of 1,000, 2,000 and 4,000 steps, with the peak memory (``tracemalloc``, which
sees NumPy's and SciPy's buffers) of ``trajectory_metrics`` beside that of the dense n x n similarity matrix
(``cosine_matrix``, what RIC computed before its window, ``CYCLE_WINDOW``): the first grows linearly, the second
quadratically.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import chaoskit
from chaoskit import chaos
from chaoskit.metrics import (
    Trajectory,
    context_drift_index,
    delegation_amplification_factor,
    episode_cost,
    failure_modes,
    recursive_instability_coefficient,
    silent_verification_rate,
    tool_argument_hallucination_rate,
    trajectories_from_spans,
    trajectory_metrics,
)
from chaoskit.metrics._similarity import cosine_matrix, load_sklearn_text
from chaoskit.testing import capture_spans

_ITEMS = ("kettle", "mug", "toaster", "lamp", "chair", "desk", "fan", "heater")


@chaos
def check_inventory(sku: str) -> dict[str, Any]:
    return {"sku": sku, "available": 12, "unit_price": 25.0}


def build(episodes: int, steps: int) -> list[Trajectory]:
    """``episodes`` trajectories of ``steps`` steps each, from real spans."""
    with capture_spans() as cap:
        for e in range(episodes):
            with chaoskit.episode(f"bench-{e}", capture_content=True) as ep:
                ep.set_attribute("task", f"Check the stock of {', '.join(_ITEMS)} and report each price.")
                last: Any = None
                for i in range(steps):
                    item = _ITEMS[i % len(_ITEMS)]
                    sku = f"{item[:3].upper()}-{100 + i}"
                    ep.step(
                        f"Step {i}: to check the stock of the {item} ({sku}) I call check_inventory; "
                        "then I will compare the unit price with the catalog.",
                        tool_calls=[{"name": "check_inventory", "arguments": {"sku": sku}}],
                        tool_results=[last] if last is not None else [],
                        model="bench-model",
                        input_tokens=400 + 30 * i,
                        output_tokens=40,
                    )
                    last = check_inventory(sku)
    return trajectories_from_spans(cap.spans)


def _forget(trajs: list[Trajectory]) -> list[Trajectory]:
    # drop what a trajectory caches (its similarity matrix and step windows), so that each run pays in full
    for t in trajs:
        object.__setattr__(t, "_similarity", None)
        object.__setattr__(t, "_windows", None)
    return trajs


def _time(fn: Callable[[Trajectory], Any], trajs: list[Trajectory], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _forget(trajs)
        t = time.perf_counter()
        for traj in trajs:
            fn(traj)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the fastest is shown (default 3)")
    parser.add_argument("--long", action="store_true", help="also peak memory on 1,000-4,000-step episodes")
    args = parser.parse_args(argv)
    load_sklearn_text()  # the one-off import is not the metrics' cost
    print(f"{'shape':<22} {'all':>9} {'CDI':>9} {'SVR':>9} {'RIC':>9} {'DAF':>9} {'halluc':>9} {'modes+cost':>11}")
    failed = [{"name": "output_contains", "passed": False}]
    for episodes, steps in ((100, 10), (10, 100), (1, 1000)):
        trajs = build(episodes, steps)
        cells = [
            _time(fn, trajs, args.repeat)
            for fn in (
                trajectory_metrics,
                context_drift_index,
                silent_verification_rate,
                recursive_instability_coefficient,
                delegation_amplification_factor,
                tool_argument_hallucination_rate,
            )
        ]
        metrics = {id(t): trajectory_metrics(t) for t in trajs}

        def modes_and_cost(traj: Trajectory, m: dict[int, Any] = metrics) -> None:
            failure_modes(failed, m[id(traj)], traj)
            episode_cost(traj)

        cells.append(_time(modes_and_cost, trajs, args.repeat))
        per_k = [c * 1000 * 1000 / (episodes * steps) for c in cells]  # ms per 1,000 steps
        print(
            f"{f'{episodes} x {steps} steps':<22} " + " ".join(f"{v:>9.1f}" for v in per_k[:6]) + f" {per_k[6]:>11.1f}"
        )
    print("(milliseconds per 1,000 steps, the fastest of --repeat runs; 'all' is trajectory_metrics)")
    if args.long:
        _long()
    return 0


def _peak(fn: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, peak MB) of one call of ``fn``."""
    tracemalloc.start()
    t = time.perf_counter()
    fn()
    took = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return took, peak


def _long() -> None:
    print(f"\n{'steps':>6} {'metrics s':>10} {'metrics MB':>11} {'dense n x n s':>14} {'dense MB':>9}")
    for steps in (1000, 2000, 4000):
        (traj,) = _forget(build(1, steps))
        docs = [traj.task or "", *(s.document for s in traj.steps)]
        ms, mm = _peak(partial(trajectory_metrics, traj))
        ds, dm = _peak(partial(cosine_matrix, docs))
        print(f"{steps:>6} {ms:>10.2f} {mm:>11.1f} {ds:>14.2f} {dm:>9.1f}")
    print("(one run each, under tracemalloc, which slows both alike)")


if __name__ == "__main__":
    raise SystemExit(main())
