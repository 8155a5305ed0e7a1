"""Comparing two results files (``chaoskit compare OLD NEW``): pass-rate changes, significance, regressions, text.

Episodes are pooled per (scenario, agent) over every grid point and repetition of a file. Beside the
regression rules, each row compares the episode scores and the trajectory metrics (``--metrics`` runs) with
means, SDs, t intervals, Welch's t-test and Cohen's d (chaoskit.metrics); those inform and never gate.
A scenario's rows are paired by agent: the same agent in both files, or, when a scenario has exactly one agent
left over on each side, those two (an A/B run of two agent versions). What counts as a regression is in
:func:`compare_results`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.metrics import AGGREGATED, MetricComparison, compare_values, failed_checks
from chaoskit.runner._pass_rates import Rate

__all__ = [
    "AXES",
    "COMPARISON_KIND",
    "Comparison",
    "Group",
    "RateChange",
    "RowComparison",
    "compare_results",
    "render_comparison",
    "two_proportion_test",
]

#: the ``kind`` of the file ``chaoskit compare --json OUT`` writes
COMPARISON_KIND = "chaoskit-comparison"


def two_proportion_test(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """The pooled two-proportion z-test of ``x1/n1`` against ``x2/n2``: ``(z, two-sided p)``; z > 0 when the
    second proportion is higher. With no variance (both all passed, or both all failed) it is ``(0, 1)``."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError(f"a two-proportion test needs n1, n2 >= 1, got n1={n1}, n2={n2}")
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
    if se == 0.0:
        return 0.0, 1.0
    z = (x2 / n2 - x1 / n1) / se
    return z, math.erfc(abs(z) / math.sqrt(2.0))


@dataclass
class Group:
    """The episodes of one file pooled for one row: counts, mean score, mean attempts and failed check names."""

    n: int = 0
    passes: int = 0
    attempts_sum: int = 0
    passed_attempts_sum: int = 0
    failed_checks: set[str] = field(default_factory=set)
    #: each episode's score, and each trajectory metric's values (episodes run with --metrics), for the t-tests
    scores: list[float] = field(default_factory=list)
    metric_values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, episode: Mapping[str, Any]) -> None:
        """Count one episode (a results file's ``episodes`` entry, already checked by ``load_results``)."""
        self.n += 1
        self.passes += bool(episode["passed"])
        self.scores.append(float(episode["score"]))
        attempts = int(episode["attempts"].get("total", 0))
        self.attempts_sum += attempts
        self.passed_attempts_sum += attempts if episode["passed"] else 0
        self.failed_checks |= failed_checks(episode["checks"])  # warnings are not failures
        metrics = episode.get("metrics")
        if metrics is None:
            return
        if not isinstance(metrics, Mapping):
            raise ValueError(f"metrics: must be an object or null, got {json.dumps(metrics)[:60]}")
        for name in AGGREGATED:
            value = metrics.get(name)
            if value is None:  # not defined for this episode (no claim for SVR, no task for CDI): left out
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"metrics.{name}: must be a finite number or null, got {json.dumps(value)[:60]}")
            self.metric_values.setdefault(name, []).append(float(value))

    def merged(self, other: Group) -> Group:
        """This group and ``other`` pooled."""
        return Group(
            self.n + other.n,
            self.passes + other.passes,
            self.attempts_sum + other.attempts_sum,
            self.passed_attempts_sum + other.passed_attempts_sum,
            self.failed_checks | other.failed_checks,
            self.scores + other.scores,
            {
                k: self.metric_values.get(k, []) + other.metric_values.get(k, [])
                for k in AGGREGATED
                if k in self.metric_values or k in other.metric_values
            },
        )

    @property
    def mean_score(self) -> float:
        """The mean score (0 to 100) of the group's episodes."""
        return sum(self.scores) / self.n if self.n else 0.0

    @property
    def mean_attempts(self) -> float:
        """The mean number of tool attempts per episode."""
        return self.attempts_sum / self.n if self.n else 0.0

    @property
    def mean_passed_attempts(self) -> float | None:
        """The mean number of tool attempts per passing episode; None when none passed."""
        return self.passed_attempts_sum / self.passes if self.passes else None


@dataclass(frozen=True)
class RateChange:
    """A pass rate in OLD and in NEW (each with its Wilson 95% interval), the change, and its z-test."""

    old: Rate
    new: Rate
    z: float
    p_value: float
    significant: bool

    @property
    def delta(self) -> float:
        """NEW's pass rate minus OLD's (a fraction; negative is a drop)."""
        return self.new.value - self.old.value

    @classmethod
    def of(cls, old: Group, new: Group, alpha: float) -> RateChange:
        """The change from ``old`` to ``new``; significant when the two-sided p-value is below ``alpha``."""
        z, p = two_proportion_test(old.passes, old.n, new.passes, new.n)
        return cls(Rate.of(old.passes, old.n), Rate.of(new.passes, new.n), z, p, p < alpha)

    def to_dict(self) -> dict[str, Any]:
        """The change as a JSON-ready dict."""
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "delta": round(self.delta, 6),
            "z": round(self.z, 6),
            "p_value": round(self.p_value, 6),
            "significant": self.significant,
        }


@dataclass
class RowComparison:
    """One row of a comparison: a scenario with its paired agents (or, with ``scenario`` None, one agent pair
    over every scenario both files ran), and why it is a regression, if it is one."""

    scenario: str | None
    old_agent: str
    new_agent: str
    old: Group
    new: Group
    pass_rate: RateChange
    new_failing_checks: list[str]
    reasons: list[str]
    #: the episode scores (0-100) of NEW against OLD: means, SD, t intervals, Welch's t-test and Cohen's d
    score: MetricComparison | None = None
    #: the same for each trajectory metric both files recorded (``chaoskit run --metrics``)
    metrics: dict[str, MetricComparison] = field(default_factory=dict)

    @property
    def regressed(self) -> bool:
        """Whether this row is a regression."""
        return bool(self.reasons)

    @property
    def agent(self) -> str:
        """The agent, or ``OLD -> NEW`` when the files ran two different agents."""
        return self.old_agent if self.old_agent == self.new_agent else f"{self.old_agent} -> {self.new_agent}"

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict."""
        row: dict[str, Any] = {} if self.scenario is None else {"scenario": self.scenario}
        row.update(
            {
                "old_agent": self.old_agent,
                "new_agent": self.new_agent,
                "episodes": {"old": self.old.n, "new": self.new.n},
                "pass_rate": self.pass_rate.to_dict(),
                "mean_score": _delta(self.old.mean_score, self.new.mean_score),
                "mean_attempts": _delta(self.old.mean_attempts, self.new.mean_attempts),
                "score_stats": self.score.to_dict(("old", "new")) if self.score else None,
                "metrics": {k: v.to_dict(("old", "new")) for k, v in self.metrics.items()},
                "new_failing_checks": self.new_failing_checks,
                "regression": self.regressed,
                "reasons": self.reasons,
            }
        )
        return row


def _delta(old: float, new: float) -> dict[str, float]:
    return {"old": round(old, 6), "new": round(new, 6), "delta": round(new - old, 6)}


@dataclass
class Comparison:
    """What ``chaoskit compare`` finds: per-scenario and per-agent rows, the rows only one file has, and the
    regressions (``ok`` is False when there is one)."""

    old_source: str
    new_source: str
    alpha: float
    attempt_tolerance: float
    scenarios: list[RowComparison]
    agents: list[RowComparison]
    only_old: list[str]
    only_new: list[str]
    #: per model and per architecture label (episodes labelled with one), NEW against OLD; they inform only
    axes: dict[str, list[RowComparison]] = field(default_factory=dict)

    @property
    def regressions(self) -> list[str]:
        """Every regression, one line each, naming its row."""
        out = []
        for row in self.scenarios:
            out += [f"{row.scenario} [{row.agent}]: {r}" for r in row.reasons]
        for row in self.agents:
            out += [f"agent {row.agent} (all shared scenarios): {r}" for r in row.reasons]
        return out

    @property
    def ok(self) -> bool:
        """Whether NEW has no regression against OLD."""
        return not self.regressions

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (what ``--json OUT`` writes)."""
        return {
            "kind": COMPARISON_KIND,
            "version": 1,
            "old": self.old_source,
            "new": self.new_source,
            "rules": {"alpha": self.alpha, "attempt_tolerance": self.attempt_tolerance},
            "ok": self.ok,
            "regressions": self.regressions,
            "scenarios": [r.to_dict() for r in self.scenarios],
            "agents": [r.to_dict() for r in self.agents],
            "only_in_old": self.only_old,
            "only_in_new": self.only_new,
            "models": [r.to_dict() for r in self.axes.get("model", [])],
            "architectures": [r.to_dict() for r in self.axes.get("architecture", [])],
        }


def _groups(data: Mapping[str, Any], source: str) -> dict[str, dict[str, Group]]:
    """scenario -> agent -> the pooled episodes, in the order the file lists them."""
    out: dict[str, dict[str, Group]] = {}
    for i, ep in enumerate(data["episodes"]):
        try:
            out.setdefault(ep["scenario"], {}).setdefault(ep["agent"], Group()).add(ep)
        except ValueError as exc:
            raise ChaoskitError(f"{source}: episodes[{i}].{exc}; the file was changed or cut short") from None
    return out


def _pairs(old: Mapping[str, Group], new: Mapping[str, Group]) -> list[tuple[str, str]]:
    """The (old agent, new agent) pairs of one scenario: same agents first, then the one left on each side."""
    pairs = [(a, a) for a in old if a in new]
    left_old = [a for a in old if a not in new]
    left_new = [a for a in new if a not in old]
    if len(left_old) == 1 and len(left_new) == 1:
        pairs.append((left_old[0], left_new[0]))
    return pairs


def compare_results(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    alpha: float = 0.05,
    attempt_tolerance: float = 0.1,
    sources: Sequence[str] = ("OLD", "NEW"),
) -> Comparison:
    """Compare two results files (as ``load_results`` returns them), OLD the reference and NEW the candidate.

    A (scenario, agent) row is a regression when (1) its pass rate dropped and a pooled two-sided
    two-proportion z-test gives p < ``alpha``; (2) a check fails in NEW that never failed in OLD for that
    scenario and agent (a newly failing check; warnings do not count); or (3) the mean attempts per episode
    rose above OLD's times ``1 + attempt_tolerance``, counted over the passing episodes when both files have
    some (else over all), and not when NEW's pass rate is higher: attempts that buy passes are no regression.
    An agent row (every scenario both files ran, pooled) is a
    regression on rule (1) alone. Rows only one file has are listed, never a regression.
    """
    if not 0.0 < alpha < 1.0:
        raise ChaoskitError(f"--alpha must be a significance level between 0 and 1 (e.g. 0.05), got {alpha:g}")
    if not attempt_tolerance >= 0.0:
        raise ChaoskitError(
            f"--attempt-tolerance must be a fraction >= 0 (0.1 allows a 10% rise), got {attempt_tolerance:g}"
        )
    g_old, g_new = _groups(old, sources[0]), _groups(new, sources[1])
    scenarios: list[RowComparison] = []
    agent_totals: dict[tuple[str, str], tuple[Group, Group]] = {}
    only_old: list[str] = []
    only_new: list[str] = []
    for scen, by_agent in g_old.items():
        pairs = _pairs(by_agent, g_new.get(scen, {}))
        only_old += [f"{scen} [{a}]" for a in by_agent if a not in {p[0] for p in pairs}]
        for a_old, a_new in pairs:
            o, n = by_agent[a_old], g_new[scen][a_new]
            scenarios.append(_row(scen, a_old, a_new, o, n, alpha, attempt_tolerance))
            prev = agent_totals.get((a_old, a_new), (Group(), Group()))
            agent_totals[(a_old, a_new)] = (prev[0].merged(o), prev[1].merged(n))
    paired_new = {(r.scenario, r.new_agent) for r in scenarios}
    only_new = [f"{s} [{a}]" for s, by_agent in g_new.items() for a in by_agent if (s, a) not in paired_new]
    if not scenarios:
        raise ChaoskitError(
            f"{sources[0]} and {sources[1]} share no scenario and agent: nothing to compare "
            f"({len(g_old)} scenario(s) in {sources[0]}, {len(g_new)} in {sources[1]}); compare two runs of the "
            "same battery"
        )
    agents = [
        _row(None, a_old, a_new, o, n, alpha, attempt_tolerance, agent_row=True)
        for (a_old, a_new), (o, n) in agent_totals.items()
    ]
    axes = {axis: _axis_rows(old, new, axis, alpha, attempt_tolerance) for axis in AXES}
    return Comparison(sources[0], sources[1], alpha, attempt_tolerance, scenarios, agents, only_old, only_new, axes)


#: the labels a run can give its episodes (``model``, ``architecture``: a battery file's agent labels)
AXES = ("model", "architecture")


def _axis_rows(
    old: Mapping[str, Any], new: Mapping[str, Any], axis: str, alpha: float, tol: float
) -> list[RowComparison]:
    """One row per label of ``axis`` (the same label in both files, or the one left on each side), every
    scenario pooled; the pass-rate test and the means are given, but these rows never count as regressions."""
    sides = []
    for data in (old, new):
        groups: dict[str, Group] = {}
        for ep in data["episodes"]:
            label = ep.get(axis)
            if isinstance(label, str) and label:
                groups.setdefault(label, Group()).add(ep)
        sides.append(groups)
    rows = []
    for a_old, a_new in _pairs(sides[0], sides[1]):
        row = _row(None, a_old, a_new, sides[0][a_old], sides[1][a_new], alpha, tol, agent_row=True)
        rows.append(dataclasses.replace(row, reasons=[]))
    return rows


def _row(
    scenario: str | None,
    a_old: str,
    a_new: str,
    old: Group,
    new: Group,
    alpha: float,
    tol: float,
    *,
    agent_row: bool = False,
) -> RowComparison:
    """One compared row and the regression rules that it breaks."""
    rate = RateChange.of(old, new, alpha)
    newly = sorted(new.failed_checks - old.failed_checks)
    reasons: list[str] = []
    if rate.significant and rate.delta < 0:
        reasons.append(
            f"pass rate fell from {rate.old.value:.0%} to {rate.new.value:.0%} "
            f"(two-proportion z-test p={rate.p_value:.3g} < {alpha:g})"
        )
    if not agent_row:
        if newly:
            reasons.append(f"newly failing check(s): {', '.join(newly)}")
        before, after, over = old.mean_passed_attempts, new.mean_passed_attempts, "passing episodes"
        if before is None or after is None:
            before, after, over = old.mean_attempts, new.mean_attempts, "all episodes"
        if rate.delta <= 0 and after > before * (1.0 + tol) + 1e-9:
            reasons.append(f"mean attempts ({over}) rose from {before:.2f} to {after:.2f} (tolerance {tol:.0%})")
    metrics = {
        k: compare_values(old.metric_values[k], new.metric_values[k])
        for k in AGGREGATED
        if k in old.metric_values and k in new.metric_values
    }
    score = compare_values(old.scores, new.scores)
    return RowComparison(
        scenario, a_old, a_new, old, new, rate, newly if not agent_row else [], reasons, score, metrics
    )


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _cells(row: RowComparison) -> list[str]:
    rate = row.pass_rate
    mark = "*" if rate.significant else ""
    return [
        row.agent,
        rate.old.fmt(),
        rate.new.fmt(),
        f"{rate.delta * 100:+.0f} pp",
        f"{rate.p_value:.3f}{mark}",
        f"{row.old.mean_score:.1f} -> {row.new.mean_score:.1f} ({row.new.mean_score - row.old.mean_score:+.1f})",
        f"{row.old.mean_attempts:.2f} -> {row.new.mean_attempts:.2f} "
        f"({row.new.mean_attempts - row.old.mean_attempts:+.2f})",
    ]


def _test_cells(c: MetricComparison, digits: int) -> list[str]:
    test = c.welch
    if test is None:
        welch = "- (needs 2 values a side)"
    else:
        t = f"{test.t:+.2f}" if abs(test.t) != float("inf") else ("+inf" if test.t > 0 else "-inf")
        welch = f"t={t} df={test.df:.1f} p={test.p_value:.3f}"
    d = "-" if c.d is None else f"{c.d:+.2f}"
    return [c.a.fmt(digits), c.b.fmt(digits), welch, d]


def _means(c: Comparison, rows_of: Sequence[RowComparison] | None = None, what: str = "agent") -> list[str]:
    """Per agent (or per label of an axis): the score and each trajectory metric, mean ± SD [95% t interval],
    Welch's t-test, Cohen's d."""
    rows = [[what, "measure", "OLD mean ± SD [95% CI] n", "NEW mean ± SD [95% CI] n", "Welch t-test", "d"]]
    for r in c.agents if rows_of is None else rows_of:
        if r.score is not None:
            rows.append([r.agent, "score", *_test_cells(r.score, 1)])
        rows += [[r.agent, name, *_test_cells(m, 3)] for name, m in r.metrics.items()]
    return _table(rows) if len(rows) > 1 else []


def _axes(c: Comparison) -> list[str]:
    """Per model and per architecture label: pass rates and means (these rows inform; they never gate)."""
    out: list[str] = []
    for axis, rows_of in c.axes.items():
        if not rows_of:
            continue
        head = [axis, *_HEAD[1:]]
        out += [f"Per {axis} (every scenario pooled; informs, never gates):"]
        out += _table([head, *(_cells(r) for r in rows_of)])
        out += [*_means(c, rows_of, axis), ""]
    return out


_HEAD = ["agent", "pass OLD", "pass NEW", "change", "p", "score", "attempts"]


def render_comparison(c: Comparison) -> str:
    """The comparison as aligned text: per scenario, per agent, the rows only one file has, and the verdict."""
    lines = [f"chaoskit compare: OLD {c.old_source}  ->  NEW {c.new_source}", ""]
    rows = [["scenario", *_HEAD, "newly failing checks", ""]]
    for r in c.scenarios:
        rows.append([r.scenario or "", *_cells(r), ", ".join(r.new_failing_checks) or "-", "REGRESSION" * r.regressed])
    lines += ["Per scenario:", *_table(rows), ""]
    rows = [[*_HEAD, ""]]
    for r in c.agents:
        rows.append([*_cells(r), "REGRESSION" * r.regressed])
    lines += ["Per agent (every scenario both files ran):", *_table(rows), ""]
    means = _means(c)
    if means:
        lines += ["Means per agent, NEW against OLD (t, d > 0: NEW higher):", *means, ""]
    lines += _axes(c)
    for label, items in (("only in OLD", c.only_old), ("only in NEW", c.only_new)):
        if items:
            shown = ", ".join(items[:10]) + (f", ... ({len(items) - 10} more)" if len(items) > 10 else "")
            lines.append(f"Not compared, {label}: {shown}")
    lines.append(
        f"* significant: two-sided two-proportion z-test p < {c.alpha:g}. Pass rates: value [Wilson 95%] n=episodes."
    )
    lines.append(
        "Means: mean ± sample SD [95% Student t interval] n=values; Welch's unequal-variance t-test, two-sided; "
        "Cohen's d with the pooled SD. They inform; the regression rules below do not use them."
    )
    lines.append(
        "A regression: a significant pass-rate drop, a check failing in NEW that never failed in OLD for that "
        f"scenario and agent, or mean attempts above OLD's by more than {c.attempt_tolerance:.0%} (over passing "
        "episodes; not when the pass rate rose)."
    )
    lines.append("")
    if c.ok:
        lines.append("No regression.")
    else:
        lines.append(f"REGRESSION: {len(c.regressions)} finding(s)")
        lines += [f"  - {r}" for r in c.regressions]
    return "\n".join(lines) + "\n"
