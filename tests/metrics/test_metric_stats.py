"""The statistics on metric means (chaoskit.metrics): t values, intervals, Welch's t-test and Cohen's d against
published values, the aggregator over many trajectories, and bad input refused."""

from __future__ import annotations

import math

import pytest

from chaoskit.metrics import (
    aggregate,
    cohens_d,
    compare_metrics,
    mean_summary,
    t_critical,
    t_two_sided_p,
    welch_t_test,
)

# two-sided 95% critical values of Student's t, from any printed t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2)
T_TABLE_95 = {1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 9: 2.262, 10: 2.228, 20: 2.086, 30: 2.042, 120: 1.980}


@pytest.mark.parametrize(("df", "value"), sorted(T_TABLE_95.items()))
def test_t_critical_matches_the_published_table(df: int, value: float) -> None:
    assert t_critical(df) == pytest.approx(value, abs=6e-4)


def test_t_critical_at_99_percent_and_the_normal_limit() -> None:
    assert t_critical(10, 0.99) == pytest.approx(3.169, abs=6e-4)  # the same table, 99% column
    assert t_critical(math.inf) == pytest.approx(1.95996, abs=1e-5)


def test_t_two_sided_p_known_values() -> None:
    assert t_two_sided_p(0.0, 5) == pytest.approx(1.0)
    # df = 1 is the Cauchy distribution: P(|T| > 1) = 1/2 exactly
    assert t_two_sided_p(1.0, 1) == pytest.approx(0.5, abs=1e-12)
    # df = 2 has a closed form: P(|T| > t) = 1 - t / sqrt(2 + t^2)
    for t in (0.5, 1.7, 4.0):
        assert t_two_sided_p(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-12)
    assert t_two_sided_p(2.228, 10) == pytest.approx(0.05, abs=1e-4)


def test_mean_summary_of_one_to_ten() -> None:
    s = mean_summary(range(1, 11))
    assert (s.n, s.mean) == (10, 5.5)
    assert s.sd == pytest.approx(math.sqrt(55 / 6))  # sample variance of 1..10 is 55/6
    half = 2.2622 * s.sd / math.sqrt(10)  # t(0.975, 9) = 2.262 from the table
    assert s.low == pytest.approx(5.5 - half, abs=1e-3)
    assert s.high == pytest.approx(5.5 + half, abs=1e-3)
    assert s.fmt() == "5.50 ± 3.03 [3.33-7.67] n=10"


def test_mean_summary_leaves_out_none_and_has_no_interval_below_two_values() -> None:
    assert mean_summary([None, 0.4, None]).to_dict() == {"n": 1, "mean": 0.4, "sd": None, "low": None, "high": None}
    empty = mean_summary([])
    assert (empty.n, empty.mean, empty.fmt()) == (0, None, "- n=0")


def test_welch_matches_the_published_example() -> None:
    # Wikipedia, "Welch's t-test", example 1: t = -2.46, df = 25.0, p = 0.021 (A1 against A2; here A2 against A1)
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    w = welch_t_test(a1, a2)
    assert w.t == pytest.approx(2.46, abs=5e-3)
    assert w.df == pytest.approx(24.99, abs=1e-2)
    assert w.p_value == pytest.approx(0.021, abs=5e-4)
    back = welch_t_test(a2, a1)
    assert back.t == pytest.approx(-w.t) and back.p_value == pytest.approx(w.p_value)


def test_welch_with_equal_variances_and_sizes_is_students_t() -> None:
    # equal n and equal variances: Welch's t equals Student's pooled t and df = 2n - 2
    w = welch_t_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    assert w.t == pytest.approx(1 / math.sqrt(2 / 3))
    assert w.df == pytest.approx(4.0)


def test_welch_without_variance() -> None:
    assert welch_t_test([1, 1], [1, 1]).p_value == 1.0
    w = welch_t_test([1, 1], [2, 2])
    assert math.isinf(w.t) and w.t > 0 and w.p_value == 0.0
    assert w.to_dict()["t"] is None  # JSON has no infinity


def test_cohens_d() -> None:
    assert cohens_d([2, 4, 6], [4, 6, 8]) == pytest.approx(1.0)  # means 4 and 6, both SDs 2
    # unequal sizes: pooled variance ((3-1)*4 + (5-1)*2.5) / 6 = 3
    assert cohens_d([2, 4, 6], [1, 2, 3, 4, 5]) == pytest.approx((3 - 4) / math.sqrt(3))
    assert cohens_d([1, 1], [1, 1]) == 0.0
    assert cohens_d([1, 1], [2, 2]) is None


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([1.0], [1.0, 2.0], "at least 2 values"),
        ([1.0, 2.0], [None, 3.0], "at least 2 values"),
        ([1.0, float("nan")], [1.0, 2.0], "finite number"),
        ([1.0, "2"], [1.0, 2.0], "finite number"),
        ([True, False], [1.0, 2.0], "finite number"),
    ],
)
def test_bad_samples_are_refused(a: list, b: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        welch_t_test(a, b)
    with pytest.raises(ValueError, match=message):
        cohens_d(a, b)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="df > 0"):
        t_two_sided_p(1.0, 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        t_critical(5, 1.5)


def _m(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"cdi": None, "svr": None, "ric": 0.0, "daf": 0.0, "hallucination": None, "steps": 3}
    base.update(kw)
    return base


def test_aggregate_and_compare_two_groups_of_trajectory_metrics() -> None:
    react = aggregate([_m(ric=0.1, steps=10), _m(ric=0.2, steps=12), _m(ric=0.3, steps=14, modes=["reflection_loop"])])
    reflexion = aggregate([_m(ric=0.0, steps=8), _m(ric=0.1, steps=9), _m(ric=0.2, steps=10)])
    assert react.trajectories == 3
    assert react.metrics["ric"].mean == pytest.approx(0.2) and react.metrics["ric"].sd == pytest.approx(0.1)
    assert react.metrics["svr"].n == 0  # never defined: left out, not read as 0
    assert react.modes == {"reflection_loop": 1}
    cmp = compare_metrics(react, reflexion)
    assert cmp["ric"].d == pytest.approx(-1.0)
    assert cmp["ric"].welch is not None and cmp["ric"].welch.df == pytest.approx(4.0)
    assert cmp["svr"].welch is None and cmp["svr"].d is None
    assert set(cmp["ric"].to_dict(("react", "reflexion"))) == {"react", "reflexion", "welch", "cohens_d"}


def test_aggregate_refuses_what_is_not_metrics() -> None:
    with pytest.raises(TypeError, match="Trajectory, TrajectoryMetrics"):
        aggregate([[0.1, 0.2]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="trajectory 1: metric 'ric'"):
        aggregate([_m(), _m(ric="high")])
