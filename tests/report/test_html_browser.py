"""The HTML report in a real browser: headless Chromium opens the page from a file:// URL, offline, and the
verdict, sections, charts, heatmap cells and a timeline render with non-zero size, the inline CSS and script
run under the page's Content-Security-Policy, injected markup stays text, and nothing reaches the console.

On first use the test installs Debian's ``chromium`` (``apt-get install -y chromium``) when it runs as root and
apt is there; it is skipped, saying why, only when no browser can be had. Nothing is cached in the repository:
the browser profile lives in pytest's temporary folder.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit.report import write_html
from chaoskit.runner._battery import run_battery

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "examples" / "scenarios"
AGENTS = ["examples.plain.agents:careful", "examples.plain.agents:naive"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
EVIL = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'

# Runs after the page's own script: opens the first failing episode, measures what rendered, and writes it
# as JSON into the DOM, which --dump-dom prints.
PROBE = """
(function () {
  var out = {errors: [], charts: [], cells: 0, sections: [], attempts: 0};
  window.addEventListener("error", function (e) { out.errors.push(String(e.message)); });
  document.addEventListener("securitypolicyviolation", function (e) { out.errors.push("csp " + e.violatedDirective); });
  var first = document.querySelector("details.episode.fail");
  if (first) { first.open = true; }
  function size(el) { var r = el.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; }
  document.querySelectorAll("svg.chart").forEach(function (s) {
    var closed = s.closest("details:not([open])");
    if (!closed) { out.charts.push({kind: s.getAttribute("class"), size: size(s)}); }
  });
  document.querySelectorAll("svg.heatmap g.cell rect").forEach(function (r) {
    var wh = size(r); if (wh[0] > 0 && wh[1] > 0) { out.cells += 1; }
  });
  if (first) {
    first.querySelectorAll("rect.attempt").forEach(function (r) { if (size(r)[0] > 0) { out.attempts += 1; } });
  }
  document.querySelectorAll("main > section > h2").forEach(function (h) { out.sections.push(h.textContent); });
  var v = document.getElementById("verdict-text");
  out.verdict = v ? v.textContent : null;
  out.verdictBorder = v ? getComputedStyle(v).borderTopStyle : null;
  var bar = document.querySelector(".toolbar");
  out.toolbarShown = bar ? !bar.hidden : false;
  out.title = document.title;
  out.images = document.images.length;
  var pre = document.createElement("pre");
  pre.id = "chaoskit-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def _find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _install_chromium() -> str:
    """Install Debian's chromium when we may; an empty string when installed, else why not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not running as root, so apt-get install chromium cannot run"
    if shutil.which("apt-get") is None:
        return "apt-get is not available on this machine"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    attempts = (["apt-get", "install", "-y", "-q", "chromium"],)
    for cmd in (*attempts, ["apt-get", "update", "-q"], *attempts):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
        if done.returncode == 0 and cmd[1] == "install":
            return ""
    return f"apt-get install -y chromium failed: {done.stderr.strip()[-300:]}"


@pytest.fixture(scope="module")
def browser() -> str:
    path = _find_browser()
    if path is None:
        why = _install_chromium()
        path = _find_browser()
        if path is None:
            pytest.skip(f"no Chromium to run the HTML report in: {why or 'installed, but not found on PATH'}")
    return path


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    """A real battery (careful and naive on the plain examples, a 2 x 2 grid), with hostile agent output."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        result = run_battery([BATTERY], agents=AGENTS, repeat=2, intensities=[0, 0.2], perturbations=[0, 0.5], seed=3)
    data = json.loads(json.dumps(result.to_dict(), default=str))
    bad = copy.deepcopy(data)
    first_failing = next(e for e in bad["episodes"] if not e["passed"])
    first_failing["output"] = EVIL
    first_failing["task"] = EVIL
    yield bad


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _render_in_browser(browser: str, html: Path, profile: Path) -> tuple[dict[str, Any], list[str]]:
    """Open ``html`` with the probe added (its hash allowed by the page's policy); the probe's findings and the
    console lines Chromium logged."""
    page = html.read_text(encoding="utf-8")
    page = page.replace("script-src &#x27;", f"script-src &#x27;{_sha(PROBE)}&#x27; &#x27;", 1)
    page = page.replace("</body>", f"<script>{PROBE}</script></body>", 1)
    probed = html.with_name("probed.html")
    probed.write_text(page, encoding="utf-8")
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        "--window-size=1280,2000",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        "--dump-dom",
        probed.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'<pre id="chaoskit-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the page's probe did not run (exit {done.returncode}):\n{done.stderr[-2000:]}"
    raw = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    console = [ln for ln in done.stderr.splitlines() if ":CONSOLE" in ln]
    return json.loads(raw), console


def test_the_report_renders_in_chromium(browser: str, results: dict[str, Any], tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    write_html(results, html)
    probe, console = _render_in_browser(browser, html, tmp_path / "profile")
    assert console == [], console  # no error, no CSP violation, no log at all
    assert probe["errors"] == []
    assert probe["verdict"] and "verdict: FAIL" in probe["verdict"]
    assert probe["verdictBorder"] == "solid"  # the inline CSS was allowed by its hash and applied
    assert probe["toolbarShown"] is True  # the inline script was allowed by its hash and ran
    assert probe["sections"] == [
        "Verdict",
        "Results per scenario and agent",
        "Reliability surface R(k, \u03b5, \u03bb)",
        "pass^k against k",
        "Score distribution per agent",
        "Attempts per tool",
        "Breakdowns",
        "Failing checks",
        "Tools: readiness and contract findings (fix in the tool)",
        "Episodes",
    ]
    kinds = [c["kind"] for c in probe["charts"]]
    for kind in ("heatmap", "lines", "histograms", "stacked", "bars", "timeline"):
        assert f"chart {kind}" in kinds, kinds
    assert all(c["size"][0] > 0 and c["size"][1] > 0 for c in probe["charts"]), probe["charts"]
    assert probe["cells"] == 4 * 4  # four heatmaps (all agents at k=1 and k=2, one per agent) of 2 x 2
    assert probe["attempts"] > 0  # the opened episode's timeline drew its attempts
    # the hostile output stayed text: no script ran, no image element was made
    assert probe["title"] == "chaoskit report"
    assert probe["images"] == 0
