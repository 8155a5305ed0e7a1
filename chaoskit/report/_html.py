"""The self-contained HTML report of a battery: one offline page, from a results dict (``chaoskit run --json``)."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.report._html_contracts import contracts_section
from chaoskit.report._html_data import breakdown, episodes_of, label_of, matrix
from chaoskit.report._html_episodes import episodes_section, failures_section
from chaoskit.report._html_judge import judge_section
from chaoskit.report._html_metrics import metrics_section
from chaoskit.report._html_plots import plots_sections
from chaoskit.report._svg import esc
from chaoskit.runner._metrics import metrics_summary

__all__ = ["render_html", "write_html"]

#: how many episodes the page lists in full (failing ones first); the rest are counted
MAX_EPISODES = 250
_DOT = " \u00b7 "


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


def _g(value: Any, fmt: str = "g") -> str:
    return format(value, fmt) if isinstance(value, int | float) and not isinstance(value, bool) else "?"


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
        f"seed {_g(cfg.get('seed'))}",
        f"repeat {_g(cfg.get('repeat'))}",
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
        f"<p>from <code>{esc(exp.get('file', '?'))}</code>: {esc(_g(exp.get('met')))} met, "
        f"{len(unexpected)} unexpected, {esc(_g(exp.get('not_run')))} not run</p>",
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
    judged = isinstance(v.get("expectations"), Mapping)
    for key, title in (("duplicate_writes", "Repeated irreversible writes"), ("regressions", "Regressions")):
        items = v.get(key)
        if isinstance(items, list) and items:
            if key == "duplicate_writes" and judged:
                # with an expected-outcome table these are judged by it: expected ones are no reason for the verdict
                title += ", judged by the expected-outcome table" + (" (all expected)" if ok is True else "")
            out.append(f"<h3>{esc(title)} ({len(items)})</h3>" + _list(items, 10))
    if isinstance(v.get("expectations"), Mapping):
        out.append(_expectations(v["expectations"]))
    s = results.get("summary") if isinstance(results.get("summary"), Mapping) else {}
    assert isinstance(s, Mapping)
    o = s.get("overall")
    if isinstance(o, Mapping):
        outcomes = o.get("outcomes") if isinstance(o.get("outcomes"), Mapping) else {}
        assert isinstance(outcomes, Mapping)
        out.append(
            f'<p class="overall">overall: pass@1 {esc(_pct(o.get("pass_at_1")))} over {esc(_g(o.get("episodes")))} '
            f"episodes; pass^{esc(_g(s.get('k')))} {esc(_pct(o.get('pass_hat_k')))}; mean score "
            f"{esc(_g(o.get('mean_score'), '.1f'))}; mean attempts {esc(_g(o.get('mean_attempts'), '.2f'))}"
            + (f"; outcomes {esc(', '.join(f'{k} {n}' for k, n in outcomes.items()))}" if outcomes else "")
            + "</p>"
        )
    out.append("</section>")
    return "\n".join(out)


def _rate_cell(st: Mapping[str, Any] | None) -> str:
    if not isinstance(st, Mapping):
        return '<td class="num">\u2013</td>'
    n, passes = st.get("n"), st.get("passes")
    if not isinstance(n, int) or not isinstance(passes, int) or n <= 0:
        return '<td class="num">\u2013</td>'
    cls, mark = ("all", "\u2713") if passes == n else (("none", "\u2717") if passes == 0 else ("some", "\u00bd"))
    tip = f"pass@1 {_pct(st.get('pass_at_1'))}, mean score {_g(st.get('mean_score'), '.1f')}"
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
            f"<td class='num'>{esc(_g(st.get('mean_score'), '.1f'))}</td>"
            f"<td class='num'>{esc(_g(st.get('mean_attempts'), '.2f'))}</td></tr>"
        )
    out.append("</tbody></table></section>")
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
            plots_sections(results),
            failures_section(results),
            judge_section(results),
            contracts_section(results),
            metrics_section(_metrics_of(results)),
            episodes_section(results, max_episodes),
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
