"""``chaoskit report RESULTS.json --html OUT.html``: the self-contained HTML page of a results file."""

from __future__ import annotations

import argparse
from typing import Any

from chaoskit.report._html import write_html
from chaoskit.report._json import load_results

_EPILOG = """\
The page is one file with its styles, script and SVG charts inline: it loads nothing from the network and
opens offline in any browser. It shows the verdict, results per scenario and agent, the reliability surface,
pass^k against k, scores per agent, attempts per tool, breakdowns by domain and fault, every failing check
with a replay command, and the episodes (failing first) with the timeline of their tool attempts.
docs/report.md describes each plot.

Exit status: 0 written, 2 unreadable input (missing file, not JSON, not a chaoskit run result) or an
output path that cannot be written.
"""


def add_parser(sub: Any) -> None:
    """Register ``chaoskit report`` on the ``sub`` subparsers."""
    r = sub.add_parser(
        "report",
        help="render a --json results file as a self-contained HTML page",
        description="Render a results file written by chaoskit run --json.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("results", metavar="RESULTS", help="the results file (chaoskit run --json)")
    r.add_argument("--html", metavar="OUT", required=True, help="write the HTML page to OUT")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the HTML page of ``args.results`` to ``args.html`` and say where; 2 (via ChaoskitError) on bad input."""
    write_html(load_results(args.results), args.html)
    print(f"HTML report: {args.html}")
    return 0
