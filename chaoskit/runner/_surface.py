"""The reliability surface in three numbers: its volume (mean R over the grid) and its drop per unit of eps and lambda.

Input: the summary's surface points, ``{"k", "epsilon", "intensity", "value", "low", "high", "n", "episodes"}``,
R(j, eps, lambda) for j = 1..k with a 95 % Wilson interval each (``chaoskit.runner._summary``). At each grid
point the measure is R at the summary's k (the largest j the point has, up to k).

- **volume**: the mean of R over the grid points, each point weighted alike. Its interval is the mean of the
  points' Wilson bounds: never narrower than the interval of the mean, so it errs on the wide side.
- **slope_epsilon**, **slope_lambda**: the least-squares drop of R per unit of eps (of lambda), the other axis
  held fixed (a within-group fit: the slope pooled over the rows of equal lambda, resp. eps), reported as a drop:
  ``-dR/d eps``, positive when R falls as eps grows. The interval is the normal one of the delta method:
  the slope is a weighted sum ``sum c_i R_i`` of the points, so its standard error is
  ``sqrt(sum c_i^2 se_i^2)``, each point's ``se_i`` taken from its Wilson interval (width / 3.92). None when
  the grid has one eps (resp. lambda) value only, or no row with two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["surface_stats"]

_Z = 1.959963984540054


def _round(x: float) -> float:
    return round(x, 4)


def _points(surface: Iterable[Mapping[str, Any]], k: int | None) -> list[Mapping[str, Any]]:
    """One point per (eps, lambda): the entry with the largest j up to ``k`` (all j when ``k`` is None)."""
    best: dict[tuple[float, float], Mapping[str, Any]] = {}
    for p in surface:
        if k is not None and p["k"] > k:
            continue
        key = (float(p["epsilon"]), float(p["intensity"]))
        if key not in best or p["k"] > best[key]["k"]:
            best[key] = p
    return [best[key] for key in sorted(best)]


def _se(p: Mapping[str, Any]) -> float:
    return max(0.0, float(p["high"]) - float(p["low"])) / (2 * _Z)


def _slope(points: Sequence[Mapping[str, Any]], axis: str, other: str) -> dict[str, float] | None:
    """The within-group least-squares drop of R per unit of ``axis``, the ``other`` axis held fixed."""
    groups: dict[float, list[Mapping[str, Any]]] = {}
    for p in points:
        groups.setdefault(float(p[other]), []).append(p)
    coef: list[tuple[float, Mapping[str, Any]]] = []
    sxx = 0.0
    for ps in groups.values():
        mean_x = sum(float(p[axis]) for p in ps) / len(ps)
        for p in ps:
            dx = float(p[axis]) - mean_x
            coef.append((dx, p))
            sxx += dx * dx
    if sxx <= 1e-12:
        return None
    slope = sum(dx * float(p["value"]) for dx, p in coef) / sxx
    se = math.sqrt(sum((dx / sxx) ** 2 * _se(p) ** 2 for dx, p in coef))
    drop = -slope
    return {"value": _round(drop), "low": _round(drop - _Z * se), "high": _round(drop + _Z * se)}


def surface_stats(surface: Sequence[Mapping[str, Any]], k: int | None = None) -> dict[str, Any]:
    """``{"volume": {"value", "low", "high"}, "slope_epsilon": {...} | None, "slope_lambda": {...} | None}``
    of the surface points at ``k`` (default: the largest k among them); see the module docstring."""
    points = _points(surface, k)
    if not points:
        return {"volume": None, "slope_epsilon": None, "slope_lambda": None}
    n = len(points)
    volume = {
        "value": _round(sum(float(p["value"]) for p in points) / n),
        "low": _round(sum(float(p["low"]) for p in points) / n),
        "high": _round(sum(float(p["high"]) for p in points) / n),
    }
    single_eps = len({p["epsilon"] for p in points}) < 2
    single_lam = len({p["intensity"] for p in points}) < 2
    return {
        "volume": volume,
        "slope_epsilon": None if single_eps else _slope(points, "epsilon", "intensity"),
        "slope_lambda": None if single_lam else _slope(points, "intensity", "epsilon"),
    }
