"""The terminal report of a battery: the cell table, overall figures, the reliability surface, the verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaoskit.runner._results import BatteryResult

__all__ = ["render_text"]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _pct(d: Mapping[str, Any]) -> str:
    return f"{d['value'] * 100:.0f}% [{d['low'] * 100:.0f}-{d['high'] * 100:.0f}]"


def render_text(result: BatteryResult, *, max_failures: int = 10) -> str:
    """The report ``chaoskit run`` prints: at most ``max_failures`` failing episodes are listed, with replays."""
    s = result.summary
    cfg = result.config
    lines: list[str] = []
    prof = cfg.get("profile") or {}
    lines.append(
        f"chaoskit run: {s.overall['episodes']} episodes, seed {cfg.get('seed')}, repeat {cfg.get('repeat')}, "
        f"k={s.k}, profile {prof.get('name', '?')}, {result.elapsed_s:.1f}s"
    )
    if prof.get("weights"):
        lines.append("background fault profile: " + ", ".join(f"{k} {v:.0%}" for k, v in prof["weights"].items()))
    multi = len({(c.epsilon, c.intensity) for c in s.cells}) > 1
    header = [
        "scenario",
        *(["eps", "lam"] if multi else []),
        "n",
        "pass@1 [95% CI]",
        f"pass^{s.k}",
        "score",
        "attempts",
        "failed checks",
    ]
    rows = [header]
    for c in s.cells:
        failed = "; ".join(f"{k} x{n}" for k, (n, _m) in sorted(c.failed_checks.items())) or "-"
        rows.append(
            [
                c.scenario,
                *([f"{c.epsilon:g}", f"{c.intensity:g}"] if multi else []),
                str(c.n),
                _pct(c.pass1.to_dict()),
                f"{c.pass_k.value:.2f}",
                f"{c.mean_score:.1f}",
                f"{c.mean_attempts:g}",
                failed,
            ]
        )
    lines.append("")
    lines.extend(_table(rows))
    o = s.overall
    lines.append("")
    lines.append(
        f"overall: pass@1 {_pct(o['pass_at_1'])} over {o['episodes']} episodes; pass^{s.k} "
        f"{o['pass_hat_k']['value']:.2f} [{o['pass_hat_k']['low']:.2f}-{o['pass_hat_k']['high']:.2f}] over "
        f"{o['pass_hat_k']['n']} groups of {s.k}; mean score {o['mean_score']:.1f}; outcomes "
        + ", ".join(f"{k} {v}" for k, v in o["outcomes"].items())
    )
    if multi:
        lines.append("")
        lines.append(
            f"reliability surface R(k, eps, lam) (rows: lambda; columns: eps; cell: pass@1 / pass^{s.k}; "
            f"theta = {s.theta:g}):"
        )
        epsilons = sorted({c.epsilon for c in s.cells})
        lambdas = sorted({c.intensity for c in s.cells})
        pts = {(p["epsilon"], p["intensity"], p["k"]): p for p in s.surface}
        srows = [["lambda", *(f"eps={e:g}" for e in epsilons)]]
        for lam in lambdas:
            row = [f"{lam:g}"]
            for e in epsilons:
                p1 = pts.get((e, lam, 1))
                pk = pts.get((e, lam, s.k)) or p1
                row.append(f"{p1['value']:.2f} / {pk['value']:.2f} (n={p1['episodes']})" if p1 and pk else "-")
            srows.append(row)
        lines.extend("  " + ln for ln in _table(srows))
        for eps_s, lam_b in s.breaks["intensity_at_epsilon"].items():
            lines.append(
                f"  eps={eps_s}: R_{s.k} "
                + (
                    f"falls below {s.theta:g} at lambda={lam_b:g}"
                    if lam_b is not None
                    else f"stays >= {s.theta:g} at every lambda tried"
                )
            )
        if len(epsilons) > 1:
            for lam_s, e2 in s.breaks["epsilon_at_intensity"].items():
                lines.append(
                    f"  lambda={lam_s}: R_{s.k} "
                    + (
                        f"falls below {s.theta:g} at eps={e2:g}"
                        if e2 is not None
                        else f"stays >= {s.theta:g} at every eps tried"
                    )
                )
    failing = [e for e in result.episodes if not e.passed]
    if failing:
        lines.append("")
        lines.append(f"failing episodes ({len(failing)}; first {min(len(failing), max_failures)}):")
        for ep in failing[:max_failures]:
            bad = ep.failed_checks()
            lines.append(
                f"  {ep.scenario} rep {ep.repetition} eps {ep.epsilon:g} lam {ep.intensity:g} "
                f"seed {ep.seed}: {ep.outcome}" + (f" ({ep.error})" if ep.error else "")
            )
            if ep.edits:
                lines.append(f"    task: {ep.task!r}  ({'; '.join(ep.edits)})")
            for chk in bad[:4]:
                lines.append(f"    x {chk['name']}: {chk['message']}")
            lines.append(f"    replay: {ep.replay}")
    v = result.verdict
    lines.append("")
    if v.ok:
        lines.append("verdict: PASS")
    else:
        lines.append("verdict: FAIL")
        for r in v.reasons:
            lines.append(f"  - {r}")
        for d in v.duplicate_writes[:5]:
            lines.append(f"    {d}")
        for d in v.regressions[:10]:
            lines.append(f"    {d}")
    return "\n".join(lines)
