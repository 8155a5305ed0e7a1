"""Statistics on metric means: SD and t intervals, Welch's t-test and Cohen's d, in pure Python (no scipy)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "MeanSummary",
    "WelchTest",
    "cohens_d",
    "mean_summary",
    "t_critical",
    "t_two_sided_p",
    "welch_t_test",
]

# The Student t distribution is computed from the regularized incomplete beta function (Numerical Recipes 6.4,
# Lentz's continued fraction), a few dozen lines, tested against published table values
# (tests/metrics/test_metric_stats.py), so that the core install needs no scipy for a t interval.
_EPS = 1e-15
_TINY = 1e-300


def _beta_cf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (``df`` may be fractional, as Welch's is)."""
    if not df > 0:
        raise ValueError(f"the t distribution needs df > 0, got df={df}")
    if math.isinf(t):
        return 0.0
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2.0))
    return min(1.0, _beta_inc(df / 2.0, 0.5, df / (df + t * t)))


def t_critical(df: float, confidence: float = 0.95) -> float:
    """The two-sided critical value of Student's t: P(|T| <= value) = ``confidence`` (2.228 for df 10 at 95%)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    alpha = 1.0 - confidence
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > alpha:  # the p-value falls as t grows: widen, then bisect
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_two_sided_p(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2.0


def _clean(values: Iterable[float | None], what: str) -> list[float]:
    out: list[float] = []
    for v in values:
        if v is None:
            continue  # a metric not defined for an episode (no claim for SVR, no task for CDI) is left out
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{what}: every value must be a finite number (or None, left out), got {v!r}")
        out.append(float(v))
    return out


@dataclass(frozen=True, slots=True)
class MeanSummary:
    """A mean with its sample SD (n - 1) and its t interval; ``sd`` and the interval are None below 2 values."""

    n: int
    mean: float | None
    sd: float | None
    low: float | None
    high: float | None
    confidence: float = 0.95

    def fmt(self, digits: int = 2) -> str:
        """``0.41 ± 0.12 [0.33-0.49] n=10`` (mean ± SD [95% CI]); ``- n=0`` without values."""
        if self.mean is None:
            return f"- n={self.n}"
        if self.sd is None or self.low is None or self.high is None:
            return f"{self.mean:.{digits}f} n={self.n}"
        return (
            f"{self.mean:.{digits}f} ± {self.sd:.{digits}f} [{self.low:.{digits}f}-{self.high:.{digits}f}] n={self.n}"
        )

    def to_dict(self) -> dict[str, float | int | None]:
        """A JSON-ready dict (rounded to 6 places)."""
        return {
            "n": self.n,
            "mean": _round(self.mean),
            "sd": _round(self.sd),
            "low": _round(self.low),
            "high": _round(self.high),
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def mean_summary(values: Iterable[float | None], confidence: float = 0.95, *, what: str = "values") -> MeanSummary:
    """The mean of ``values`` (None left out), its sample SD and its two-sided t interval at ``confidence``."""
    xs = _clean(values, what)
    n = len(xs)
    if n == 0:
        return MeanSummary(0, None, None, None, None, confidence)
    mean = math.fsum(xs) / n
    if n == 1:
        return MeanSummary(1, mean, None, None, None, confidence)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_critical(n - 1, confidence) * sd / math.sqrt(n)
    return MeanSummary(n, mean, sd, mean - half, mean + half, confidence)


@dataclass(frozen=True, slots=True)
class WelchTest:
    """Welch's unequal-variance t-test of mean(b) against mean(a): t > 0 when b's mean is higher."""

    t: float
    df: float
    p_value: float

    def to_dict(self) -> dict[str, float | None]:
        """A JSON-ready dict; an infinite t (no variance on either side, different means) is written as None."""
        return {
            "t": round(self.t, 6) if math.isfinite(self.t) else None,
            "df": round(self.df, 6),
            "p_value": round(self.p_value, 6),
        }


def _moments(xs: Sequence[float], what: str) -> tuple[int, float, float]:
    n = len(xs)
    if n < 2:
        raise ValueError(f"{what}: a t-test needs at least 2 values on each side, got {n}")
    mean = math.fsum(xs) / n
    return n, mean, math.fsum((x - mean) ** 2 for x in xs) / (n - 1)


def welch_t_test(a: Iterable[float | None], b: Iterable[float | None]) -> WelchTest:
    """Welch's t-test of the mean of ``b`` against that of ``a`` (None values left out), with the
    Welch-Satterthwaite degrees of freedom and a two-sided p-value. With no variance on either side it is
    (0, p = 1) when the means are equal, else an infinite t with p = 0."""
    n1, m1, v1 = _moments(_clean(a, "first sample"), "first sample")
    n2, m2, v2 = _moments(_clean(b, "second sample"), "second sample")
    se1, se2 = v1 / n1, v2 / n2
    se = se1 + se2
    if se == 0.0:
        if m1 == m2:
            return WelchTest(0.0, float(n1 + n2 - 2), 1.0)
        return WelchTest(math.copysign(math.inf, m2 - m1), float(n1 + n2 - 2), 0.0)
    t = (m2 - m1) / math.sqrt(se)
    df = se * se / (se1 * se1 / (n1 - 1) + se2 * se2 / (n2 - 1))
    return WelchTest(t, df, t_two_sided_p(t, df))


def cohens_d(a: Iterable[float | None], b: Iterable[float | None]) -> float | None:
    """Cohen's d of ``b`` against ``a``: (mean(b) - mean(a)) / pooled SD, the pooled SD weighting each sample's
    variance by n - 1. With a pooled SD of 0 it is 0 when the means are equal, else None (unbounded: no scale)."""
    n1, m1, v1 = _moments(_clean(a, "first sample"), "first sample")
    n2, m2, v2 = _moments(_clean(b, "second sample"), "second sample")
    pooled = math.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / (n1 + n2 - 2))
    if pooled == 0.0:
        return 0.0 if m1 == m2 else None
    return (m2 - m1) / pooled
