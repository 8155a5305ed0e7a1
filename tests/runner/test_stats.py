from __future__ import annotations

import math

import pytest

from chaoskit.runner._pass_rates import Rate, pass_at_1, pass_hat_k, wilson


def test_pass_hat_k_hand_computed() -> None:
    # C(3,2)/C(5,2) = 3/10
    assert pass_hat_k(3, 5, 2) == pytest.approx(0.3)
    # C(4,3)/C(6,3) = 4/20
    assert pass_hat_k(4, 6, 3) == pytest.approx(0.2)
    # k = 1 is the plain pass rate
    assert pass_hat_k(7, 10, 1) == pytest.approx(0.7) == pass_at_1(7, 10)
    # k = n: 1 only when every run passed
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(4, 5, 5) == 0.0
    # fewer successes than k
    assert pass_hat_k(1, 8, 2) == 0.0
    assert pass_hat_k(0, 0, 1) == 0.0


def test_pass_hat_k_rejects_k_above_n() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        pass_hat_k(2, 3, 4)


def test_pass_hat_k_matches_sampling_definition() -> None:
    # the chance that k draws without replacement are all successes
    c, n, k = 6, 9, 3
    expected = (6 / 9) * (5 / 8) * (4 / 7)
    assert pass_hat_k(c, n, k) == pytest.approx(expected)


def test_wilson_hand_computed() -> None:
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4)
    assert hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(10, 10)
    assert hi == 1.0
    assert lo == pytest.approx(0.7225, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_rate_reports_its_n() -> None:
    r = Rate.of(3, 4)
    assert r.value == 0.75 and r.n == 4 and r.low < 0.75 < r.high
    assert "n=4" in r.fmt()
    d = r.to_dict()
    assert d["n"] == 4 and math.isclose(d["value"], 0.75)
