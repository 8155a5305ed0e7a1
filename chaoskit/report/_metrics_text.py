"""The terminal tables of a battery's trajectory metrics: per agent, failure modes, and short against long tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["metrics_lines"]


def _f(value: Any, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True)))
    out = [line.rstrip()]
    for r in rows:
        out.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
    return out


def _spread_line(agent: str, spread: Mapping[str, Mapping[str, Any]]) -> str:
    """``  agent: CDI 0.41 ± 0.12 [0.33-0.49] n=10; ...`` over the metrics with an interval ('' when none has)."""
    parts = [
        f"{_LABELS.get(name, name)} {d['mean']:.2f} ± {d['sd']:.2f} [{d['low']:.2f}-{d['high']:.2f}] n={d['n']}"
        for name, d in spread.items()
        if d.get("sd") is not None
    ]
    return f"  {agent}: " + "; ".join(parts) if parts else ""


_LABELS = {"cdi": "CDI", "svr": "SVR", "ric": "RIC", "daf": "DAF", "hallucination": "halluc"}


def metrics_lines(summary: Mapping[str, Any] | None) -> list[str]:
    """The metrics section of the terminal report (from ``metrics_summary``); [] when there is none."""
    if not summary:
        return []
    agents: Mapping[str, Mapping[str, Any]] = summary.get("agents", {})
    priced = any(g.get("cost") is not None for g in agents.values())
    currency = next((g.get("currency") for g in agents.values() if g.get("currency")), "")
    header = ["agent", "pass^k", "CDI", "SVR", "RIC", "DAF", "halluc", "steps", "tokens"]
    header += [f"cost {currency}".strip(), "x cheapest", "pass^k/cost"] if priced else ["x fewest", "pass^k/1k tok"]
    rows = []
    for name, g in agents.items():
        row = [name, _f(g.get("pass_k")), *(_f(g.get(m)) for m in ("cdi", "svr", "ric", "daf", "hallucination"))]
        row += [_f(g.get("steps"), ".1f"), _f(g.get("tokens"), ".0f")]
        if priced:
            row += [_f(g.get("cost"), ".4g"), _f(g.get("relative_cost"), ".1f"), _f(g.get("pass_k_per_cost"), ".3g")]
        else:
            row += [_f(g.get("relative_tokens"), ".1f"), _f(g.get("pass_k_per_ktoken"), ".3g")]
        rows.append(row)
    out = [
        "",
        "Trajectory metrics per agent (means over episodes with model steps; docs/metrics.md)",
        *_table(header, rows),
    ]
    spread = [_spread_line(name, g["spread"]) for name, g in agents.items() if g.get("spread")]
    if any(spread):
        out += ["Mean ± SD [95% t interval] n, per agent (compare agents with chaoskit compare):"]
        out += [ln for ln in spread if ln]
    missing = sum(g.get("without_steps") or 0 for g in agents.values())
    if missing:
        out.append(
            f"note: {missing} episode(s) recorded no model step: their step metrics, tokens and cost are unknown "
            "and left out of the means (not counted as 0)"
        )
    absent = sum((g.get("episodes") or 0) - (g.get("with_metrics") or 0) for g in agents.values())
    if absent:
        out.append(f"note: {absent} episode(s) have no metrics at all (no episode span was found): left out")
    width = max(len(name) for name in agents)
    modes = [
        f"{name.ljust(width)}  " + ", ".join(f"{m} {n}" for m, n in g["modes"].items())
        for name, g in agents.items()
        if g.get("modes")
    ]
    if modes:
        out += ["", "Failure modes of failed episodes (count per agent; the rules are in docs/metrics.md)", *modes]
    by_scenario: dict[str, dict[str, int]] = {}
    for cell in summary.get("cells", ()):
        counts = by_scenario.setdefault(cell["scenario"], {})
        for m, n in cell.get("modes", {}).items():
            counts[m] = counts.get(m, 0) + n
    shown = {sc: c for sc, c in by_scenario.items() if c}
    if shown:
        width = max(len(sc) for sc in shown)
        out += ["", "Failure modes by scenario (all agents)"]
        out += [f"{sc.ljust(width)}  " + ", ".join(f"{m} {n}" for m, n in c.items()) for sc, c in shown.items()]
    return out + _axes_lines(summary) + _degradation_lines(summary.get("degradation") or {})


def _axes_lines(summary: Mapping[str, Any]) -> list[str]:
    """Per architecture and per model label: episodes, pass^k and each metric's mean ± SD [CI] n."""
    out: list[str] = []
    for key, title in (("architectures", "architecture"), ("models", "model")):
        groups: Mapping[str, Mapping[str, Any]] = summary.get(key) or {}
        if not groups:
            continue
        out += ["", f"Per {title} (the agents' labels): episodes, pass^k, mean ± SD [95% t interval] n"]
        for name, g in groups.items():
            spread = _spread_line(name, g.get("spread") or {}).strip()
            out.append(
                f"  {name}: {g.get('episodes')} episodes, pass^k {_f(g.get('pass_k'))}"
                + (f"; {spread.partition(': ')[2]}" if spread else "")
            )
    return out


def _degradation_lines(deg: Mapping[str, Any]) -> list[str]:
    """Short against long tasks per agent, and each agent's pass-rate drop between them."""
    if not deg.get("agents"):
        return []
    rows = []
    for name, parts in deg["agents"].items():
        for length in ("short", "long"):
            p = parts[length]
            if p["episodes"]:
                rows.append(
                    [f"{name} {length}", str(p["episodes"]), _f(p.get("steps"), ".1f"), _f(p.get("pass_rate"))]
                    + [_f(p.get(m)) for m in ("cdi", "svr", "ric", "hallucination")]
                )
    split = (
        "short and long by the scenarios' horizon:short / horizon:long tags"
        if deg.get("split") == "horizon tags"
        else f"short: <= {_f(deg.get('median_steps'), 'g')} steps, the median"
    )
    drops = [
        f"{name} {_f(parts['pass_drop'], '+.2f')}"
        for name, parts in deg["agents"].items()
        if parts.get("pass_drop") is not None
    ]
    out = [
        "",
        f"Degradation with trajectory length ({split})",
        *_table(["agent length", "eps", "steps", "pass", "CDI", "SVR", "RIC", "halluc"], rows),
    ]
    if drops:
        out.append("pass-rate drop from short to long (short - long; > 0: long tasks pass less): " + ", ".join(drops))
    return out
