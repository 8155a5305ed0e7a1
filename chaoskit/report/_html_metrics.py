"""The HTML section of a battery's trajectory metrics: a pass^k-against-cost scatter, failure modes, degradation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chaoskit.report._svg import esc, linear, num, svg, viridis

__all__ = ["cost_scatter", "metrics_section"]

_W, _H, _PAD = 560.0, 320.0, 56.0


def _f(value: Any, fmt: str = ".2f") -> str:
    return "\u2013" if value is None else format(value, fmt)


def cost_scatter(agents: Mapping[str, Mapping[str, Any]]) -> str:
    """An SVG scatter of pass^k (y) against cost per episode (x, log scale), one labelled point per priced agent:
    an agent many times dearer at the same pass^k sits far to the right. Agents without a cost are named in a
    note under the chart, not mixed in on another axis; with no agent priced, the x axis is tokens."""
    priced = {name: g for name, g in agents.items() if g.get("cost")}
    key, unit = ("cost", next((g.get("currency") for g in priced.values()), "")) if priced else ("tokens", "tokens")
    shown = priced or agents
    points = [
        (name, float(g[key]), float(g["pass_k"]))
        for name, g in shown.items()
        if g.get(key) and g.get("pass_k") is not None
    ]
    left_out = sorted(set(agents) - {name for name, _, _ in points})
    if not points:
        return ""
    lo = math.log10(min(x for _, x, _ in points))
    hi = math.log10(max(x for _, x, _ in points))
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    body = [
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - 16}" y2="{_H - _PAD}" stroke="#555"/>',
        f'<line x1="{_PAD}" y1="16" x2="{_PAD}" y2="{_H - _PAD}" stroke="#555"/>',
        f'<text x="{num((_W + _PAD) / 2)}" y="{num(_H - 14)}" text-anchor="middle">{esc(key)} per episode'
        f" ({esc(unit)}, log scale)</text>",
        f'<text x="14" y="{num(_H / 2)}" transform="rotate(-90 14 {num(_H / 2)})" text-anchor="middle">pass^k</text>',
    ]
    for tick in (0.0, 0.5, 1.0):
        y = linear(tick, 0, 1, _H - _PAD, 24)
        body.append(f'<text x="{_PAD - 6}" y="{num(y + 4)}" text-anchor="end">{tick:g}</text>')
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        if lo - 1e-9 <= e <= hi + 1e-9:
            x = linear(e, lo, hi, _PAD + 24, _W - 40)
            body.append(f'<text x="{num(x)}" y="{num(_H - _PAD + 16)}" text-anchor="middle">{10.0**e:g}</text>')
    for i, (name, x, y) in enumerate(points):
        px = linear(math.log10(x), lo, hi, _PAD + 24, _W - 40)
        py = linear(y, 0, 1, _H - _PAD, 24)
        colour = viridis(i / max(1, len(points) - 1) * 0.85)
        body.append(
            f'<circle cx="{num(px)}" cy="{num(py)}" r="6" fill="{colour}"><title>{esc(name)}: pass^k {y:.2f}, '
            f"{esc(key)} {x:.4g}</title></circle>"
            f'<text x="{num(px + 9)}" y="{num(py - 8)}">{esc(name)}</text>'
        )
    chart = svg(_W, _H, "".join(body), title=f"pass^k against {key} per agent", kind="scatter")
    if left_out:
        chart += f'<p class="note">Not plotted (no known {esc(key)}): {esc(", ".join(left_out))}.</p>'
    return chart


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _axes_tables(summary: Mapping[str, Any]) -> list[str]:
    """One table per labelled axis (model, architecture): pass^k and each metric's mean ± SD [95% CI] n."""
    out = []
    for key, title in (("architectures", "architecture"), ("models", "model")):
        groups: Mapping[str, Mapping[str, Any]] = summary.get(key) or {}
        if not groups:
            continue
        rows = [
            [name, str(g.get("episodes")), _f(g.get("pass_k"))]
            + [_spread(g.get("spread", {}).get(m)) for m in ("cdi", "svr", "ric", "daf", "hallucination")]
            for name, g in groups.items()
        ]
        out.append(f"<h3>Per {title} (mean \u00b1 SD [95% CI] n)</h3>")
        out.append(_table([title, "episodes", "pass^k", "CDI", "SVR", "RIC", "DAF", "halluc."], rows))
    return out


def _spread(d: Mapping[str, Any] | None) -> str:
    if not d or d.get("mean") is None:
        return "\u2013"
    if d.get("sd") is None:
        return f"{d['mean']:.2f} n={d['n']}"
    return f"{d['mean']:.2f} \u00b1 {d['sd']:.2f} [{d['low']:.2f}-{d['high']:.2f}] n={d['n']}"


def _degradation(deg: Mapping[str, Any]) -> list[str]:
    """The short-against-long table, with each agent's pass-rate drop."""
    if not deg.get("agents"):
        return []
    drows = [
        [name, length, str(parts[length]["episodes"]), _f(parts[length].get("steps"), ".1f")]
        + [_f(parts[length].get("pass_rate"))]
        + [_f(parts[length].get(m)) for m in ("cdi", "svr", "ric", "hallucination")]
        + [_f(parts.get("pass_drop"), "+.2f") if length == "long" else ""]
        for name, parts in deg["agents"].items()
        for length in ("short", "long")
        if parts[length]["episodes"]
    ]
    split = (
        "the scenarios' horizon:short / horizon:long tags"
        if deg.get("split") == "horizon tags"
        else f"short: \u2264 {_f(deg.get('median_steps'), 'g')} steps, the median"
    )
    head = ["agent", "length", "episodes", "steps", "pass", "CDI", "SVR", "RIC", "halluc.", "pass drop"]
    return [f"<h3>Against trajectory length ({esc(split)})</h3>", _table(head, drows)]


def metrics_section(summary: Mapping[str, Any] | None) -> str:
    """The ``<section id="metrics">`` of the HTML report (from ``metrics_summary``); "" when there is none."""
    if not summary:
        return ""
    agents: Mapping[str, Mapping[str, Any]] = summary.get("agents", {})
    rows = [
        [
            name,
            _f(g.get("pass_k")),
            *(_f(g.get(m)) for m in ("cdi", "svr", "ric", "daf", "hallucination")),
            _f(g.get("tokens"), ".0f"),
            _f(g.get("cost"), ".4g"),
            _f(g.get("relative_cost"), ".1f"),
            _f(g.get("relative_tokens"), ".1f"),
        ]
        for name, g in agents.items()
    ]
    head = ["agent", "pass^k", "CDI", "SVR", "RIC", "DAF", "halluc.", "tokens", "cost", "\u00d7 cheapest"]
    head.append("\u00d7 fewest tokens")
    out = [
        '<section id="metrics"><h2>Trajectory metrics, cost and failure modes</h2>',
        '<p class="note">Means over the episodes with model steps. CDI: context drift; SVR: silent verification '
        "rate; RIC: recursive instability; DAF: delegation amplification; halluc.: tool argument hallucination "
        "rate (formulas and blind spots in docs/metrics.md).</p>",
        _table(head, rows),
    ]
    missing = sum(g.get("without_steps") or 0 for g in agents.values())
    if missing:
        out.append(
            f'<p class="note">{missing} episode(s) recorded no model step: their step metrics, tokens and cost are '
            "unknown and left out of the means (not counted as 0).</p>"
        )
    absent = sum((g.get("episodes") or 0) - (g.get("with_metrics") or 0) for g in agents.values())
    if absent:
        out.append(
            f'<p class="note">{absent} episode(s) have no metrics at all (no episode span was found): left out.</p>'
        )
    chart = cost_scatter(agents)
    if chart:
        out.append(f"<figure><figcaption>pass^k against cost per episode, per agent</figcaption>{chart}</figure>")
    cells = [c for c in summary.get("cells", []) if c.get("modes")]
    if cells:
        out.append("<h3>Failure modes of failed episodes</h3>")
        out.append(
            _table(
                ["agent", "scenario", "modes"],
                [
                    [c["agent"], c["scenario"], ", ".join(f"{m} \u00d7{n}" for m, n in c["modes"].items())]
                    for c in cells
                ],
            )
        )
    out += _axes_tables(summary)
    out += _degradation(summary.get("degradation") or {})
    out.append("</section>")
    return "\n".join(out)
