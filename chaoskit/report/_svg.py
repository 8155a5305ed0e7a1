"""The HTML report's hand-made SVG charts, from plain values: heatmap, bars, lines, histograms, scatter, timeline."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OUTCOME_COLOURS",
    "PALETTE",
    "Bar",
    "bars",
    "cost_scatter",
    "esc",
    "heatmap",
    "histograms",
    "ink_on",
    "linear",
    "lines",
    "num",
    "number",
    "stacked_bars",
    "svg",
    "timeline",
    "viridis",
]

#: Okabe-Ito colours, told apart with every common colour-vision deficiency
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
#: viridis at 0, 0.25, 0.5, 0.75 and 1 (perceptually uniform, readable in grey)
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_FONT = 12
_CHAR_W = 7.2  # about the width of one character at _FONT (sans-serif), for laying out labels


def esc(value: object) -> str:
    """``value`` as text safe inside an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


def num(x: float) -> str:
    """A coordinate as short text: at most two decimals, no trailing zeros."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def number(value: Any, fmt: str = "g") -> str:
    """A number as text (a whole number in full, a seed of ten digits included), else "?"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    return str(value) if isinstance(value, int) and fmt == "g" else format(value, fmt)


def linear(v: float, d0: float, d1: float, r0: float, r1: float) -> float:
    """``v`` mapped from the domain [d0, d1] onto the range [r0, r1] (the start of the range when d0 == d1)."""
    if d1 == d0:
        return r0
    return r0 + (v - d0) / (d1 - d0) * (r1 - r0)


def viridis(v: float) -> str:
    """The viridis colour of ``v`` in [0, 1] (clamped) as ``#rrggbb``."""
    v = min(max(v, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(v), len(_VIRIDIS) - 2)
    f = v - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b, strict=True))


def ink_on(fill: str) -> str:
    """Black or white, whichever reads better on the ``#rrggbb`` colour ``fill`` (WCAG relative luminance)."""
    rgb = [int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lum = sum(
        w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
        for w, c in zip((0.2126, 0.7152, 0.0722), rgb, strict=True)
    )
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def svg(width: float, height: float, body: str, *, title: str, kind: str) -> str:
    """An ``<svg>`` element of the given size holding ``body``, titled for screen readers, of CSS class ``kind``."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {esc(kind)}" role="img" width="{num(width)}" '
        f'height="{num(height)}" viewBox="0 0 {num(width)} {num(height)}" font-size="{_FONT}">'
        f"<title>{esc(title)}</title>{body}</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", fill: str = "#000000", cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" fill="{fill}"{c}>{esc(text)}</text>'


def _label_width(labels: Sequence[str], *, least: float = 40, most: float = 220) -> float:
    return min(max([least, *(len(s) * _CHAR_W + 8 for s in labels)]), most)


def _clip(label: str, width: float) -> str:
    room = max(int((width - 8) / _CHAR_W), 4)
    return label if len(label) <= room else label[: room - 1] + "\u2026"


def heatmap(
    xs: Sequence[float],
    ys: Sequence[float],
    values: Mapping[tuple[float, float], tuple[float, str]],
    *,
    title: str,
    cell_w: float = 76,
    cell_h: float = 40,
) -> str:
    """A grid with one cell per (x, y) = (ε, λ): columns are ``xs`` left to right, rows ``ys`` bottom
    (smallest) to top.

    ``values[(x, y)]`` is (value in [0, 1], the tooltip); the cell shows the value as text on its viridis
    colour, and a missing point is a grey cell marked "n/a"."""
    left, top, bottom = 52.0, 8.0, 40.0
    xs, ys = sorted(xs), sorted(ys)
    x_label = "\u03b5 (task perturbation)"
    # wide enough for the axis label under a single column, which it would overhang
    width = max(left + cell_w * len(xs) + 8, left + (cell_w * len(xs) + len(x_label) * _CHAR_W) / 2 + 4)
    height = top + cell_h * len(ys) + bottom
    parts: list[str] = []
    for row, y in enumerate(reversed(ys)):
        cy = top + row * cell_h
        parts.append(_text(left - 6, cy + cell_h / 2 + 4, f"{y:g}", anchor="end", cls="tick"))
        for col, x in enumerate(xs):
            cx = left + col * cell_w
            got = values.get((x, y))
            fill = viridis(got[0]) if got else "#dddddd"
            label = f"{got[0]:.2f}" if got else "n/a"
            tip = got[1] if got else f"\u03b5={x:g}, \u03bb={y:g}: not run"
            parts.append(
                f'<g class="cell" data-x="{x:g}" data-y="{y:g}" data-value="{esc(label)}">'
                f'<rect x="{num(cx)}" y="{num(cy)}" width="{num(cell_w - 2)}" height="{num(cell_h - 2)}" '
                f'fill="{fill}"><title>{esc(tip)}</title></rect>'
                + _text(cx + (cell_w - 2) / 2, cy + cell_h / 2 + 3, label, anchor="middle", fill=ink_on(fill))
                + "</g>"
            )
    base = top + cell_h * len(ys)
    for col, x in enumerate(xs):
        parts.append(_text(left + col * cell_w + (cell_w - 2) / 2, base + 14, f"{x:g}", anchor="middle", cls="tick"))
    parts.append(_text(left + cell_w * len(xs) / 2, base + 32, x_label, anchor="middle"))
    parts.append(_text(12, top + cell_h * len(ys) / 2, "\u03bb", anchor="middle"))
    return svg(width, height, "".join(parts), title=title, kind="heatmap")


@dataclass(frozen=True)
class Bar:
    """One horizontal bar: its label, value, optional interval (low, high) and the text shown after it."""

    label: str
    value: float
    text: str
    low: float | None = None
    high: float | None = None


def bars(rows: Sequence[Bar], *, title: str, top_value: float = 1.0, bar_w: float = 260, row_h: float = 22) -> str:
    """Horizontal bars from 0 to ``top_value`` (longer is better), each with its interval as a whisker and its
    text to the right; a value above ``top_value`` fills the whole width."""
    label_w = _label_width([r.label for r in rows])
    left, top = label_w, 6.0
    text_w = max([60.0, *(len(r.text) * _CHAR_W + 10 for r in rows)])
    width = left + bar_w + text_w
    height = top + row_h * len(rows) + 20
    parts = [
        f'<rect class="track" x="{num(left)}" y="{num(top)}" width="{num(bar_w)}" '
        f'height="{num(row_h * len(rows))}" fill="#f4f4f4"/>'
    ]
    for i, r in enumerate(rows):
        y = top + i * row_h
        w = linear(min(max(r.value, 0.0), top_value), 0, top_value, 0, bar_w)
        tip = f"{r.label}: {r.text}"
        parts.append(_text(left - 6, y + row_h / 2 + 4, _clip(r.label, label_w), anchor="end", cls="label"))
        parts.append(
            f'<rect class="bar" x="{num(left)}" y="{num(y + 4)}" width="{num(w)}" height="{num(row_h - 8)}" '
            f'fill="{PALETTE[0]}"><title>{esc(tip)}</title></rect>'
        )
        if r.low is not None and r.high is not None:
            x0 = linear(min(max(r.low, 0.0), top_value), 0, top_value, left, left + bar_w)
            x1 = linear(min(max(r.high, 0.0), top_value), 0, top_value, left, left + bar_w)
            ym = y + row_h / 2
            parts.append(
                f'<path class="whisker" d="M{num(x0)} {num(ym)}H{num(x1)}M{num(x0)} {num(ym - 5)}V{num(ym + 5)}'
                f'M{num(x1)} {num(ym - 5)}V{num(ym + 5)}" stroke="#000000" stroke-width="1.5" fill="none"/>'
            )
        parts.append(_text(left + bar_w + 6, y + row_h / 2 + 4, r.text, cls="value"))
    base = top + row_h * len(rows)
    for frac in (0.0, 0.5, 1.0):
        x = left + frac * bar_w
        parts.append(_text(x, base + 14, f"{frac * top_value:g}", anchor="middle", cls="tick"))
    return svg(width, height, "".join(parts), title=title, kind="bars")


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[int]]],
    names: Sequence[str],
    *,
    title: str,
    bar_w: float = 300,
    row_h: float = 22,
) -> str:
    """Horizontal bars of counts, each split into segments (``names[i]`` for the i-th count of a row), on one
    scale whose end is the largest row total; each row's total is written after it, and a legend names the
    segments."""
    label_w = _label_width([r[0] for r in rows])
    left, top = label_w, 24.0
    most = max([1, *(sum(c) for _, c in rows)])
    width = left + bar_w + 70
    height = top + row_h * len(rows) + 8
    parts: list[str] = []
    lx = left
    for j, name in enumerate(names):
        parts.append(f'<rect x="{num(lx)}" y="4" width="12" height="12" fill="{PALETTE[j % len(PALETTE)]}"/>')
        parts.append(_text(lx + 16, 14, name, cls="legend"))
        lx += 16 + len(name) * _CHAR_W + 14
    width = max(width, lx)
    for i, (label, counts) in enumerate(rows):
        y = top + i * row_h
        parts.append(_text(left - 6, y + row_h / 2 + 4, _clip(label, label_w), anchor="end", cls="label"))
        x = left
        for j, count in enumerate(counts):
            if count <= 0:
                continue
            w = linear(count, 0, most, 0, bar_w)
            parts.append(
                f'<rect class="segment" data-name="{esc(names[j])}" x="{num(x)}" y="{num(y + 4)}" width="{num(w)}" '
                f'height="{num(row_h - 8)}" fill="{PALETTE[j % len(PALETTE)]}">'
                f"<title>{esc(f'{label}: {count} {names[j]}')}</title></rect>"
            )
            x += w
        parts.append(_text(x + 6, y + row_h / 2 + 4, str(sum(counts)), cls="value"))
    return svg(width, height, "".join(parts), title=title, kind="stacked")


def lines(
    series: Mapping[str, Sequence[tuple[int, float]]],
    *,
    title: str,
    plot_w: float = 320,
    plot_h: float = 180,
) -> str:
    """pass^k against k: one line per series over integer k (from 1 to the largest) and pass^k in [0, 1], with
    a point per value, the series' name at its last point and a legend."""
    left, top, bottom = 44.0, 24.0, 36.0
    xmax = max([1, *(x for pts in series.values() for x, _ in pts)])
    legend_w = _label_width(list(series), least=60)
    width = left + plot_w + 16 + legend_w
    height = top + plot_h + bottom

    def px(x: float) -> float:
        return linear(x, 1, xmax, left, left + plot_w) if xmax > 1 else left + plot_w / 2

    def py(y: float) -> float:
        return linear(min(max(y, 0.0), 1.0), 0, 1, top + plot_h, top)

    parts = [
        f'<path class="axis" d="M{num(left)} {num(top)}V{num(top + plot_h)}H{num(left + plot_w)}" '
        'stroke="#000000" fill="none"/>'
    ]
    for yv in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<path class="grid" d="M{num(left)} {num(py(yv))}H{num(left + plot_w)}" stroke="#e0e0e0" fill="none"/>'
        )
        parts.append(_text(left - 6, py(yv) + 4, f"{yv:g}", anchor="end", cls="tick"))
    for xv in range(1, xmax + 1):
        parts.append(_text(px(xv), top + plot_h + 14, str(xv), anchor="middle", cls="tick"))
    parts.append(_text(left + plot_w / 2, top + plot_h + 30, "k", anchor="middle"))
    parts.append(_text(4, 12, "pass^k"))
    for i, (name, pts) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(pts)
        coords = " ".join(f"{num(px(x))},{num(py(y))}" for x, y in pts)
        parts.append(
            f'<polyline class="series" data-name="{esc(name)}" points="{coords}" stroke="{colour}" '
            'stroke-width="2" fill="none"/>'
        )
        for x, y in pts:
            parts.append(
                f'<circle class="point" cx="{num(px(x))}" cy="{num(py(y))}" r="3.5" fill="{colour}">'
                f"<title>{esc(f'{name}: pass^k at k={x}: {y:.2f}')}</title></circle>"
            )
        ly = top + 12 + i * 16
        lx = left + plot_w + 16
        parts.append(f'<rect x="{num(lx)}" y="{num(ly - 9)}" width="12" height="3" fill="{colour}"/>')
        parts.append(_text(lx + 16, ly - 4, _clip(name, legend_w), cls="legend"))
    return svg(width, height, "".join(parts), title=title, kind="lines")


def histograms(
    rows: Mapping[str, Sequence[int]],
    edges: Sequence[float],
    *,
    title: str,
    bin_w: float = 28,
    row_h: float = 56,
) -> str:
    """One small histogram per row, on a shared height scale: ``rows[name][i]`` counts the values between
    ``edges[i]`` and ``edges[i + 1]``; a bar's count is written above it, and the bins' edges are labelled."""
    label_w = _label_width(list(rows))
    left, top = label_w, 6.0
    nbins = len(edges) - 1
    most = max([1, *(c for counts in rows.values() for c in counts)])
    width = left + bin_w * nbins + 10
    height = top + row_h * len(rows) + 22
    parts: list[str] = []
    for i, (name, counts) in enumerate(rows.items()):
        y0 = top + i * row_h
        base = y0 + row_h - 6
        parts.append(_text(left - 6, base - 4, _clip(name, label_w), anchor="end", cls="label"))
        parts.append(
            f'<path class="baseline" d="M{num(left)} {num(base)}H{num(left + bin_w * nbins)}" stroke="#888888"/>'
        )
        for b, count in enumerate(counts):
            h = linear(count, 0, most, 0, row_h - 20)
            tip = f"{name}: {count} with a score in [{edges[b]:g}, {edges[b + 1]:g}{']' if b == nbins - 1 else ')'}"
            parts.append(
                f'<rect class="bin" data-count="{count}" x="{num(left + b * bin_w + 1)}" y="{num(base - h)}" '
                f'width="{num(bin_w - 2)}" height="{num(h)}" fill="{PALETTE[0]}"><title>{esc(tip)}</title></rect>'
            )
            if count:
                parts.append(
                    _text(left + b * bin_w + bin_w / 2, base - h - 3, str(count), anchor="middle", cls="count")
                )
    base = top + row_h * len(rows)
    for b in range(0, nbins + 1, max(1, nbins // 5)):
        parts.append(_text(left + b * bin_w, base + 14, f"{edges[b]:g}", anchor="middle", cls="tick"))
    return svg(width, height, "".join(parts), title=title, kind="histograms")


_W, _H, _PAD = 560.0, 320.0, 56.0


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


#: the fill of an attempt by its ``chaoskit.outcome``; any other outcome is grey
OUTCOME_COLOURS = {"ok": PALETTE[0], "error": PALETTE[1], "cancelled": "#777777"}


def _f(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _rows(
    attempts: Sequence[Mapping[str, Any]], model_calls: Sequence[Mapping[str, Any]]
) -> list[tuple[str, Mapping[str, Any], bool]]:
    """(lane, item, is a model call) for every bar: the model calls' lanes (``chat {model}``) first."""
    rows = [(f"chat {c.get('model', '?')}", c, True) for c in model_calls]
    return rows + [(str(a.get("tool", "?")), a, False) for a in attempts]


def _tip(lane: str, a: Mapping[str, Any], model: bool, t0: float, ms: float) -> str:
    outcome, fault = str(a.get("outcome", "?")), a.get("fault")
    if model:
        return (
            f"{lane}, call {a.get('call', '?')}: {outcome}, at {t0:.1f} ms for {ms:.1f} ms"
            + (f", fault {fault}" if fault else "")
            + (f", fault {a['skipped']} not injected (skipped)" if a.get("skipped") else "")
        )
    return (
        f"{lane} attempt {a.get('attempt', '?')}: {outcome}, at {t0:.1f} ms for {ms:.1f} ms"
        + (f", fault {fault}" if fault else "")
        + ("" if a.get("executed", True) else ", the tool did not run")
    )


def timeline(
    attempts: Sequence[Mapping[str, Any]],
    *,
    title: str,
    model_calls: Sequence[Mapping[str, Any]] = (),
    plot_w: float = 480,
    row_h: float = 30,
) -> str:
    """Attempts over time (ms from the episode's start): a row per tool in order of first call, each attempt a
    bar from ``t_ms`` for ``ms`` (at least 2 px wide), filled by outcome, hollow when the tool did not run
    (a faked result), and a black triangle with the fault's name above an attempt that had a fault injected.
    ``model_calls`` (the episode's model calls: ``model``, ``call``, ``t_ms``, ``ms``, ``outcome``, ``fault``)
    get a lane per model above the tools, ``chat {model}``, their bars with rounded ends, faults marked alike."""
    rows = _rows(attempts, model_calls)
    lanes = list(dict.fromkeys(lane for lane, _, _ in rows))
    label_w = min(max([60.0, *(len(t) * _CHAR_W + 10 for t in lanes)]), 200)
    left, top = label_w, 16.0
    end = max([1.0, *(_f(a.get("t_ms")) + _f(a.get("ms")) for _, a, _ in rows)])
    width = left + plot_w + 28
    height = top + row_h * max(len(lanes), 1) + 34
    parts: list[str] = []
    last_label: dict[str, float] = {}
    for i, lane in enumerate(lanes):
        parts.append(
            f'<text x="{num(left - 6)}" y="{num(top + i * row_h + row_h / 2 + 4)}" text-anchor="end" '
            f'class="label">{esc(lane)}</text>'
        )
        parts.append(
            f'<path class="lane" d="M{num(left)} {num(top + (i + 1) * row_h)}H{num(left + plot_w)}" stroke="#e0e0e0"/>'
        )
    for lane, a, model in rows:
        t0, ms = _f(a.get("t_ms")), _f(a.get("ms"))
        x = linear(t0, 0, end, left, left + plot_w)
        w = max(linear(ms, 0, end, 0, plot_w), 2.0)
        y = top + lanes.index(lane) * row_h + 8
        outcome = str(a.get("outcome", "?"))
        colour = OUTCOME_COLOURS.get(outcome, "#999999")
        executed = model or bool(a.get("executed", True))
        fault = a.get("fault")
        fill = colour if executed else "#ffffff"
        dash = "" if executed else ' stroke-dasharray="3 2"'
        kind = 'class="model-call" rx="5"' if model else 'class="attempt"'
        parts.append(
            f'<rect {kind} data-outcome="{esc(outcome)}" data-fault="{esc(fault or "")}" '
            f'x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(row_h - 14)}" fill="{fill}" '
            f'stroke="{colour}" stroke-width="1.5"{dash}><title>{esc(_tip(lane, a, model, t0, ms))}</title></rect>'
        )
        if fault:
            cx = x + w / 2
            parts.append(
                f'<path class="fault" d="M{num(cx - 5)} {num(y - 7)}H{num(cx + 5)}L{num(cx)} {num(y - 1)}Z" '
                f'fill="#000000"><title>{esc(f"fault injected: {fault}")}</title></path>'
            )
            if cx - last_label.get(lane, -1e9) > len(str(fault)) * _CHAR_W + 8:
                parts.append(
                    f'<text x="{num(cx + 7)}" y="{num(y - 1)}" class="fault-name" font-size="10">{esc(fault)}</text>'
                )
                last_label[lane] = cx
    base = top + row_h * max(len(lanes), 1)
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + frac * plot_w
        parts.append(
            f'<text x="{num(x)}" y="{num(base + 14)}" text-anchor="middle" class="tick">{frac * end:.4g}</text>'
        )
    parts.append(
        f'<text x="{num(left + plot_w / 2)}" y="{num(base + 30)}" text-anchor="middle">'
        "ms since the episode started</text>"
    )
    return svg(width, height, "".join(parts), title=title, kind="timeline")
