"""``chaoskit validate PLAN.yaml...``: check fault plans without running anything."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._errors import PlanError
from ._plan import Plan


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="check fault plan files and say what is wrong")
    p.add_argument("files", nargs="+", metavar="PLAN", help="YAML fault plans")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.files:
        try:
            plan = Plan.from_yaml(path)
        except PlanError as exc:
            failed += 1
            print(f"error: {exc}", file=sys.stderr)
            continue
        print(f"ok: {path}: seed {plan.seed}, {len(plan.faults)} fault(s)")
        for i, fault in enumerate(plan.faults):
            print(f"  [{i}] {fault.describe()}")
    return 1 if failed else 0
