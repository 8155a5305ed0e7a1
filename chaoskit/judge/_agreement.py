"""A judge's agreement with labels: Wilson intervals, Cohen's kappa with a bootstrap interval, Rogan-Gladen."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BOOTSTRAP_ROUNDS",
    "BOOTSTRAP_SEED",
    "Agreement",
    "agreement",
    "kappa",
    "kappa_interval",
    "rogan_gladen",
    "wilson",
]

#: z of a two-sided 95 % interval
_Z = 1.959963984540054
#: the kappa interval is a percentile bootstrap of this many resamples, drawn with this seed (reproducible)
BOOTSTRAP_ROUNDS = 2000
BOOTSTRAP_SEED = 0


def wilson(successes: int, n: int) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of a proportion ``successes / n``; None when ``n`` is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + _Z**2 / n
    center = (p + _Z**2 / (2 * n)) / denom
    half = _Z * math.sqrt(p * (1 - p) / n + _Z**2 / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


def kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Cohen's kappa of two binary raters from their 2x2 table; None when chance agreement is total (undefined)."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    po = (tp + tn) / n
    pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def _kappa_interval(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of kappa over :data:`BOOTSTRAP_ROUNDS` resamples of the pairs (seed
    :data:`BOOTSTRAP_SEED`); resamples where kappa is undefined are left out."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    rng = random.Random(BOOTSTRAP_SEED)
    cells = (0, 1, 2, 3)
    cum = list(itertools.accumulate((tp, fp, fn, tn)))
    values = []
    for _ in range(BOOTSTRAP_ROUNDS):
        drawn = rng.choices(cells, cum_weights=cum, k=n)
        k = kappa(drawn.count(0), drawn.count(1), drawn.count(2), drawn.count(3))
        if k is not None:
            values.append(k)
    if len(values) < BOOTSTRAP_ROUNDS // 2:
        return None
    values.sort()
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[math.ceil(0.975 * (len(values) - 1))]
    return (lo, hi)


def _kappa_at(prevalence: float, tpr: float, tnr: float) -> float | None:
    """Kappa of a rater with this TPR and TNR at this prevalence of positives (expected table, no sampling)."""
    tp, fn = prevalence * tpr, prevalence * (1 - tpr)
    tn, fp = (1 - prevalence) * tnr, (1 - prevalence) * (1 - tnr)
    return kappa(*(round(x * 1_000_000) for x in (tp, fp, fn, tn)))


def kappa_interval(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float] | None:
    """Kappa's 95 % interval: the percentile bootstrap, with its lower end capped by kappa at the lower Wilson
    bounds of TPR and TNR (both at once). The bootstrap alone is certain of a perfect score on 8 answers; the
    cap keeps a small or one-sided corpus from looking certain. None when it cannot be told (no positive or
    no negative label)."""
    boot = _kappa_interval(tp, fp, fn, tn)
    se, sp = wilson(tp, tp + fn), wilson(tn, tn + fp)
    if boot is None or se is None or sp is None:
        return None
    floor = _kappa_at((tp + fn) / (tp + fp + fn + tn), se[0], sp[0])
    low = boot[0] if floor is None else min(boot[0], floor)
    return (low, boot[1])


def rogan_gladen(observed: float, tpr: float | None, tnr: float | None) -> float | None:
    """The true prevalence behind an ``observed`` positive rate, given the rater's TPR and TNR
    (Rogan and Gladen, 1978), clipped to [0, 1]; None when TPR + TNR <= 1 (the rater tells nothing)."""
    if tpr is None or tnr is None or tpr + tnr - 1 <= 0:
        return None
    return min(1.0, max(0.0, (observed + tnr - 1) / (tpr + tnr - 1)))


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _ri(x: tuple[float, float] | None) -> list[float] | None:
    return None if x is None else [round(x[0], 4), round(x[1], 4)]


@dataclass(frozen=True)
class Agreement:
    """How a judge's flags agree with the labels on one question: the 2x2 table and its figures."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def tpr(self) -> float | None:
        """Sensitivity: of the labelled positives, the share the judge flagged."""
        pos = self.tp + self.fn
        return self.tp / pos if pos else None

    @property
    def tnr(self) -> float | None:
        """Specificity: of the labelled negatives, the share the judge left unflagged."""
        neg = self.tn + self.fp
        return self.tn / neg if neg else None

    @property
    def kappa(self) -> float | None:
        return kappa(self.tp, self.fp, self.fn, self.tn)

    def to_dict(self) -> dict[str, Any]:
        """The table, TPR and TNR with Wilson 95 % intervals, kappa with its bootstrap 95 % interval."""
        return {
            "n": self.n,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "tpr": _r(self.tpr),
            "tpr_ci95": _ri(wilson(self.tp, self.tp + self.fn)),
            "tnr": _r(self.tnr),
            "tnr_ci95": _ri(wilson(self.tn, self.tn + self.fp)),
            "kappa": _r(self.kappa),
            "kappa_ci95": _ri(kappa_interval(self.tp, self.fp, self.fn, self.tn)),
        }


def agreement(pairs: list[tuple[bool, bool]]) -> Agreement:
    """The :class:`Agreement` of (label, judged) pairs."""
    tp = sum(1 for lab, got in pairs if lab and got)
    fp = sum(1 for lab, got in pairs if not lab and got)
    fn = sum(1 for lab, got in pairs if lab and not got)
    return Agreement(tp, fp, fn, len(pairs) - tp - fp - fn)
