"""The HTML report: every section on a real run, self-contained, escaped, graceful on old results, SVG geometry,
and ``chaoskit report RESULTS --html OUT``."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli

from chaoskit.cli import _main
from chaoskit.report import render_html, write_html
from chaoskit.report._html import MAX_EPISODES
from chaoskit.report._report_data import pass_k_curves, surface_points
from chaoskit.report._svg import Bar, bars, heatmap, histograms, ink_on, linear, lines, stacked_bars, timeline, viridis
from chaoskit.runner._battery import run_battery

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "examples" / "scenarios"
AGENTS = ["examples.plain.agents:careful", "examples.plain.agents:naive"]
NS = "{http://www.w3.org/2000/svg}"
SECTIONS = ("verdict", "results", "surface", "pass-k", "scores", "tools", "breakdowns", "failures", "episodes")
EVIL = "<script>alert('x')</script><img src=x onerror=alert(1)>&amp;"


@pytest.fixture(scope="module")
def real() -> Iterator[dict[str, Any]]:
    """A real battery: the plain examples' careful and naive agents, 2 repetitions, a 2 x 2 (eps, lambda) grid."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        result = run_battery([BATTERY], agents=AGENTS, repeat=2, intensities=[0, 0.2], perturbations=[0, 0.5], seed=1)
    yield json.loads(json.dumps(result.to_dict(), default=str))


@pytest.fixture(scope="module")
def page(real: dict[str, Any]) -> str:
    return render_html(real)


def svgs(html: str, kind: str) -> list[ET.Element]:
    """Every chart of one kind on the page, parsed as XML (so each must be well-formed)."""
    found = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="chart ' + kind + r'".*?</svg>', html, re.S)
    return [ET.fromstring(s) for s in found]


def rects(el: ET.Element, cls: str) -> list[ET.Element]:
    return [r for r in el.iter() if r.get("class") == cls]


def f(el: ET.Element, attr: str) -> float:
    return float(el.get(attr, "nan"))


# --- the page on a real run ---------------------------------------------------------------------------------------


def test_every_section_is_there_on_a_real_run(real: dict[str, Any], page: str) -> None:
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in page, sid
    assert "verdict: FAIL" in page  # naive repeats an irreversible write
    # the matrix: one column per agent label, one row per scenario, with passes/runs in each cell
    matrix = page.split('<table class="matrix">')[1].split("</table>")[0]
    assert '<th scope="col">careful</th>' in matrix and '<th scope="col">naive</th>' in matrix
    for scenario in {e["scenario"] for e in real["episodes"]}:
        assert f'<th scope="row">{scenario}</th>' in matrix
    assert re.search(r"\u2713 8/8 \(100%\)", matrix) and re.search(r"\u2717 0/8 \(0%\)", matrix)
    # the surface: all agents at k=1 and k=2, and one per agent, each a 2 x 2 grid of cells
    maps = svgs(page, "heatmap")
    assert len(maps) == 4
    assert all(len(rects(m, "cell")) == 4 for m in maps)
    assert len(svgs(page, "lines")) == len(svgs(page, "histograms")) == len(svgs(page, "stacked")) == 1
    assert len(svgs(page, "bars")) == 4  # by agent, domain, fault and tag
    # every failing check, with its message and a replay command (the next test checks the rows exactly)
    failures = page.split('<section id="failures">')[1].split("</section>")[0]
    assert "no_duplicate_writes" in failures and "idempotency key" in failures
    assert 'replay: <code class="replay">chaoskit run ' in failures


def test_each_failing_check_is_listed_once_per_scenario_and_agent(real: dict[str, Any], page: str) -> None:
    expected = {
        (e["scenario"], e["agent"].rpartition(":")[2], c["name"])
        for e in real["episodes"]
        for c in e["checks"]
        if not c["passed"] and c.get("severity", "fail") == "fail"
    }
    failures = page.split('<section id="failures">')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td><code>(.*?)</code></td>", failures)
    assert len(rows) == len(set(rows)) == len(expected)
    assert {(s, a, c.replace("&#x27;", "'")) for s, a, c in rows} == expected


def test_episode_timelines_mark_the_injected_faults(real: dict[str, Any], page: str) -> None:
    episodes = page.split('<section id="episodes">')[1]
    shown = episodes.count('<details class="episode')
    assert shown == min(MAX_EPISODES, len(real["episodes"]))
    if shown < len(real["episodes"]):
        assert f"{len(real['episodes']) - shown} more episodes not listed" in episodes
    # failing episodes come first
    classes = re.findall(r'<details class="episode (pass|fail)"', episodes)
    assert classes == sorted(classes, key=lambda c: c == "pass")
    lanes = svgs(page, "timeline")
    assert lanes, "no episode timeline"
    faulted = sum(len(rects(t, "fault")) for t in lanes)
    marked = sum(1 for t in lanes for r in rects(t, "attempt") if r.get("data-fault"))
    assert faulted == marked > 0


def test_the_page_is_self_contained(page: str) -> None:
    # nothing to fetch: no src attribute at all, links only to anchors on the page, no CSS import or url()
    assert not re.search(r"\ssrc\s*=", page, re.I)
    hrefs = re.findall(r'\shref\s*=\s*"([^"]*)"', page, re.I)
    assert hrefs and all(h.startswith("#") for h in hrefs), [h for h in hrefs if not h.startswith("#")]
    assert "@import" not in page and "url(" not in page
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\")", page)
    # the browser is told to refuse any load; the inline style and script are allowed by their hashes
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert csp and "default-src &#x27;none&#x27;" in csp.group(1)
    for tag, directive in (("style", "style-src"), ("script", "script-src")):
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S)
        assert len(bodies) == 1, tag
        digest = base64.b64encode(hashlib.sha256(bodies[0].encode()).digest()).decode()
        assert f"{directive} &#x27;sha256-{digest}&#x27;" in csp.group(1)


def test_every_string_from_the_results_is_escaped(real: dict[str, Any]) -> None:
    bad = copy.deepcopy(real)
    ep = next(e for e in bad["episodes"] if not e["passed"])
    ep.update(output=EVIL, task=EVIL, error=EVIL, scenario=EVIL, agent="evil:" + "x" * 3, replay=EVIL, domain=EVIL)
    ep["checks"].append({"name": EVIL, "passed": False, "severity": "fail", "message": EVIL, "evidence": []})
    ep["attempts"]["timeline"] = [
        {"tool": EVIL, "attempt": 1, "t_ms": 0.0, "ms": 1.0, "outcome": EVIL, "fault": EVIL, "executed": False}
    ]
    ep["attempts"]["by_tool"] = {EVIL: 1}
    bad["verdict"]["reasons"].append(EVIL)
    bad["config"]["paths"] = [EVIL]
    bad["summary"]["breakdowns"]["tag"][EVIL] = bad["summary"]["breakdowns"]["tag"].popitem()[1]
    html = render_html(bad)
    assert html.count("<script") == 1  # the page's own
    assert "<img" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&amp;amp;" in html  # an entity in the input is shown as typed, not decoded
    for chart in ("timeline", "bars", "stacked"):
        assert svgs(html, chart)  # still well-formed XML


def test_old_results_without_the_new_keys_still_render(real: dict[str, Any]) -> None:
    old = copy.deepcopy(real)
    for key in ("breakdowns", "matrix", "surface_stats", "surface", "cells"):
        old["summary"].pop(key, None)
    old["verdict"].pop("expectations", None)
    for e in old["episodes"]:
        for key in ("tags", "domain", "faults"):
            e.pop(key, None)
        e["attempts"].pop("timeline", None)
    html = render_html(old)
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html
    # the matrix, the agent breakdown and the surface are derived from the episodes
    assert '<th scope="col">careful</th>' in html
    assert len(svgs(html, "heatmap")) == 4
    assert '<div class="breakdown" id="breakdown-agent"><figure>' in html
    assert "No breakdown by domain" in html and "No breakdown by fault type" in html
    assert "No attempt timeline in these results" in html
    assert "these results have no attempt timelines" in html
    # the derived surface is the one the runner wrote
    for j in (1, 2):
        given, derived = surface_points(real, j), surface_points(old, j)
        assert given.keys() == derived.keys()
        for pt in given:
            assert derived[pt]["value"] == pytest.approx(given[pt]["value"], abs=1e-6)


@pytest.mark.parametrize("results", [{}, {"verdict": {"ok": True}, "episodes": []}, {"episodes": [{}], "summary": 3}])
def test_empty_or_odd_results_render_without_error(results: dict[str, Any]) -> None:
    html = render_html(results)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert '<section id="episodes">' in html


def test_expected_outcomes_are_shown_with_why(real: dict[str, Any]) -> None:
    data = copy.deepcopy(real)
    data["verdict"]["expectations"] = {
        "file": "expected.yaml",
        "met": 7,
        "not_run": 1,
        "unexpected": [
            {
                "scenario": "refund-outage-reported",
                "agent": "naive",
                "expected": "fail",
                "actual": "pass",
                "checks": ["no_bluff"],
                "why": "bluffs about the refund",
            }
        ],
    }
    html = render_html(data)
    assert "7 met, 1 unexpected, 1 not run" in html
    assert "<td>no_bluff</td><td>bluffs about the refund</td>" in html


def test_pass_k_curve_at_k_is_the_summary_pass_hat_k(real: dict[str, Any]) -> None:
    curves = pass_k_curves(real)
    assert set(curves) == {"all agents", "careful", "naive"}
    assert [k for k, _ in curves["all agents"]] == [1, 2]
    assert curves["all agents"][0][1] == pytest.approx(real["summary"]["overall"]["pass_at_1"]["value"], abs=1e-6)
    assert curves["all agents"][1][1] == pytest.approx(real["summary"]["overall"]["pass_hat_k"]["value"], abs=1e-3)
    for agent in ("careful", "naive"):
        (k1, p1), (k2, p2) = curves[agent]
        # every cell has 2 runs, so the mean over cells of pass@1 is the agent's pass@1; pass^2 cannot be higher
        assert p1 == pytest.approx(real["summary"]["breakdowns"]["agent"][agent]["pass_at_1"]["value"], abs=1e-6)
        assert (k1, k2) == (1, 2) and p2 <= p1


def test_the_episode_cap_takes_turns_over_scenario_and_agent(real: dict[str, Any]) -> None:
    html = render_html(real, max_episodes=5)
    assert html.count('<details class="episode fail"') == 5
    n_fail = sum(not e["passed"] for e in real["episodes"])
    assert f"{len(real['episodes']) - 5} more episodes not listed ({n_fail - 5} of them failing)" in html
    heads = re.findall(r'<details class="episode fail"[^>]*><summary><span[^>]*>FAIL</span> (.*?) \u00b7 rep', html)
    assert len(set(heads)) == 5  # five different (scenario, agent) pairs, not five repetitions of one


# --- the SVG builders: values in, geometry out ---------------------------------------------------------------------


def test_scales_and_colours() -> None:
    assert linear(5, 0, 10, 100, 200) == 150
    assert linear(1, 1, 1, 7, 9) == 7
    assert (viridis(0), viridis(1), viridis(-3), viridis(4)) == ("#440154", "#fde725", "#440154", "#fde725")
    assert ink_on("#440154") == "#ffffff" and ink_on("#fde725") == "#000000"


def test_heatmap_places_eps_left_to_right_and_lambda_bottom_to_top() -> None:
    values = {(0.0, 0.0): (1.0, "a"), (0.5, 0.0): (0.5, "b"), (0.0, 0.3): (0.0, "c")}
    el = ET.fromstring(heatmap([0.5, 0.0], [0.3, 0.0], values, title="t"))
    cells = {(g.get("data-x"), g.get("data-y")): g for g in rects(el, "cell")}
    assert len(cells) == 4
    rect = {k: g.find(f"{NS}rect") for k, g in cells.items()}
    assert f(rect[("0.5", "0")], "x") > f(rect[("0", "0")], "x")
    assert f(rect[("0", "0.3")], "y") < f(rect[("0", "0")], "y")  # larger lambda is higher up
    assert rect[("0", "0")].get("fill") == "#fde725" and rect[("0", "0.3")].get("fill") == "#440154"
    assert cells[("0.5", "0.3")].get("data-value") == "n/a" and rect[("0.5", "0.3")].get("fill") == "#dddddd"
    assert cells[("0.5", "0")].find(f"{NS}text").text == "0.50"
    assert f(el, "width") > 0 and f(el, "height") > 0


def test_a_one_column_heatmap_is_wide_enough_for_its_axis_label() -> None:
    el = ET.fromstring(heatmap([0.0], [0.0, 0.3], {(0.0, 0.0): (1.0, "a")}, title="t"))
    label = next(t for t in el.iter(f"{NS}text") if (t.text or "").endswith("(task perturbation)"))
    # centred on its x, the label's right end (about 7.2 px a character) stays inside the chart
    assert f(label, "x") + len(label.text or "") * 7.2 / 2 <= f(el, "width")


def test_a_ten_digit_seed_is_written_in_full_in_the_header(real: dict[str, Any]) -> None:
    results = copy.deepcopy(real)
    results["config"]["seed"] = 1748376397
    header = render_html(results).split("</header>", 1)[0]
    assert "seed 1748376397" in header and "e+09" not in header


def test_bars_are_proportional_with_whiskers_at_the_interval() -> None:
    el = ET.fromstring(
        bars([Bar("a", 1.0, "all"), Bar("b", 0.5, "half", 0.25, 0.75), Bar("c", 3.0, "over")], title="t", bar_w=200)
    )
    a, b, c = rects(el, "bar")
    assert f(a, "width") == 200 and f(b, "width") == 100 and f(c, "width") == 200
    assert f(a, "x") == f(b, "x")
    (whisker,) = rects(el, "whisker")
    left = f(b, "x")
    assert whisker.get("d", "").startswith(f"M{left + 50:g} ") and f"H{left + 150:g}" in whisker.get("d", "")


def test_stacked_bars_share_one_scale() -> None:
    el = ET.fromstring(stacked_bars([("t1", [30, 10]), ("t2", [0, 20])], ["clean", "faulted"], title="t", bar_w=400))
    segs = rects(el, "segment")
    assert [(s.get("data-name"), f(s, "width")) for s in segs] == [("clean", 300), ("faulted", 100), ("faulted", 200)]
    assert f(segs[1], "x") == f(segs[0], "x") + 300


def test_lines_map_k_and_rate_onto_the_plot() -> None:
    el = ET.fromstring(lines({"a": [(1, 1.0), (3, 0.0)], "b": [(2, 0.5)]}, title="t", plot_w=300, plot_h=100))
    pts = rects(el, "point")
    xs, ys = [f(p, "cx") for p in pts], [f(p, "cy") for p in pts]
    assert xs[1] - xs[0] == 300 and xs[2] == (xs[0] + xs[1]) / 2
    assert ys[1] - ys[0] == 100 and ys[2] == (ys[0] + ys[1]) / 2
    assert [s.get("data-name") for s in rects(el, "series")] == ["a", "b"]
    one = ET.fromstring(lines({"a": [(1, 0.5)]}, title="t", plot_w=300))
    assert len(rects(one, "point")) == 1  # a single k is drawn, centred


def test_histogram_bars_are_counts_on_a_shared_scale() -> None:
    el = ET.fromstring(histograms({"a": [4, 0, 2], "b": [1, 0, 0]}, [0, 10, 20, 30], title="t", row_h=60))
    heights = [f(r, "height") for r in rects(el, "bin")]
    assert heights == [40, 0, 20, 10, 0, 0]
    assert [t.text for t in rects(el, "count")] == ["4", "2", "1"]  # empty bins carry no number
    assert [r.get("data-count") for r in rects(el, "bin")] == ["4", "0", "2", "1", "0", "0"]


def test_timeline_rows_times_and_fault_marks() -> None:
    attempts = [
        {
            "tool": "search",
            "attempt": 1,
            "t_ms": 0.0,
            "ms": 50.0,
            "outcome": "error",
            "fault": "timeout",
            "executed": True,
        },
        {"tool": "book", "attempt": 1, "t_ms": 50.0, "ms": 0.0, "outcome": "ok", "fault": None, "executed": True},
        {
            "tool": "search",
            "attempt": 2,
            "t_ms": 60.0,
            "ms": 40.0,
            "outcome": "ok",
            "fault": "partial",
            "executed": False,
        },
    ]
    el = ET.fromstring(timeline(attempts, title="t", plot_w=400))
    a, b, c = rects(el, "attempt")
    assert f(a, "width") == 200 and f(c, "x") - f(a, "x") == 240 and f(b, "width") == 2  # at least 2 px
    assert f(a, "y") == f(c, "y") < f(b, "y")  # one row per tool, in order of first call
    assert (a.get("fill"), b.get("fill")) == ("#D55E00", "#0072B2")
    assert c.get("fill") == "#ffffff" and c.get("stroke-dasharray")  # the tool did not run: hollow
    assert [m.find(f"{NS}title").text for m in rects(el, "fault")] == [
        "fault injected: timeout",
        "fault injected: partial",
    ]
    assert ET.fromstring(timeline([], title="empty")) is not None


# --- chaoskit report ---------------------------------------------------------------------------------------------


@pytest.fixture
def report_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """``chaoskit report``, registered whether or not the command table lists it yet."""
    if "chaoskit.cli._report" not in _main._COMMAND_MODULES:
        monkeypatch.setattr(_main, "_COMMAND_MODULES", (*_main._COMMAND_MODULES, "chaoskit.cli._report"))


@pytest.mark.usefixtures("report_cli")
def test_report_command_writes_the_page(real: dict[str, Any], tmp_path: Path) -> None:
    src = tmp_path / "r.json"
    src.write_text(json.dumps(real), encoding="utf-8")
    out = tmp_path / "deep" / "out.html"
    r = run_cli(["report", str(src), "--html", str(out)])
    assert r.code == 0, r.err
    assert r.out.strip() == f"HTML report: {out}"
    assert out.read_text(encoding="utf-8") == render_html(real)


@pytest.mark.usefixtures("report_cli")
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "file not found"),
        ("{not json", "cannot read the results"),
        ('{"kind": "x"}', "not a chaoskit run result"),
    ],
)
def test_report_command_refuses_unreadable_input(tmp_path: Path, content: str | None, says: str) -> None:
    src = tmp_path / "r.json"
    if content is not None:
        src.write_text(content, encoding="utf-8")
    r = run_cli(["report", str(src), "--html", str(tmp_path / "o.html")])
    assert r.code == 2
    assert_clear(r.err, names=[str(src), says])
    assert not (tmp_path / "o.html").exists()


@pytest.mark.usefixtures("report_cli")
def test_report_command_says_when_it_cannot_write(real: dict[str, Any], tmp_path: Path) -> None:
    src = tmp_path / "r.json"
    src.write_text(json.dumps(real), encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_cli(["report", str(src), "--html", str(blocker / "out.html")])
    assert r.code == 2
    assert_clear(r.err, names=[str(blocker / "out.html"), "cannot write the HTML report"])
    with pytest.raises(Exception, match="cannot write the HTML report"):
        write_html(real, blocker / "x.html")


def test_each_episode_shows_its_calls_as_the_answer_checks_grade_them(real: dict[str, Any], page: str) -> None:
    # one home: the runner's results carry the per-call ground truth the answer checks read, and the page shows it
    calls = [c for e in real["episodes"] for c in e["attempts"]["calls"]]
    assert calls and {"tool", "args", "status", "faults", "attempts"} <= set(calls[0])
    assert {c["status"] for c in calls} <= {"ok", "failed", "faulted", "written", "confirmed", "cancelled"}
    assert any(c["status"] != "ok" for c in calls), "the battery's faults left no call failed or faulted"
    episodes = page.split('<section id="episodes">')[1]
    assert episodes.count('<details class="episode') == len(real["episodes"])  # all shown at this size
    assert episodes.count('<table class="calls">') == sum(bool(e["attempts"]["calls"]) for e in real["episodes"])
    faulted = next(c for c in calls if c["status"] != "ok")
    assert f"<td>{faulted['status']}</td>" in episodes
