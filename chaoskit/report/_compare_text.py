"""The plain-text form of a comparison of two results files: aligned per-scenario and per-agent tables."""

from __future__ import annotations

from collections.abc import Sequence

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
    for label, items in (("only in OLD", c.only_old), ("only in NEW", c.only_new)):
        if items:
            shown = ", ".join(items[:10]) + (f", ... ({len(items) - 10} more)" if len(items) > 10 else "")
            lines.append(f"Not compared, {label}: {shown}")
    lines.append(
        f"* significant: two-sided two-proportion z-test p < {c.alpha:g}. Pass rates: value [Wilson 95%] n=episodes."
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
