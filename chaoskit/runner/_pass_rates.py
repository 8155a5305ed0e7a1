"""Rates for a battery: pass@1, the unbiased pass^k estimator, and Wilson score intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Rate", "pass_at_1", "pass_hat_k", "wilson"]


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (95% by default); ``(0, 1)`` when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(successes / n, 0.0), 1.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_1(c: int, n: int) -> float:
    """The share of runs that passed."""
    return c / n if n else 0.0


def pass_hat_k(c: int, n: int, k: int) -> float:
    """pass^k: the chance that k runs drawn without replacement from the n all pass, C(c,k)/C(n,k).

    This is the unbiased estimator used by tau-bench; for k = n it is 1 when every run passed, else 0.
    """
    if n <= 0 or k <= 0:
        return 0.0
    if k > n:
        raise ValueError(f"pass^k needs k <= n runs, got k={k}, n={n}")
    if c < k:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


@dataclass(frozen=True, slots=True)
class Rate:
    """A rate with its Wilson interval and the number of observations it rests on."""

    value: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, successes: float, n: int) -> Rate:
        """``successes`` out of ``n``, with its Wilson 95% interval."""
        lo, hi = wilson(successes, n)
        return cls(successes / n if n else 0.0, lo, hi, n)

    @classmethod
    def estimate(cls, value: float, n: int) -> Rate:
        """A rate estimated from ``n`` independent groups (the interval treats ``value * n`` as successes)."""
        lo, hi = wilson(value * n, n)
        return cls(value, lo, hi, n)

    def fmt(self, pct: bool = True) -> str:
        """``80% [49-94] n=10`` (or, with ``pct`` False, ``0.80 [0.49-0.94] n=10``)."""
        if pct:
            return f"{self.value * 100:.0f}% [{self.low * 100:.0f}-{self.high * 100:.0f}] n={self.n}"
        return f"{self.value:.2f} [{self.low:.2f}-{self.high:.2f}] n={self.n}"

    def to_dict(self) -> dict[str, float | int]:
        """The rate as a JSON-ready dict (value and bounds rounded to 6 places)."""
        return {"value": round(self.value, 6), "low": round(self.low, 6), "high": round(self.high, 6), "n": self.n}
