"""Compare two agents from trajectory JSON files in the benchmark's shape: mean ± SD [95% CI], Welch, Cohen's d.

    python examples/compare_trajectories.py examples/trajectories/react.json examples/trajectories/reflexion.json

Needs the ``metrics`` extra (scikit-learn) for CDI and RIC. The two files here are small hand-written examples
(three scripted trajectories each), not measurements of any model.
"""

from __future__ import annotations

import sys

from chaoskit.metrics import aggregate, compare_metrics, read_trajectories


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compare_trajectories.py A.json B.json", file=sys.stderr)
        return 2
    a, b = (aggregate(read_trajectories(path)) for path in argv)
    print(f"A = {argv[0]} ({a.trajectories} trajectories), B = {argv[1]} ({b.trajectories} trajectories)")
    print(f"{'metric':<14}{'A mean ± SD [95% CI] n':<34}{'B mean ± SD [95% CI] n':<34}{'Welch t, df, p':<26}d")
    for name, c in compare_metrics(a, b).items():
        test = "-" if c.welch is None else f"{c.welch.t:+.2f}, {c.welch.df:.1f}, {c.welch.p_value:.3f}"
        d = "-" if c.d is None else f"{c.d:+.2f}"
        print(f"{name:<14}{c.a.fmt():<34}{c.b.fmt():<34}{test:<26}{d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
