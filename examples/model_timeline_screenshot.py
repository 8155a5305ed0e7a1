"""Screenshot the HTML report's timeline of a model fault with headless Chromium: ``docs/img/model-fault-timeline.png``.

    python -m examples.model_timeline_screenshot [--out PATH]

Runs the travel scenario ``travel-model-rate-limited`` (the provider answers the agent's second model call with
HTTP 429, Retry-After 0.3 s) for the ``careful`` and ``naive`` agents, renders the HTML report
(:func:`chaoskit.report.render_html`), keeps its head and the two episodes (opened), and has Chromium
(``--headless --no-sandbox``, a fresh profile, no network use) screenshot that page at 1400 x 900.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from chaoskit.report import render_html
from chaoskit.runner._battery import run_battery

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "travel" / "scenarios" / "model-rate-limited.yaml"
AGENTS = ["examples.travel.agents:careful", "examples.travel.agents:naive"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("headless Chromium is needed: apt-get install chromium")


def page() -> str:
    """The report's head and, per episode (careful first), its summary line, its timeline (model calls and tool
    attempts) with the key, and its table of model calls, exactly as the report renders them."""
    results = json.loads(json.dumps(run_battery([SCENARIO], agents=AGENTS).to_dict(), default=str))
    html = render_html(results)
    head = html.split("<body", 1)[0]
    blocks = re.findall(r'<details class="episode.*?</details>', html, re.S)
    blocks.sort(key=lambda b: "naive" in b)
    parts = []
    for block in blocks:
        summary = re.search(r"<summary.*?</summary>", block, re.S)
        shown = re.search(r'<figure class="timeline-figure">.*?<table class="model-calls">.*?</table>', block, re.S)
        if summary is None or shown is None:
            raise SystemExit("the report has no model-call timeline for an episode")
        parts.append(f'<details class="episode" open>{summary.group(0)}{shown.group(0)}</details>')
    return f'{head}<body><main><section id="episodes">{"".join(parts)}</section></main></body></html>'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "model-fault-timeline.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chaoskit-shot-") as tmp:
        html = Path(tmp) / "report.html"
        html.write_text(page(), encoding="utf-8")
        argv = [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--screenshot={args.out.resolve()}",
            "--window-size=1400,900",
            html.resolve().as_uri(),
        ]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        run = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if run.returncode != 0 or not args.out.exists():
            raise SystemExit(f"chromium failed ({run.returncode}): {run.stderr[-2000:]}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
