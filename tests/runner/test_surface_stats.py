"""surface_stats: the volume of R over the grid and its drop per unit of eps and lambda, with intervals."""

from __future__ import annotations

import itertools

import pytest

from chaoskit.runner._pass_rates import Rate
from chaoskit.runner._surface import surface_stats


def point(eps: float, lam: float, value: float, *, k: int = 1, n: int = 400) -> dict[str, object]:
    r = Rate.estimate(value, n)
    return {"k": k, "epsilon": eps, "intensity": lam, **r.to_dict(), "episodes": n}


def grid(f, eps=(0.0, 0.5, 1.0), lams=(0.0, 0.2, 0.4), **kw) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    return [point(e, lam, f(e, lam), **kw) for e, lam in itertools.product(eps, lams)]


def test_linear_surface_gives_its_slopes_as_drops() -> None:
    stats = surface_stats(grid(lambda e, lam: 0.9 - 0.3 * e - 0.5 * lam))
    assert stats["slope_epsilon"]["value"] == pytest.approx(0.3, abs=1e-3)
    assert stats["slope_lambda"]["value"] == pytest.approx(0.5, abs=1e-3)
    for key in ("slope_epsilon", "slope_lambda"):
        s = stats[key]
        assert s["low"] < s["value"] < s["high"]
    assert stats["volume"]["value"] == pytest.approx(0.9 - 0.3 * 0.5 - 0.5 * 0.2, abs=1e-3)


def test_a_rising_surface_has_a_negative_drop() -> None:
    stats = surface_stats(grid(lambda e, lam: 0.5 + 0.4 * e))
    assert stats["slope_epsilon"]["value"] == pytest.approx(-0.4, abs=1e-3)
    assert stats["slope_lambda"]["value"] == pytest.approx(0.0, abs=1e-3)
    assert stats["slope_lambda"]["low"] < 0 < stats["slope_lambda"]["high"]


def test_volume_interval_is_the_mean_of_the_wilson_bounds() -> None:
    pts = grid(lambda e, lam: 1.0 - lam, n=20)
    vol = surface_stats(pts)["volume"]
    assert vol["low"] == pytest.approx(sum(p["low"] for p in pts) / len(pts), abs=1e-4)  # type: ignore[misc]
    assert vol["high"] == pytest.approx(sum(p["high"] for p in pts) / len(pts), abs=1e-4)  # type: ignore[misc]
    assert 0.0 <= vol["low"] < vol["value"] < vol["high"] <= 1.0


def test_fewer_observations_give_wider_slope_intervals() -> None:
    def width(n: int) -> float:
        s = surface_stats(grid(lambda e, lam: 0.9 - 0.5 * lam, n=n))["slope_lambda"]
        return float(s["high"] - s["low"])

    assert width(10) > width(100) > width(1000)


def test_single_value_axes_give_no_slope() -> None:
    only_lambda = surface_stats(grid(lambda e, lam: 1 - lam, eps=(0.0,)))
    assert only_lambda["slope_epsilon"] is None and only_lambda["slope_lambda"] is not None
    only_eps = surface_stats(grid(lambda e, lam: 1 - e, lams=(0.3,)))
    assert only_eps["slope_lambda"] is None and only_eps["slope_epsilon"]["value"] == pytest.approx(1.0, abs=1e-3)
    one = surface_stats([point(0.0, 0.0, 0.8)])
    assert one["slope_epsilon"] is None and one["slope_lambda"] is None
    assert one["volume"]["value"] == pytest.approx(0.8)


def test_the_other_axis_is_held_fixed_on_an_incomplete_grid() -> None:
    # R falls 0.2 from eps 0 to 0.5 at lambda 0; lambda costs 0.5; the point (0.5, 1) is missing.
    # A pooled fit would mix the lambda drop into the eps slope; the within-lambda fit does not.
    pts = [point(0.0, 0.0, 1.0), point(0.5, 0.0, 0.8), point(0.0, 1.0, 0.5)]
    stats = surface_stats(pts)
    assert stats["slope_epsilon"]["value"] == pytest.approx(0.4, abs=1e-3)
    assert stats["slope_lambda"]["value"] == pytest.approx(0.5, abs=1e-3)


def test_k_selects_the_points() -> None:
    pts = [*grid(lambda e, lam: 0.9, k=1), *grid(lambda e, lam: 0.6, k=3)]
    assert surface_stats(pts)["volume"]["value"] == pytest.approx(0.6)
    assert surface_stats(pts, k=1)["volume"]["value"] == pytest.approx(0.9)
    assert surface_stats(pts, k=2)["volume"]["value"] == pytest.approx(0.9)
    # a point that lacks the top k falls back to its largest k (too few repetitions there)
    mixed = [point(0.0, 0.0, 0.9, k=1), point(0.0, 0.0, 0.5, k=2), point(0.0, 0.5, 0.7, k=1)]
    assert surface_stats(mixed, k=2)["volume"]["value"] == pytest.approx((0.5 + 0.7) / 2)


def test_empty_surface() -> None:
    assert surface_stats([]) == {"volume": None, "slope_epsilon": None, "slope_lambda": None}
