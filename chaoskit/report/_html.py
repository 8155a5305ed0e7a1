"""The self-contained HTML report of a battery: one offline page and its sections, from a results dict."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.report._html_episode import episode_card, judge_badge
from chaoskit.report._report_data import (
    SCORE_EDGES,
    attempts_per_tool,
    breakdown,
    episodes_of,
    expected_of,
    failing_checks,
    k_of,
    label_of,
    matrix,
    metrics_notes,
    pass_k_curves,
    pick_episodes,
    readiness_to_show,
    score_histograms,
    split_expected_writes,
    surface_points,
)
from chaoskit.report._svg import Bar, bars, cost_scatter, esc, heatmap, histograms, lines, number, stacked_bars
from chaoskit.runner._metrics import metrics_summary

__all__ = ["MAX_EPISODES", "metrics_section", "render_html", "write_html"]

#: how many episodes the page lists in full (failing ones first); the rest are counted
MAX_EPISODES = 250
#: the most rows one bar chart draws, of the failing-check table and of the judge's table (the rest are counted)
MAX_BARS = 30
MAX_FAILURE_ROWS = 200
MAX_JUDGE_ROWS = 100
_DOT = " \u00b7 "
_DASH = "\u2013"


def _asset(name: str) -> str:
    return resources.files("chaoskit.report").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _pct(rate: Any) -> str:
    if not isinstance(rate, Mapping) or not isinstance(rate.get("value"), int | float):
        return "n/a"
    text = f"{rate['value'] * 100:.0f}%"
    if isinstance(rate.get("low"), int | float) and isinstance(rate.get("high"), int | float):
        text += f" [{rate['low'] * 100:.0f}\u2013{rate['high'] * 100:.0f}]"
    return text


def _header(results: Mapping[str, Any]) -> str:
    cfg = results.get("config") if isinstance(results.get("config"), Mapping) else {}
    assert isinstance(cfg, Mapping)
    eps = episodes_of(results)
    agents = list(dict.fromkeys(label_of(e) for e in eps))
    scenarios = list(dict.fromkeys(str(e.get("scenario")) for e in eps))
    prof = cfg.get("profile")
    prof_name = prof.get("name", "?") if isinstance(prof, Mapping) else (prof or "?")
    paths = cfg.get("paths")
    items = [
        f"{len(eps)} episodes",
        f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}",
        f"{len(agents)} agent{'s' if len(agents) != 1 else ''}",
        f"seed {number(cfg.get('seed'))}",
        f"repeat {number(cfg.get('repeat'))}",
        f"profile {prof_name}",
    ]
    if isinstance(results.get("elapsed_s"), int | float):
        items.append(f"{results['elapsed_s']:.1f} s")
    if results.get("chaoskit"):
        items.append(f"chaoskit {results['chaoskit']}")
    out = [
        "<header>",
        "<h1>chaoskit report</h1>",
        f'<p class="meta">{esc(_DOT.join(items))}</p>',
    ]
    if isinstance(paths, list) and paths:
        out.append(f'<p class="meta">scenarios from: {esc(", ".join(str(p) for p in paths))}</p>')
    if agents:
        out.append(f'<p class="meta">agents: {esc(", ".join(agents))}</p>')
    links = [
        ("verdict", "Verdict"),
        ("results", "Results"),
        ("surface", "Reliability surface"),
        ("pass-k", "pass^k"),
        ("scores", "Scores"),
        ("tools", "Attempts per tool"),
        ("breakdowns", "Breakdowns"),
        ("failures", "Failing checks"),
        ("readiness", "Fix in the tool"),
        *([("metrics", "Metrics and cost")] if _metrics_of(results) else []),
        ("episodes", "Episodes"),
    ]
    out.append(
        '<nav aria-label="sections"><ul>'
        + "".join(f'<li><a href="#{a}">{esc(t)}</a></li>' for a, t in links)
        + "</ul></nav></header>"
    )
    return "\n".join(out)


def _metrics_of(results: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The run's metrics summary; recomputed from the episodes for a results file written without it."""
    summary = results.get("summary")
    found = summary.get("metrics") if isinstance(summary, Mapping) else None
    if isinstance(found, Mapping):
        return found
    episodes = results.get("episodes")
    return metrics_summary(episodes) if isinstance(episodes, list) else None


def _list(items: Sequence[Any], limit: int, *, code: bool = False) -> str:
    if not items:
        return ""
    wrap = (lambda s: f"<code>{esc(s)}</code>") if code else esc
    lis = "".join(f"<li>{wrap(str(x))}</li>" for x in items[:limit])
    more = f'<li class="note">and {len(items) - limit} more</li>' if len(items) > limit else ""
    return f"<ul>{lis}{more}</ul>"


def _expectations(exp: Mapping[str, Any]) -> str:
    unexpected = exp.get("unexpected") if isinstance(exp.get("unexpected"), list) else []
    assert isinstance(unexpected, list)
    out = [
        "<h3>Expected outcomes</h3>",
        f"<p>from <code>{esc(exp.get('file', '?'))}</code>: {esc(number(exp.get('met')))} met, "
        f"{len(unexpected)} unexpected, {esc(number(exp.get('not_run')))} not run</p>",
    ]
    if unexpected:
        out.append(
            '<table class="unexpected"><thead><tr><th>scenario</th><th>agent</th><th>expected</th><th>actual</th>'
            "<th>checks that did not fail</th><th>why it was expected</th></tr></thead><tbody>"
        )
        for u in unexpected:
            if not isinstance(u, Mapping):
                continue
            checks = u.get("checks") if isinstance(u.get("checks"), list) else []
            out.append(
                f"<tr><td>{esc(u.get('scenario', '?'))}</td><td>{esc(u.get('agent', '?'))}</td>"
                f"<td>{esc(u.get('expected', '?'))}</td><td>{esc(u.get('actual', '?'))}</td>"
                f"<td>{esc(', '.join(str(c) for c in checks or []))}</td><td>{esc(u.get('why', ''))}</td></tr>"
            )
        out.append("</tbody></table>")
    return "\n".join(out)


def _verdict(results: Mapping[str, Any]) -> str:
    v = results.get("verdict") if isinstance(results.get("verdict"), Mapping) else {}
    assert isinstance(v, Mapping)
    ok = v.get("ok")
    word, cls, mark = ("PASS", "pass", "\u2713") if ok is True else ("FAIL", "fail", "\u2717")
    if ok is None:
        word, cls, mark = "unknown (no verdict in the results)", "fail", "?"
    why = v.get("why") if isinstance(v.get("why"), str) else ""
    out = [
        '<section id="verdict"><h2>Verdict</h2>',
        f'<p class="verdict {cls}" id="verdict-text">{mark} verdict: {esc(word)}</p>',
    ]
    if why:
        out.append(f'<p class="why" id="verdict-why">{esc(why)}</p>')
    reasons = v.get("reasons") if isinstance(v.get("reasons"), list) else []
    assert isinstance(reasons, list)
    if reasons:
        out.append("<h3>Why</h3>" + _list(reasons, 30))
    exp = v.get("expectations") if isinstance(v.get("expectations"), Mapping) else None
    expected = expected_of(results)
    failed_as_expected = [
        e
        for e in episodes_of(results)
        if not e.get("passed") and (str(e.get("scenario")), str(e.get("agent"))) in expected
    ]
    writes = v.get("duplicate_writes") if isinstance(v.get("duplicate_writes"), list) else []
    assert isinstance(writes, list)
    # with an expected-outcome table, the table alone decides: a write it expected is no reason for the verdict
    writes, expected_writes = split_expected_writes(writes, (str(e.get("replay")) for e in failed_as_expected))
    writes_title = "Repeated irreversible writes" + (" the expected-outcome table did not expect" if exp else "")
    for title, items in ((writes_title, writes), ("Regressions", v.get("regressions"))):
        if isinstance(items, list) and items:
            out.append(f"<h3>{esc(title)} ({len(items)})</h3>" + _list(items, 10))
    if exp is not None:
        out.append(_expectations(exp))
    s = results.get("summary") if isinstance(results.get("summary"), Mapping) else {}
    assert isinstance(s, Mapping)
    o = s.get("overall")
    if isinstance(o, Mapping):
        outcomes = o.get("outcomes") if isinstance(o.get("outcomes"), Mapping) else {}
        assert isinstance(outcomes, Mapping)
        out.append(
            f'<p class="overall">overall: pass@1 {esc(_pct(o.get("pass_at_1")))} over {esc(number(o.get("episodes")))} '
            f"episodes; pass^{esc(number(s.get('k')))} {esc(_pct(o.get('pass_hat_k')))}; mean score "
            f"{esc(number(o.get('mean_score'), '.1f'))}; mean attempts {esc(number(o.get('mean_attempts'), '.2f'))}"
            + (f"; outcomes {esc(', '.join(f'{k} {n}' for k, n in outcomes.items()))}" if outcomes else "")
            + "</p>"
        )
    if failed_as_expected:
        order = {a: i for i, a in enumerate(dict.fromkeys(label_of(e) for e in episodes_of(results)))}
        failed_as_expected.sort(key=lambda e: order[label_of(e)])
        out.append(_expected_failures(failed_as_expected, expected_writes))
    out.append("</section>")
    return "\n".join(out)


def _expected_failures(episodes: Sequence[Mapping[str, Any]], writes: Sequence[str]) -> str:
    """The failing episodes the expected-outcome table predicted, counted per agent, apart from the verdict's
    reasons: they are flawed agents failing the scenarios aimed at their flaw, proof that the checks catch it."""
    per_agent: dict[str, int] = {}
    for e in episodes:
        per_agent[label_of(e)] = per_agent.get(label_of(e), 0) + 1
    n = len(episodes)
    out = [
        '<div class="expected-failures" id="expected-failures">',
        f"<h3>Expected failures ({n} episode{'s' * (n != 1)}): not reasons for the verdict</h3>",
        '<p class="note">The expected-outcome table predicts these failures: flawed agents failing the scenarios '
        "aimed at their flaw, which shows that the checks catch it. Per agent: "
        f"{esc(', '.join(f'{a} {k}' for a, k in per_agent.items()))}. They are marked <em>expected</em> under "
        '<a href="#failures">Failing checks</a> and <a href="#episodes">Episodes</a>.</p>',
    ]
    if writes:
        out.append(
            f"<details><summary>Repeated irreversible writes, all expected by the table ({len(writes)})</summary>"
            + _list(writes, 10)
            + "</details>"
        )
    out.append("</div>")
    return "\n".join(out)


def _rate_cell(st: Mapping[str, Any] | None) -> str:
    if not isinstance(st, Mapping):
        return '<td class="num">\u2013</td>'
    n, passes = st.get("n"), st.get("passes")
    if not isinstance(n, int) or not isinstance(passes, int) or n <= 0:
        return '<td class="num">\u2013</td>'
    cls, mark = ("all", "\u2713") if passes == n else (("none", "\u2717") if passes == 0 else ("some", "\u00bd"))
    tip = f"pass@1 {_pct(st.get('pass_at_1'))}, mean score {number(st.get('mean_score'), '.1f')}"
    return f'<td class="num {cls}" title="{esc(tip)}">{mark} {passes}/{n} ({passes / n:.0%})</td>'


def _results(results: Mapping[str, Any]) -> str:
    m = matrix(results)
    agents = list(dict.fromkeys(a for row in m.values() for a in row))
    out = ['<section id="results"><h2>Results per scenario and agent</h2>']
    if not m:
        out.append('<p class="note">No episodes in these results.</p></section>')
        return "\n".join(out)
    out.append(
        '<p class="note">Each cell: episodes passed / run (pass@1), over every repetition and grid point. '
        "\u2713 all passed, \u00bd some, \u2717 none.</p>"
    )
    out.append(
        '<table class="matrix"><thead><tr><th scope="col">scenario</th>'
        + "".join(f'<th scope="col">{esc(a)}</th>' for a in agents)
        + "</tr></thead><tbody>"
    )
    for sc, row in m.items():
        out.append(f'<tr><th scope="row">{esc(sc)}</th>' + "".join(_rate_cell(row.get(a)) for a in agents) + "</tr>")
    out.append("</tbody></table>")
    per_agent = breakdown(results, "agent") or {}
    out.append(
        '<h3>Per agent</h3><table class="agents"><thead><tr><th>agent</th><th>passed</th>'
        "<th>pass@1 [95% CI]</th><th>mean score</th><th>mean attempts</th></tr></thead><tbody>"
    )
    for name, st in per_agent.items():
        out.append(
            f"<tr><th scope='row'>{esc(name)}</th>{_rate_cell(st)}<td class='num'>{esc(_pct(st.get('pass_at_1')))}</td>"
            f"<td class='num'>{esc(number(st.get('mean_score'), '.1f'))}</td>"
            f"<td class='num'>{esc(number(st.get('mean_attempts'), '.2f'))}</td></tr>"
        )
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _section(anchor: str, title: str, note: str, *body: str) -> str:
    """A ``<section>`` of the page: its id, heading, a note on how to read it, then ``body``."""
    return "\n".join([f'<section id="{anchor}"><h2>{title}</h2>', f'<p class="note">{note}</p>', *body, "</section>"])


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
    body = '<p class="note">No episodes in these results.</p>'
    if curves:
        once = max(x for pts in curves.values() for x, _ in pts) == 1
        note = "one repetition each: run with --repeat 3 or more to see the curve" if once else ""
        body = _figure("pass^k by k", lines(curves, title="pass^k against k"), note)
    return _section(
        "pass-k",
        "pass^k against k",
        "pass^k: the chance that k runs of the same scenario, agent and grid point all pass (the unbiased estimator "
        "from the repetitions). A curve that drops fast means flaky success.",
        body,
    )


def _scores(results: Mapping[str, Any]) -> str:
    rows = score_histograms(results)
    return _section(
        "scores",
        "Score distribution per agent",
        "How many episodes scored in each band of 10 points (0\u2013100); bar heights share one scale.",
        _figure("episodes per score band", histograms(rows, SCORE_EDGES, title="score distribution"))
        if rows
        else '<p class="note">No episodes in these results.</p>',
    )


def _tools(results: Mapping[str, Any]) -> str:
    rows = attempts_per_tool(results)
    has_timeline = any(
        isinstance(e.get("attempts"), Mapping) and isinstance(e["attempts"].get("timeline"), list)
        for e in episodes_of(results)
    )
    if not rows:
        body = '<p class="note">No tool attempts in these results.</p>'
    else:
        notes = [f"{len(rows) - MAX_BARS} more tools not drawn"] if len(rows) > MAX_BARS else []
        if not has_timeline:
            notes.append("these results have no attempt timelines, so faults are not split out")
        chart = stacked_bars(
            [(t, [clean, faulted]) for t, clean, faulted in rows[:MAX_BARS]],
            ["no fault injected", "fault injected"],
            title="attempts per tool",
        )
        body = _figure("attempts per tool", chart, "; ".join(notes))
    return _section(
        "tools",
        "Attempts per tool",
        "Tool attempts over every episode; the second colour counts attempts that had a fault injected.",
        body,
    )


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
    out = []
    for by, title in _BREAKDOWNS:
        stats = breakdown(results, by)
        if stats:
            out.append(f'<div class="breakdown" id="breakdown-{by}">{_rate_bars(stats, title)}</div>')
        elif by not in _AXES:  # an axis nobody labelled gets no note (most runs have none)
            out.append(
                f'<div class="breakdown" id="breakdown-{by}"><p class="note">No breakdown {esc(title)}: these '
                "results do not record it (written by an older chaoskit, or no episode has one).</p></div>"
            )
    return _section(
        "breakdowns",
        "Breakdowns",
        "pass@1 of every episode in each group, with its 95% Wilson interval as a whisker; an episode counts in each "
        "of its scenario's fault types and tags.",
        '<div class="plots">',
        *out,
        "</div>",
    )


def _plots_sections(results: Mapping[str, Any]) -> str:
    """The surface, pass^k, score, tool and breakdown sections of the page, each a ``<section>`` with an id."""
    return "\n".join([_surface(results), _pass_k(results), _scores(results), _tools(results), _breakdowns(results)])


def _failures_section(results: Mapping[str, Any]) -> str:
    """Every failing check, per scenario and agent, with its message and a command that replays one episode."""
    rows = failing_checks(results)
    out = ['<section id="failures"><h2>Failing checks</h2>']
    if not rows:
        out.append('<p class="note">No check failed.</p></section>')
        return "\n".join(out)
    note = (
        "One row per scenario, agent and check; the replay command reruns the first episode the check failed in, "
        "with the same seed and faults."
    )
    if any(r["expected"] for r in rows):
        note += (
            " Rows marked <em>expected</em> are failures the expected-outcome table predicts (flawed agents that "
            "prove the checks work): they are not reasons for the verdict. Unexpected rows come first."
        )
    out.append(f'<p class="note">{note}</p>')
    out.append(
        '<table class="failures"><thead><tr><th>scenario</th><th>agent</th><th>check</th><th>failed in</th>'
        "<th>message and replay</th></tr></thead><tbody>"
    )
    for r in rows[:MAX_FAILURE_ROWS]:
        row_cls, badge = "", ""
        if r["expected"]:
            row_cls, badge = ' class="expected"', ' <span class="badge expected">expected</span>'
        out.append(
            f"<tr{row_cls}><td>{esc(r['scenario'])}</td>"
            f"<td>{esc(r['agent'])}</td><td><code>{esc(r['check'])}</code>{badge}</td>"
            f'<td class="num">{r["failed"]}/{r["runs"]}</td><td><div class="message">{esc(r["message"])}</div>'
            f'<div>replay: <code class="replay">{esc(r["replay"])}</code></div></td></tr>'
        )
    out.append("</tbody></table>")
    if len(rows) > MAX_FAILURE_ROWS:
        out.append(f'<p class="note">{len(rows) - MAX_FAILURE_ROWS} more failing checks not listed.</p>')
    out.append("</section>")
    return "\n".join(out)


def _episodes_section(results: Mapping[str, Any], limit: int) -> str:
    """The episodes, each in a closed ``<details>`` (facts, final answer, checks, attempt timeline): failing
    first, at most ``limit``, and a line counting the ones left out."""
    total = len(episodes_of(results))
    chosen, omitted, omitted_failing = pick_episodes(results, limit)
    expected = expected_of(results)
    more = (
        f'<p class="omitted">{omitted} more episodes not listed ({omitted_failing} of them failing); the JSON '
        "results have every one.</p>"
    )
    return _section(
        "episodes",
        "Episodes",
        f"{len(chosen)} of {total} episodes listed, failing ones first; open one for its checks and the timeline of "
        "its tool attempts.",
        '<p class="toolbar" hidden><button type="button" id="expand-all">open all</button>'
        '<button type="button" id="collapse-all">close all</button>'
        '<button type="button" id="only-failing" aria-pressed="false">only failing</button></p>',
        *(episode_card(e, i, expected) for i, e in enumerate(chosen)),
        *([more] if omitted else []),
    )


def _judge_section(results: Mapping[str, Any]) -> str:
    """The judge's totals and a table of the episodes where it and the deterministic answer checks disagree,
    or could not judge; "" when the run had no judge."""
    judged = [e for e in episodes_of(results) if isinstance(e.get("judge"), Mapping)]
    if not judged:
        return ""
    js = [e["judge"] for e in judged]
    gates = any(j.get("gates") for j in js)
    counts = {v: sum(1 for j in js if j.get("verdict") == v) for v in ("pass", "fail", "cannot_judge")}
    apart = [e for e in judged if e["judge"].get("agree") is False or e["judge"].get("verdict") == "cannot_judge"]
    out = [
        '<section id="judge"><h2>Judge</h2>',
        f'<p class="note">Model <code>{esc(js[0].get("model", "?"))}</code>, rubric {esc(js[0].get("rubric", "?"))}: '
        f"{counts['pass']} honest, {counts['fail']} flagged, {counts['cannot_judge']} cannot judge, "
        f"{sum(1 for j in js if j.get('agree') is False)} disagree with the deterministic answer checks. "
        + (
            "The judge gates too (calibrated: --judge-min-kappa)."
            if gates
            else "The deterministic checks gate; the judge only advises."
        )
        + "</p>",
    ]
    if apart:
        out.append(
            '<table class="failures"><thead><tr><th>scenario</th><th>agent</th><th>judge</th>'
            "<th>deterministic</th><th>why</th></tr></thead><tbody>"
        )
        for e in apart[:MAX_JUDGE_ROWS]:
            j = e["judge"]
            det = j.get("deterministic") or "-"
            why = j.get("disagreement") or j.get("error") or ""
            out.append(
                f"<tr><td>{esc(e.get('scenario', '?'))}</td><td>{esc(label_of(e))}</td><td>{judge_badge(j)}</td>"
                f"<td>{esc(det)}</td><td>{esc(why)}</td></tr>"
            )
        out.append("</tbody></table>")
    out.append("</section>")
    return "\n".join(out)


def _counts(by_fault: Any) -> str:
    if not isinstance(by_fault, Mapping):
        return _DASH
    return (
        ", ".join(f"{f} \u00d7{n}" if isinstance(n, int) and n > 1 else str(f) for f, n in sorted(by_fault.items()))
        or _DASH
    )


def _contracts_section(results: Mapping[str, Any]) -> str:
    """Readiness (one row per tool and agent: faults survived, faults failed, findings in the way) and the
    contract findings, each with its evidence, why it matters and the usual fix; apart from the agents' results."""
    summary = results.get("summary")
    summary = summary if isinstance(summary, Mapping) else {}
    # an odd or older results file renders as "no data", never as a crash
    given = summary.get("readiness") or ()
    rows = readiness_to_show(given)
    contracts = [f for f in summary.get("contracts") or () if isinstance(f, Mapping)]
    out = ['<section id="readiness"><h2>Tools: readiness and contract findings (fix in the tool)</h2>']
    if not given and not contracts:
        out.append('<p class="note">These results hold no readiness data (an older results file).</p></section>')
        return "\n".join(out)
    out.append(
        '<p class="note">The failing checks above are the agent\u2019s to fix. The findings here are the '
        "tool\u2019s: what in the tool itself stands in the way of a safe recovery.</p>"
    )
    if rows:
        out.append(
            '<table class="readiness"><thead><tr><th scope="col">tool</th><th scope="col">agent</th>'
            '<th scope="col">faults survived</th><th scope="col">faults failed</th>'
            '<th scope="col">contract findings</th></tr></thead><tbody>'
        )
        for x in rows:
            out.append(
                f"<tr><th scope='row'>{esc(str(x.get('tool')))}</th><td>{esc(str(x.get('agent') or ''))}</td>"
                f"<td>{esc(_counts(x.get('survived')))}</td><td>{esc(_counts(x.get('failed')))}</td>"
                f"<td>{esc(', '.join(map(str, x.get('findings') or [])) or _DASH)}</td></tr>"
            )
        out.append("</tbody></table>")
    quiet = sum(isinstance(x, Mapping) for x in given) - len(rows)
    if quiet:
        out.append(
            f'<p class="note">{quiet} tool and agent row(s) with nothing to say (no fault reached the tool, '
            "no finding) are left out.</p>"
        )
    if contracts:
        out.append(f"<h3>{len(contracts)} contract finding(s)</h3><ul class='contracts'>")
        for f in contracts:
            out.append(
                f"<li><strong>{esc(str(f.get('tool')))}</strong>: <code>{esc(str(f.get('kind')))}</code>"
                f"<dl><dt>evidence ({esc(str(f.get('episode') or f.get('origin') or ''))})</dt>"
                f"<dd>{esc(str(f.get('evidence')))}</dd>"
                f"<dt>why it matters</dt><dd>{esc(str(f.get('why')))}</dd>"
                f"<dt>usual fix</dt><dd>{esc(str(f.get('fix')))}</dd></dl></li>"
            )
        out.append("</ul>")
    else:
        out.append('<p class="note">No tool-contract finding.</p>')
    out.append("</section>")
    return "\n".join(out)


def _f(value: Any, fmt: str = ".2f") -> str:
    return _DASH if value is None else format(value, fmt)


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
    out += [f'<p class="note">{esc(note)}.</p>' for note in metrics_notes(agents)]
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


def render_html(results: Mapping[str, Any], *, max_episodes: int = MAX_EPISODES) -> str:
    """The report page for a results dict (``BatteryResult.to_dict()`` or a loaded ``--json`` file).

    The page is self-contained: its CSS, script and SVG charts are inline, it loads nothing (its
    Content-Security-Policy forbids any fetch), and every string from the results is escaped. Keys that an
    older results file lacks (breakdowns, matrix, timelines, ...) are derived from the episodes or the section
    says they are not there. At most ``max_episodes`` episodes are listed in full, failing ones first."""
    css, js = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    body = "\n".join(
        [
            _header(results),
            "<main>",
            _verdict(results),
            _results(results),
            _plots_sections(results),
            _failures_section(results),
            _judge_section(results),
            _contracts_section(results),
            metrics_section(_metrics_of(results)),
            _episodes_section(results, max_episodes),
            "</main>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="chaoskit">'
        f"<title>chaoskit report</title><style>{css}</style></head>\n<body>\n{body}\n"
        f"<script>{js}</script>\n</body></html>\n"
    )


def write_html(results: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write :func:`render_html`'s page for ``results`` to ``path`` (its folder is created)."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(render_html(results), encoding="utf-8")
    except OSError as exc:
        raise ChaoskitError(f"{p}: cannot write the HTML report: {exc.strerror or exc}") from None
