"""The SVG timeline of one episode: a row per model (its calls) and per tool (its attempts), faults marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaoskit.report._svg import PALETTE, esc, linear, num, svg

__all__ = ["OUTCOME_COLOURS", "timeline"]

#: the fill of an attempt by its ``chaoskit.outcome``; any other outcome is grey
OUTCOME_COLOURS = {"ok": PALETTE[0], "error": PALETTE[1], "cancelled": "#777777"}
_CHAR_W = 7.2


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
