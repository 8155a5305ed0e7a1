"""The plot sections of the HTML report: the reliability surface, pass^k against k, scores, tools, breakdowns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.report._html_data import (
    SCORE_EDGES,
    attempts_per_tool,
    breakdown,
    episodes_of,
    k_of,
    label_of,
    pass_k_curves,
    score_histograms,
    surface_points,
)
from chaoskit.report._svg import Bar, bars, esc, heatmap, histograms, lines, stacked_bars

__all__ = ["plots_sections"]

#: the most rows one bar chart draws (the rest are counted)
MAX_BARS = 30


def _figure(caption: str, chart: str, note: str = "") -> str:
    extra = f'<p class="note">{esc(note)}</p>' if note else ""
    return f"<figure><figcaption>{esc(caption)}</figcaption>{chart}{extra}</figure>"


def _ival(d: Any) -> str:
    if not isinstance(d, Mapping) or not isinstance(d.get("value"), int | float):
        return "n/a"
    lo, hi = d.get("low"), d.get("high")
    rng = f" [{lo:.3g}, {hi:.3g}]" if isinstance(lo, int | float) and isinstance(hi, int | float) else ""
    return f"{d['value']:.3g}{rng}"


def _surface_map(points: Mapping[tuple[float, float], Mapping[str, Any]], j: int, title: str) -> str:
    values = {
        pt: (
            float(p.get("value", 0.0)),
            f"\u03b5={pt[0]:g}, \u03bb={pt[1]:g}: pass^{j} {float(p.get('value', 0.0)):.2f} "
            f"[{float(p.get('low', 0.0)):.2f}\u2013{float(p.get('high', 1.0)):.2f}], {p.get('episodes', '?')} episodes",
        )
        for pt, p in points.items()
    }
    xs = sorted({x for x, _ in points})
    ys = sorted({y for _, y in points})
    return heatmap(xs, ys, values, title=title)


def _surface(results: Mapping[str, Any]) -> str:
    k = k_of(results)
    out = [
        '<section id="surface"><h2>Reliability surface R(k, \u03b5, \u03bb)</h2>',
        '<p class="note">Mean over scenarios of pass^k at each grid point: \u03b5 is how much the task text was '
        "perturbed (--perturb), \u03bb the background fault intensity (--intensity). Lighter is more reliable; "
        "each cell shows its value. Hover a cell for its 95% interval and episode count.</p>",
    ]
    overall = {j: surface_points(results, j) for j in sorted({1, k})}
    if not overall[1]:
        out.append('<p class="note">No grid points in these results.</p></section>')
        return "\n".join(out)
    figs = [
        _figure(f"all agents: pass^{j}" + (" (pass@1)" if j == 1 else ""), _surface_map(pts, j, f"pass^{j}"))
        for j, pts in overall.items()
        if pts
    ]
    agents = list(dict.fromkeys(label_of(e) for e in episodes_of(results)))
    if len(agents) > 1:
        for a in agents:
            pts = surface_points(results, k, agent=a)
            if pts:
                figs.append(_figure(f"{a}: pass^{k}", _surface_map(pts, k, f"{a}: pass^{k}")))
    out.append('<div class="plots">' + "".join(figs) + "</div>")
    s = results.get("summary") if isinstance(results.get("summary"), Mapping) else {}
    assert isinstance(s, Mapping)
    stats = s.get("surface_stats")
    if isinstance(stats, Mapping):
        out.append(
            f"<p>volume under the surface {esc(_ival(stats.get('volume')))}; drop in R per unit of \u03b5 "
            f"{esc(_ival(stats.get('slope_epsilon')))}; drop per unit of \u03bb "
            f"{esc(_ival(stats.get('slope_lambda')))}</p>"
        )
    by_agent = s.get("surface_by_agent")
    if isinstance(by_agent, Mapping) and by_agent:
        rows = [
            f"<li>{esc(str(a))}: volume {esc(_ival(st.get('volume')))}; drop per unit of \u03b5 "
            f"{esc(_ival(st.get('slope_epsilon')))}; per unit of \u03bb {esc(_ival(st.get('slope_lambda')))}</li>"
            for a, own in by_agent.items()
            if isinstance(own, Mapping) and isinstance(st := own.get("stats"), Mapping)
        ]
        out.append(f"<p>Per agent (each agent's own surface):</p><ul>{''.join(rows)}</ul>")
    breaks = s.get("breaks")
    theta = s.get("theta")
    if isinstance(breaks, Mapping) and isinstance(breaks.get("intensity_at_epsilon"), Mapping):
        items = []
        for e, lam in breaks["intensity_at_epsilon"].items():
            where = (
                f"falls below {theta} at \u03bb={lam:g}" if isinstance(lam, int | float) else f"stays \u2265 {theta}"
            )
            items.append(f"<li>all agents, \u03b5={esc(e)}: R_{k} {esc(where)}</li>")
        out.append(f"<ul>{''.join(items)}</ul>")
    out.append("</section>")
    return "\n".join(out)


def _pass_k(results: Mapping[str, Any]) -> str:
    curves = pass_k_curves(results)
    out = [
        '<section id="pass-k"><h2>pass^k against k</h2>',
        '<p class="note">pass^k: the chance that k runs of the same scenario, agent and grid point all pass '
        "(the unbiased estimator from the repetitions). A curve that drops fast means flaky success.</p>",
    ]
    if not curves:
        out.append('<p class="note">No episodes in these results.</p>')
    else:
        note = (
            ""
            if max(x for pts in curves.values() for x, _ in pts) > 1
            else "one repetition each: run with --repeat 3 or more to see the curve"
        )
        out.append(_figure("pass^k by k", lines(curves, title="pass^k against k"), note))
    out.append("</section>")
    return "\n".join(out)


def _scores(results: Mapping[str, Any]) -> str:
    rows = score_histograms(results)
    out = [
        '<section id="scores"><h2>Score distribution per agent</h2>',
        '<p class="note">How many episodes scored in each band of 10 points (0\u2013100); bar heights share one '
        "scale.</p>",
    ]
    if rows:
        out.append(_figure("episodes per score band", histograms(rows, SCORE_EDGES, title="score distribution")))
    else:
        out.append('<p class="note">No episodes in these results.</p>')
    out.append("</section>")
    return "\n".join(out)


def _tools(results: Mapping[str, Any]) -> str:
    rows = attempts_per_tool(results)
    has_timeline = any(
        isinstance(e.get("attempts"), Mapping) and isinstance(e["attempts"].get("timeline"), list)
        for e in episodes_of(results)
    )
    out = [
        '<section id="tools"><h2>Attempts per tool</h2>',
        '<p class="note">Tool attempts over every episode; the second colour counts attempts that had a fault '
        "injected.</p>",
    ]
    if not rows:
        out.append('<p class="note">No tool attempts in these results.</p></section>')
        return "\n".join(out)
    note = ""
    if len(rows) > MAX_BARS:
        note = f"{len(rows) - MAX_BARS} more tools not drawn"
    if not has_timeline:
        note = (note + "; " if note else "") + "these results have no attempt timelines, so faults are not split out"
    chart = stacked_bars(
        [(t, [clean, faulted]) for t, clean, faulted in rows[:MAX_BARS]],
        ["no fault injected", "fault injected"],
        title="attempts per tool",
    )
    out.append(_figure("attempts per tool", chart, note))
    out.append("</section>")
    return "\n".join(out)


def _rate_bars(stats: Mapping[str, Mapping[str, Any]], title: str) -> str:
    rows = []
    for name, st in list(stats.items())[:MAX_BARS]:
        r = st.get("pass_at_1") if isinstance(st.get("pass_at_1"), Mapping) else {}
        assert isinstance(r, Mapping)
        n, passes = st.get("n", 0), st.get("passes", 0)
        value = float(r.get("value", passes / n if n else 0.0))
        low, high = r.get("low"), r.get("high")
        rows.append(
            Bar(
                name,
                value,
                f"{value:.0%} ({passes}/{n}), score {float(st.get('mean_score', 0.0)):.0f}",
                float(low) if isinstance(low, int | float) else None,
                float(high) if isinstance(high, int | float) else None,
            )
        )
    note = f"{len(stats) - MAX_BARS} more not drawn" if len(stats) > MAX_BARS else ""
    return _figure(title, bars(rows, title=title), note)


_BREAKDOWNS = (
    ("agent", "by agent"),
    ("model", "by model (the agent's model label)"),
    ("architecture", "by architecture (the agent's architecture label)"),
    ("domain", "by domain (the scenario's domain: tag)"),
    ("fault", "by fault type (the scenario's own faults)"),
    ("tag", "by tag"),
)

#: the optional axes: shown only when some episode carries them
_AXES = ("model", "architecture")


def _breakdowns(results: Mapping[str, Any]) -> str:
    out = [
        '<section id="breakdowns"><h2>Breakdowns</h2>',
        '<p class="note">pass@1 of every episode in each group, with its 95% Wilson interval as a whisker; an '
        "episode counts in each of its scenario's fault types and tags.</p>",
        '<div class="plots">',
    ]
    for by, title in _BREAKDOWNS:
        stats = breakdown(results, by)
        if stats:
            out.append(f'<div class="breakdown" id="breakdown-{by}">{_rate_bars(stats, title)}</div>')
        elif by in _AXES:
            continue  # an axis nobody labelled: no note (most runs have none)
        else:
            out.append(
                f'<div class="breakdown" id="breakdown-{by}"><p class="note">No breakdown {esc(title)}: these '
                "results do not record it (written by an older chaoskit, or no episode has one).</p></div>"
            )
    out.append("</div></section>")
    return "\n".join(out)


def plots_sections(results: Mapping[str, Any]) -> str:
    """The surface, pass^k, score, tool and breakdown sections of the page, each a ``<section>`` with an id."""
    return "\n".join([_surface(results), _pass_k(results), _scores(results), _tools(results), _breakdowns(results)])
