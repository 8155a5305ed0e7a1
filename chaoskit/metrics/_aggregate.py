"""Metrics over many trajectories: per metric the mean, SD and t interval, and two groups compared (Welch, d)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.metrics._compute import DELEGATION_TOOLS, TrajectoryMetrics, trajectory_metrics
from chaoskit.metrics._stats import MeanSummary, WelchTest, cohens_d, mean_summary, welch_t_test
from chaoskit.metrics._trajectory import Trajectory

__all__ = ["AGGREGATED", "Aggregate", "MetricComparison", "aggregate", "compare_metrics", "compare_values"]

#: the per-trajectory values :func:`aggregate` summarises (``steps``: the trajectory's length)
AGGREGATED: tuple[str, ...] = ("cdi", "svr", "ric", "daf", "hallucination", "steps")


@dataclass(frozen=True)
class Aggregate:
    """The trajectories' metrics summarised: per metric a :class:`MeanSummary` (a metric not defined for a
    trajectory is left out of its mean, so each ``n`` may differ), the failure-mode counts, and the raw values."""

    trajectories: int
    metrics: dict[str, MeanSummary]
    values: dict[str, list[float]]
    modes: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (without the raw values)."""
        return {
            "trajectories": self.trajectories,
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "modes": dict(self.modes),
        }


def _as_metrics(item: Any, delegation_tools: Collection[str]) -> Mapping[str, Any]:
    if isinstance(item, Trajectory):
        return trajectory_metrics(item, delegation_tools).to_dict()
    if isinstance(item, TrajectoryMetrics):
        return item.to_dict()
    if isinstance(item, Mapping):
        return item
    raise TypeError(
        f"aggregate() takes Trajectory, TrajectoryMetrics or their dicts (an episode's 'metrics' entry), "
        f"got {type(item).__name__}"
    )


def aggregate(
    items: Iterable[Trajectory | TrajectoryMetrics | Mapping[str, Any]],
    *,
    confidence: float = 0.95,
    delegation_tools: Collection[str] = DELEGATION_TOOLS,
) -> Aggregate:
    """Summarise many trajectories (or their metrics, or the ``metrics`` entries of a results file's episodes).

    A value that is not a finite number (besides None) is an error naming the metric and the trajectory."""
    values: dict[str, list[float]] = {k: [] for k in AGGREGATED}
    modes: dict[str, int] = {}
    n = 0
    for i, item in enumerate(items):
        m = _as_metrics(item, delegation_tools)
        n += 1
        for k in AGGREGATED:
            v = m.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"trajectory {i}: metric {k!r} must be a finite number or None, got {v!r}")
            values[k].append(float(v))
        for mode in m.get("modes") or ():
            modes[str(mode)] = modes.get(str(mode), 0) + 1
    summaries = {k: mean_summary(vs, confidence, what=k) for k, vs in values.items()}
    return Aggregate(n, summaries, values, modes)


@dataclass(frozen=True)
class MetricComparison:
    """One metric in two groups: each group's summary, Welch's t-test of B against A, and Cohen's d (B - A);
    the test and d are None when a side has fewer than 2 values."""

    a: MeanSummary
    b: MeanSummary
    welch: WelchTest | None
    d: float | None

    def to_dict(self, labels: tuple[str, str] = ("a", "b")) -> dict[str, Any]:
        """A JSON-ready dict, the two groups under ``labels``."""
        return {
            labels[0]: self.a.to_dict(),
            labels[1]: self.b.to_dict(),
            "welch": self.welch.to_dict() if self.welch else None,
            "cohens_d": None if self.d is None else round(self.d, 6),
        }


def compare_values(a: list[float], b: list[float], confidence: float = 0.95) -> MetricComparison:
    """Two samples of one metric compared (see :class:`MetricComparison`)."""
    test = welch_t_test(a, b) if len(a) >= 2 and len(b) >= 2 else None
    d = cohens_d(a, b) if test is not None else None
    return MetricComparison(mean_summary(a, confidence), mean_summary(b, confidence), test, d)


def compare_metrics(a: Aggregate, b: Aggregate, confidence: float = 0.95) -> dict[str, MetricComparison]:
    """Every aggregated metric of group ``b`` against group ``a`` (e.g. two agents, two models)."""
    return {k: compare_values(a.values[k], b.values[k], confidence) for k in AGGREGATED}
