"""``chaoskit merge RESULTS...``: combine the ``--json`` results of a battery's shards into one report and verdict."""

from __future__ import annotations

import argparse
from typing import Any

from chaoskit.cli._gate_output import add_gate_options, baseline_from, finish
from chaoskit.report._json import load_results
from chaoskit.report._merge import merge_results
from chaoskit.runner._expect import load_expectations


def add_parser(sub: Any) -> None:
    """Register ``chaoskit merge`` on the ``sub`` subparsers."""
    m = sub.add_parser("merge", help="combine the --json results of shards into one report and verdict")
    m.add_argument("files", nargs="+", metavar="RESULTS", help="JSON files written by chaoskit run --json")
    add_gate_options(m)
    m.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the merged battery passes the CI gate, 1 when it fails it, 2 on a usage error."""
    baseline = baseline_from(args)
    table = load_expectations(args.expect) if args.expect else None
    datas = [load_results(f) for f in args.files]
    result = merge_results(
        datas,
        overrides={"fail_under": args.fail_under, "attempt_tolerance": args.attempt_tolerance},
        baseline=baseline,
        sources=args.files,
        expectations=table,
    )
    return finish(result, args)
