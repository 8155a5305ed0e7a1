"""The terminal report of a battery: one screen by default (agents, failing checks, verdict), everything with -v.

Rendered with rich: colour only on a terminal (rich decides, ``NO_COLOR`` respected); elsewhere plain ASCII tables
on a wide console, so that CI logs never cut a table at 80 columns and tests can read the text.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chaoskit.report._report_data import metrics_notes, readiness_to_show, split_expected_writes
from chaoskit.runner._breakdowns import breakdowns
from chaoskit.runner._expect import expected_pairs
from chaoskit.runner._results import BatteryResult, Cell
from chaoskit.runner._surface import surface_stats

__all__ = ["metrics_lines", "render_text"]

#: the width of the report when it does not go to a terminal (a CI log): wide enough never to cut a table
PLAIN_WIDTH = 400
#: a header rule of dashes and no other lines: plain ASCII, stable in logs
_PLAIN = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_BREAKDOWNS = (
    ("agent", "agent"),
    ("model", "model"),
    ("architecture", "architecture"),
    ("domain", "domain"),
    ("fault", "fault type"),
    ("tag", "tag"),
)


def _label(ref: str | None) -> str:
    """How tables name an agent: the factory of a ``module:factory`` reference, else the whole command."""
    if not ref:
        return "-"
    return ref.rpartition(":")[2] if _REF.match(ref) else ref


def _pct(d: Mapping[str, Any]) -> str:
    return f"{d['value'] * 100:.0f}% [{d['low'] * 100:.0f}-{d['high'] * 100:.0f}]"


def _ival(d: Mapping[str, Any] | None, fmt: str = ".2f") -> str:
    if not d:
        return "-"
    return f"{d['value']:{fmt}} [{d['low']:{fmt}} to {d['high']:{fmt}}]"


def _rate_style(value: float, theta: float) -> str:
    return "green" if value >= theta else ("red" if value < 0.5 else "yellow")


class _Report:
    """Collects the report's parts on one rich console writing to a buffer."""

    def __init__(self, color: bool, width: int) -> None:
        self.buf = io.StringIO()
        self.color = color
        self.console = Console(
            file=self.buf,
            width=width,
            force_terminal=color,
            color_system="auto" if color else None,
            emoji=False,
            highlight=False,
            markup=False,
            legacy_windows=False,
        )

    def line(self, text: str | Text = "", style: str = "") -> None:
        self.console.print(text if isinstance(text, Text) else Text(text, style=style), soft_wrap=True)

    def table(self, title: str | None, header: Sequence[str], rows: Iterable[Sequence[str | Text]]) -> None:
        t = Table(
            title=title,
            title_justify="left",
            title_style="bold" if self.color else "",
            box=box.SIMPLE_HEAD if self.color else _PLAIN,
            header_style="bold" if self.color else "",
            show_edge=False,
            pad_edge=False,
        )
        for h in header:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*(c if isinstance(c, Text) else Text(c) for c in r))
        self.console.print(t)

    def text(self) -> str:
        return "\n".join(ln.rstrip() for ln in self.buf.getvalue().splitlines())


def _decide(color: bool | None, width: int | None) -> tuple[bool, int]:
    """Colour and width: a terminal's (rich asks it, ``NO_COLOR`` and ``TERM=dumb`` respected), else plain and
    :data:`PLAIN_WIDTH` columns."""
    probe = Console(file=sys.stdout)
    tty = probe.is_terminal and not probe.is_dumb_terminal
    if color is None:
        color = tty and not probe.no_color
    if width is None:
        width = probe.width if tty else PLAIN_WIDTH
    return color, width


def render_text(
    result: BatteryResult,
    *,
    max_failures: int = 10,
    color: bool | None = None,
    width: int | None = None,
    verbose: bool = False,
    html: str | None = None,
) -> str:
    """The report ``chaoskit run`` prints, ending with the verdict and why.

    By default one screen: one line per agent, the unexpected outcomes, the failing checks grouped by check
    (with counts, how many the expected-outcome table expected, and one replay command each), the tool-contract
    findings counted, and the path of the HTML report (``html``). ``verbose`` (``-v``) adds the per-scenario
    rows, the breakdowns, the surface, at most ``max_failures`` failing episodes with replays, the readiness
    table and the findings in full. ``color`` and ``width`` default to standard output's: colour and the
    terminal's width on a terminal, else no colour and :data:`PLAIN_WIDTH` columns."""
    color, width = _decide(color, width)
    r = _Report(color, width)
    s = result.summary
    cfg = result.config
    prof = cfg.get("profile") or {}
    r.line(
        f"chaoskit run: {s.overall['episodes']} episodes, seed {cfg.get('seed')}, repeat {cfg.get('repeat')}, "
        f"k={s.k}, profile {prof.get('name', '?')}, {result.elapsed_s:.1f}s",
        "bold",
    )
    if verbose:
        _full(r, result, max_failures)
    else:
        _agents(r, result)
        _failing_checks(r, result)
        _contracts_count(r, s)
        # asked for with --metrics: shown on the first screen too
        _metrics(r, getattr(s, "metrics", None))
    # asked for with --judge: its verdicts beside the deterministic ones, in both views
    _judge(r, result, max_failures)
    exp = getattr(result.verdict, "expectations", None)
    if exp:
        _expectations(r, exp)
    if html:
        r.line()
        r.line(f"HTML report: {html}")
    _verdict(r, result)
    return r.text()


def _full(r: _Report, result: BatteryResult, max_failures: int) -> None:
    """The ``-v`` body: per-scenario rows, overall, the grid, breakdowns, surface, failing episodes, tools."""
    s = result.summary
    cfg = result.config
    for ln in _mix_lines(cfg.get("profile") or {}, cfg.get("intensities") or ()):
        r.line(ln)
    multi = len({(c.epsilon, c.intensity) for c in s.cells}) > 1
    r.line()
    _cells(r, s.cells, s.k, s.theta, multi)
    o = s.overall
    r.line()
    r.line(
        f"overall: pass@1 {_pct(o['pass_at_1'])} over {o['episodes']} episodes; pass^{s.k} "
        f"{o['pass_hat_k']['value']:.2f} [{o['pass_hat_k']['low']:.2f}-{o['pass_hat_k']['high']:.2f}] over "
        f"{o['pass_hat_k']['n']} groups of {s.k}; mean score {o['mean_score']:.1f}; outcomes "
        + ", ".join(f"{k} {v}" for k, v in o["outcomes"].items())
    )
    matrix = getattr(s, "matrix", None) or {}
    if multi and matrix:
        r.line()
        rows = [
            [
                sc,
                agent,
                str(st["n"]),
                _rate(st["pass_at_1"], s.theta, r.color),
                f"{st['mean_score']:.1f}",
                f"{st['mean_attempts']:g}",
            ]
            for sc, by_agent in matrix.items()
            for agent, st in by_agent.items()
        ]
        r.table(
            "per scenario and agent, over the grid",
            ["scenario", "agent", "n", "pass@1 [95% CI]", "score", "attempts"],
            rows,
        )
    _breakdowns(r, getattr(s, "breakdowns", None) or {}, s.theta)
    if multi:
        _surface(r, s)
    _failing(r, result, max_failures)
    _tools(r, s)
    _metrics(r, getattr(s, "metrics", None))


def _agents(r: _Report, result: BatteryResult) -> None:
    """One line per agent, in the order they ran: the per-agent breakdown's episodes, passes, pass@1 and mean
    score, and how many of its failing episodes the expected-outcome table expected."""
    expected = expected_pairs(getattr(result.verdict, "expectations", None))
    stats = (getattr(result.summary, "breakdowns", None) or {}).get("agent") or breakdowns(result.episodes)["agent"]
    failing: dict[str, list[Any]] = {}
    for e in result.episodes:
        failing.setdefault(e.agent_label, [])
        if not e.passed:
            failing[e.agent_label].append(e)
    if not failing:
        return
    rows = []
    for label, bad in failing.items():
        st = stats[label]
        exp_n = sum((e.scenario, e.agent) in expected for e in bad)
        note = f"{len(bad)}" + (f" ({exp_n} expected)" if expected else "") if bad else "-"
        rows.append(
            [
                label,
                str(st["n"]),
                str(st["passes"]),
                f"{st['pass_at_1']['value'] * 100:.0f}%",
                f"{st['mean_score']:.1f}",
                note,
            ]
        )
    r.line()
    r.table(None, ["agent", "episodes", "passed", "pass@1", "mean score", "failing"], rows)


def _failing_checks(r: _Report, result: BatteryResult) -> None:
    """The failing checks grouped by check: episodes, how many were expected, one replay command."""
    expected = expected_pairs(getattr(result.verdict, "expectations", None))
    groups: dict[str, list[Any]] = {}
    for e in result.episodes:
        if e.passed:
            continue
        names = {c["name"].partition("(")[0] for c in e.failed_checks()} or {f"outcome {e.outcome}"}
        for name in sorted(names):
            groups.setdefault(name, []).append(e)
    if not groups:
        return
    failing = sum(not e.passed for e in result.episodes)
    exp_all = sum(not e.passed and (e.scenario, e.agent) in expected for e in result.episodes)
    r.line()
    head = f"failing checks ({failing} episode{'s' * (failing != 1)} failed"
    head += f", {exp_all} of them expected by the table):" if expected else "):"
    r.line(head, "bold")
    width = max(len(n) for n in groups)
    rows = []
    for name, eps in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        surprising = [e for e in eps if (e.scenario, e.agent) not in expected]
        note = f"({len(eps) - len(surprising)} expected)" if expected else ""
        rows.append((name, len(eps), note, (surprising or eps)[0].replay))
    notes = max(len(row[2]) for row in rows)
    for name, count, note, replay in rows:
        r.line(f"  {name:<{width}}  {count:>3} {note:<{notes}}  replay: {replay}")


def _contracts_count(r: _Report, s: Any) -> None:
    contracts = getattr(s, "contracts", None) or []
    if contracts:
        tools = sorted({f["tool"] for f in contracts})
        r.line()
        r.line(
            f"fix in the tool: {len(contracts)} tool-contract finding{'s' * (len(contracts) != 1)} on "
            f"{', '.join(tools)} (-v or the HTML report shows them)"
        )


def _rate(d: Mapping[str, Any], theta: float, color: bool) -> Text:
    return Text(_pct(d), style=_rate_style(d["value"], theta) if color else "")


def _mix_lines(prof: Mapping[str, Any], intensities: Iterable[float]) -> list[str]:
    """The background fault mix at each intensity of the grid (the profile escalates it with lambda)."""
    levels = prof.get("levels")
    if not levels and prof.get("weights"):
        levels = [{"from": 0.0, "weights": prof["weights"]}]
    lams = sorted({float(x) for x in intensities if float(x) > 0})
    if not levels or not lams:
        return []
    parts = []
    for lam in lams:
        mix = next(lv["weights"] for lv in reversed(levels) if float(lv["from"]) <= lam)
        parts.append(f"lam={lam:g}: " + ", ".join(f"{k} {v:.0%}" for k, v in mix.items()))
    return [f"background fault mix ({prof.get('name', '?')}): " + "; ".join(parts)]


def _cells(r: _Report, cells: Sequence[Cell], k: int, theta: float, multi: bool) -> None:
    header = ["scenario", "agent", *(["eps", "lam"] if multi else []), "n", "pass@1 [95% CI]", f"pass^{k}", "score"]
    header += ["attempts", "failed checks"]
    rows: list[list[str | Text]] = []
    for c in cells:
        failed = "; ".join(f"{name} x{n}" for name, (n, _m) in sorted(c.failed_checks.items())) or "-"
        rows.append(
            [
                c.scenario,
                _label(getattr(c, "agent", None)),
                *([f"{c.epsilon:g}", f"{c.intensity:g}"] if multi else []),
                str(c.n),
                _rate(c.pass1.to_dict(), theta, r.color),
                f"{c.pass_k.value:.2f}",
                f"{c.mean_score:.1f}",
                f"{c.mean_attempts:g}",
                Text(failed, style="red" if r.color and c.failed_checks else ""),
            ]
        )
    r.table("results per scenario and agent", header, rows)


def _breakdowns(r: _Report, breakdowns: Mapping[str, Mapping[str, Mapping[str, Any]]], theta: float) -> None:
    for key, what in _BREAKDOWNS:
        groups = breakdowns.get(key)
        if not groups:
            continue
        r.line()
        rows: list[list[str | Text]] = [
            [
                name,
                str(st["n"]),
                _rate(st["pass_at_1"], theta, r.color),
                f"{st['mean_score']:.1f}",
                f"{st['mean_attempts']:g}",
            ]
            for name, st in groups.items()
        ]
        r.table(f"by {what}", [what, "n", "pass@1 [95% CI]", "score", "attempts"], rows)


def _surface(r: _Report, s: Any) -> None:
    r.line()
    r.line(
        f"reliability surface R(k, eps, lam) (rows: lambda; columns: eps; cell: pass@1 / pass^{s.k}; "
        f"theta = {s.theta:g}):"
    )
    epsilons = sorted({c.epsilon for c in s.cells})
    lambdas = sorted({c.intensity for c in s.cells})
    pts = {(p["epsilon"], p["intensity"], p["k"]): p for p in s.surface}
    rows = []
    for lam in lambdas:
        row: list[str | Text] = [f"{lam:g}"]
        for e in epsilons:
            p1 = pts.get((e, lam, 1))
            pk = pts.get((e, lam, s.k)) or p1
            cell = f"{p1['value']:.2f} / {pk['value']:.2f} (n={p1['episodes']})" if p1 and pk else "-"
            row.append(Text(cell, style=_rate_style(pk["value"], s.theta) if r.color and pk else ""))
        rows.append(row)
    r.table(None, ["lambda", *(f"eps={e:g}" for e in epsilons)], rows)
    # where R_k falls below theta along lambda at each eps, and along eps at each lambda (with several eps)
    walks = [("intensity_at_epsilon", "eps", "lambda")] + [("epsilon_at_intensity", "lambda", "eps")] * (
        len(epsilons) > 1
    )
    for key, at, along in walks:
        for fixed, broke in s.breaks[key].items():
            where = (
                f"falls below {s.theta:g} at {along}={broke:g}"
                if broke is not None
                else f"stays >= {s.theta:g} at every {along} tried"
            )
            r.line(f"  {at}={fixed}: R_{s.k} {where}")
    stats = getattr(s, "surface_stats", None) or surface_stats(s.surface, s.k)
    if stats.get("volume"):
        r.line(
            f"  volume (mean R_{s.k} over the grid) {_ival(stats['volume'])}; drop per unit of eps "
            f"{_ival(stats.get('slope_epsilon'))}; drop per unit of lambda {_ival(stats.get('slope_lambda'))} "
            "(95% intervals)"
        )
    for agent, own in (getattr(s, "surface_by_agent", None) or {}).items():
        st = own.get("stats") or {}
        if st.get("volume"):
            r.line(
                f"  {agent}: volume {_ival(st['volume'])}; drop per unit of eps {_ival(st.get('slope_epsilon'))}; "
                f"per unit of lambda {_ival(st.get('slope_lambda'))}"
            )


def _failing(r: _Report, result: BatteryResult, max_failures: int) -> None:
    expected = expected_pairs(getattr(result.verdict, "expectations", None))
    failing = [e for e in result.episodes if not e.passed]
    if not failing:
        return
    # the unexpected ones first: they are what the verdict rests on
    failing.sort(key=lambda e: (e.scenario, e.agent) in expected)
    exp_n = sum((e.scenario, e.agent) in expected for e in failing)
    r.line()
    r.line(
        f"failing episodes ({len(failing)}{f', {exp_n} expected by the table' if expected else ''}; first "
        f"{min(len(failing), max_failures)}), fix in the agent:",
        "bold",
    )
    for ep in failing[:max_failures]:
        tag = "(expected) " if (ep.scenario, ep.agent) in expected else ""
        r.line(
            f"  {tag}{ep.scenario} agent {_label(ep.agent)} rep {ep.repetition} eps {ep.epsilon:g} "
            f"lam {ep.intensity:g} seed {ep.seed}: {ep.outcome}" + (f" ({ep.error})" if ep.error else "")
        )
        if ep.edits:
            r.line(f"    task: {ep.task!r}  ({'; '.join(ep.edits)})")
        for chk in ep.failed_checks()[:4]:
            r.line(f"    x {chk['name']}: {chk['message']}", "red" if r.color else "")
        r.line(f"    replay: {ep.replay}", "dim" if r.color else "")


def _counts(by_fault: Mapping[str, int]) -> str:
    return ", ".join(f"{f} x{n}" if n > 1 else f for f, n in sorted(by_fault.items())) or "-"


def _tools(r: _Report, s: Any) -> None:
    """The readiness table (one row per tool) and the tool-contract findings, apart from the agents' failures."""
    # a row with nothing to say (no fault survived or failed, no finding) is left out
    rows = readiness_to_show(getattr(s, "readiness", None) or [])
    if rows:
        multi = len({x.get("agent") for x in rows}) > 1
        r.line()
        r.table(
            "readiness per tool" + (" and agent" if multi else ""),
            ["tool", *(["agent"] if multi else []), "faults survived", "faults failed", "contract findings"],
            [
                [
                    x["tool"],
                    *([str(x.get("agent"))] if multi else []),
                    _counts(x["survived"]),
                    _counts(x["failed"]),
                    ", ".join(x["findings"]) or "-",
                ]
                for x in rows
            ],
        )
    contracts = getattr(s, "contracts", None) or []
    if not contracts:
        return
    r.line()
    r.line(f"fix in the tool: {len(contracts)} tool-contract finding(s)", "bold")
    for f in contracts:
        r.line(f"  {f['tool']}: {f['kind']}", "yellow" if r.color else "")
        where = f" (episode {f['episode']})" if f.get("episode") else f" ({f.get('origin')})" if f.get("origin") else ""
        r.line(f"    evidence{where}: {f['evidence']}")
        r.line(f"    why: {f['why']}")
        r.line(f"    fix: {f['fix']}", "dim" if r.color else "")


def _metrics(r: _Report, summary: Mapping[str, Any] | None) -> None:
    lines = metrics_lines(summary)
    if lines:
        r.line()
    for ln in lines:
        r.line(ln)


def _judge(r: _Report, result: BatteryResult, max_failures: int) -> None:
    """The judge's totals, then the episodes where it disagrees with the deterministic answer checks or could
    not judge, each with both verdicts."""
    judged = [e for e in result.episodes if getattr(e, "judge", None)]
    if not judged:
        return
    from chaoskit.judge import judge_line, judge_rows, summary_of

    r.line()
    totals = result.summary.overall.get("judge") or summary_of(e.judge for e in judged)
    r.line(judge_line(totals), "bold")
    apart = [e for e in judged if e.judge and (e.judge.get("agree") is False or e.judge["verdict"] == "cannot_judge")]
    for e in apart[:max_failures]:
        r.line(f"  {e.scenario} agent {_label(e.agent)} rep {e.repetition} eps {e.epsilon:g} lam {e.intensity:g}:")
        for row in judge_rows(e.judge or {}, 5):
            r.line("  " + row)


def _expectations(r: _Report, exp: Mapping[str, Any]) -> None:
    unexpected = exp.get("unexpected") or []
    r.line()
    r.line(
        f"expectations ({exp.get('file', '?')}): {exp.get('met', 0)} met, {len(unexpected)} unexpected, "
        f"{exp.get('not_run', 0)} not run",
        "bold",
    )
    if unexpected:
        rows = [
            [
                u.get("scenario", "?"),
                _label(u.get("agent")),
                str(u.get("expected", "?")),
                Text(str(u.get("actual", "?")), style="red" if r.color else ""),
                ", ".join(u.get("checks") or []) or "-",
                u.get("why") or u.get("detail") or "-",
            ]
            for u in unexpected
        ]
        r.table("unexpected outcomes", ["scenario", "agent", "expected", "actual", "checks", "why"], rows)


def _verdict(r: _Report, result: BatteryResult) -> None:
    v = result.verdict
    exp = getattr(v, "expectations", None)
    why = getattr(v, "why", "")
    r.line()
    if v.ok:
        # "PASS on the absolute rules only: ..." reads as one phrase; any other reason follows a colon
        sep = " " if why.startswith("on ") else ": "
        r.line("verdict: PASS" + (sep + why if why else ""), "bold green" if r.color else "")
        return
    r.line("verdict: FAIL", "bold red" if r.color else "")
    shown = 0
    for reason in v.reasons:
        if exp and reason.startswith("unexpected: "):
            shown += 1
            continue  # each is a row of the table above
        r.line(f"  - {reason}")
    if shown:
        r.line(f"  - {shown} unexpected outcome(s): see the table above")
    writes = v.duplicate_writes
    if exp:
        # the table alone decides: a repeated write it expected is no reason for the verdict, so not listed here
        expected = expected_pairs(exp)
        failed = (e.replay for e in result.episodes if not e.passed and (e.scenario, e.agent) in expected)
        writes = split_expected_writes(writes, failed)[0]
    for d in writes[:5]:
        r.line(f"    {d}")
    for d in v.regressions[:10]:
        r.line(f"    {d}")


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
    out += [f"note: {note}" for note in metrics_notes(agents)]
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
