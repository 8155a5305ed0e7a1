"""The plain-text form of a comparison of two results files: aligned per-scenario and per-agent tables."""

from __future__ import annotations

from collections.abc import Sequence

from chaoskit.metrics import MetricComparison
from chaoskit.report._compare import Comparison, RowComparison

__all__ = ["render_comparison"]


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
