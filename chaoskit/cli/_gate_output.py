"""What ``chaoskit run`` and ``chaoskit merge`` share: the CI gate and output options, and writing the verdict."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.report._html import write_html
from chaoskit.report._json import write_json
from chaoskit.report._junit import write_junit
from chaoskit.report._text import render_text
from chaoskit.runner._gate import check_gate, load_baseline, make_baseline
from chaoskit.runner._results import BatteryResult

__all__ = ["EXIT_GATE", "EXIT_OK", "EXIT_USAGE", "add_gate_options", "baseline_from", "finish", "write_html_report"]

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2


def add_gate_options(p: argparse.ArgumentParser) -> None:
    """The ``CI gate`` and ``output`` option groups."""
    g = p.add_argument_group("CI gate")
    g.add_argument(
        "--fail-under", type=float, metavar="SCORE", help="fail when the mean episode score (0-100) is below SCORE"
    )
    g.add_argument(
        "--baseline",
        metavar="FILE",
        help="fail when a scenario's mean attempt count rises against this baseline (or results) file",
    )
    g.add_argument(
        "--update-baseline", action="store_true", help="write the --baseline file from this run, when the run is green"
    )
    g.add_argument(
        "--attempt-tolerance",
        type=float,
        default=None,
        metavar="FRACTION",
        help="allowed relative rise of attempts against the baseline (default 0)",
    )
    g.add_argument(
        "--expect",
        metavar="FILE",
        help="an expected-outcome table (which agent should pass or fail which scenario): the run passes when "
        "every agent behaves as it says, and the absolute rules no longer apply",
    )
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="every episode, the aggregates and the verdict as JSON")
    o.add_argument(
        "--junit", metavar="FILE", help="JUnit XML: one test case per episode (scenario x repetition x eps x lambda)"
    )
    o.add_argument("--html", metavar="FILE", help="a self-contained HTML report (opens offline)")
    o.add_argument("--quiet", "-q", action="store_true", help="print only the verdict")
    o.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="the full terminal report: per-scenario rows, breakdowns, the surface, failing episodes, readiness",
    )
    o.add_argument(
        "--max-failures",
        type=int,
        default=10,
        metavar="N",
        help="failing episodes listed in the terminal report (default 10)",
    )


def baseline_from(args: argparse.Namespace) -> dict[str, Any] | None:
    """Checks the gate and output options before any episode runs, then loads the baseline."""
    check_gate(args.fail_under, args.attempt_tolerance)
    if args.max_failures < 0:
        raise ChaoskitError(f"--max-failures must be >= 0, got {args.max_failures}")
    if args.update_baseline and not args.baseline:
        raise ChaoskitError("--update-baseline needs --baseline FILE")
    if not args.baseline:
        return None
    if not Path(args.baseline).exists() and not args.update_baseline:
        # a mistyped path would otherwise switch the attempt gate off without a word
        raise ChaoskitError(
            f"--baseline {args.baseline}: file not found; create it with --update-baseline after a green run"
        )
    return load_baseline(args.baseline)


def write_html_report(results: dict[str, Any], path: str) -> None:
    """Write the HTML report of a results dict to ``path`` (``chaoskit.report._html.write_html``)."""
    try:
        write_html(results, path)
    except OSError as exc:
        raise ChaoskitError(f"--html {path}: cannot write the report: {exc.strerror or exc}") from None


def finish(result: BatteryResult, args: argparse.Namespace) -> int:
    """Write ``--json`` / ``--junit``, print the report (or only the verdict), update the baseline when the run
    is green; the exit status of the CI gate."""
    for flag, path, write in (("--json", args.json, write_json), ("--junit", args.junit, write_junit)):
        if path:
            try:
                write(result, path)
            except OSError as exc:
                raise ChaoskitError(f"{flag} {path}: cannot write the report: {exc.strerror or exc}") from None
    if args.html:
        write_html_report(result.to_dict(), args.html)
    if args.quiet:
        print("verdict: PASS" if result.ok else "verdict: FAIL: " + "; ".join(result.verdict.reasons))
        if args.html:
            print(f"HTML report: {args.html}")
    else:
        print(render_text(result, max_failures=args.max_failures, verbose=args.verbose, html=args.html))
    if args.update_baseline and args.baseline:
        if result.ok:
            target = Path(args.baseline)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(make_baseline(result.summary), indent=1), encoding="utf-8")
            except OSError as exc:
                raise ChaoskitError(f"--baseline {target}: cannot write the baseline: {exc.strerror or exc}") from None
            print(f"baseline written to {args.baseline}")
        else:
            print(f"baseline {args.baseline} not updated: the run is not green", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_GATE
