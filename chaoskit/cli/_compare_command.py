"""``chaoskit compare OLD.json NEW.json``: what changed between two runs, and whether NEW regressed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.report._compare import compare_results, render_comparison
from chaoskit.report._json import load_results

_EPILOG = """\
Rows are (scenario, agent), pooled over every repetition and grid point of a file; an agent that differs
between the files (an A/B of two agent versions) is paired when a scenario has one agent on each side.

A regression (exit 1) is any of:
  - a pass-rate drop that is significant: two-sided pooled two-proportion z-test, p < --alpha
    (per scenario and agent, and per agent over every shared scenario);
  - a newly failing check: a check failing in NEW that never failed in OLD for that scenario and agent
    (warnings do not count);
  - mean attempts per episode above OLD's times (1 + --attempt-tolerance), over the passing episodes
    when both files have some (else over all), and not when NEW's pass rate is higher.
Rows only one file has are listed, not compared.

Per agent pair, the episode scores and each trajectory metric both files recorded (--metrics runs) are
shown as mean ± SD [95% t interval] n, with Welch's t-test and Cohen's d, NEW against OLD; they inform and
are no regression rule.
When episodes carry model or architecture labels (a battery file's agent mappings, or the agent's own), the
same figures are given per model and per architecture; they inform too.

Exit status: 0 no regression, 1 regression, 2 unreadable input (missing file, not JSON, not a chaoskit
run result, or no scenario in common).
"""


def add_parser(sub: Any) -> None:
    """Register ``chaoskit compare`` on the ``sub`` subparsers."""
    c = sub.add_parser(
        "compare",
        help="compare two --json results: pass-rate changes, score and attempt deltas, newly failing checks",
        description="Compare two results files written by chaoskit run --json: OLD (the reference, e.g. the "
        "last green run) and NEW (the candidate).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("old", metavar="OLD", help="the reference results file (chaoskit run --json)")
    c.add_argument("new", metavar="NEW", help="the candidate results file (chaoskit run --json)")
    c.add_argument("--json", metavar="OUT", help="also write the comparison as JSON to OUT")
    c.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the pass-rate test (default 0.05)",
    )
    c.add_argument(
        "--attempt-tolerance",
        type=float,
        default=0.1,
        metavar="F",
        help="allowed rise of mean attempts per episode, as a fraction (default 0.1: 10%%)",
    )
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when NEW has no regression against OLD, 1 when it has one, 2 on unreadable input."""
    old, new = load_results(args.old), load_results(args.new)
    comparison = compare_results(
        old, new, alpha=args.alpha, attempt_tolerance=args.attempt_tolerance, sources=(args.old, args.new)
    )
    if args.json:
        out = Path(args.json)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(comparison.to_dict(), indent=1), encoding="utf-8")
        except OSError as exc:
            raise ChaoskitError(f"{out}: cannot write the comparison: {exc.strerror or exc}") from None
    print(render_comparison(comparison), end="")
    return 0 if comparison.ok else 1
