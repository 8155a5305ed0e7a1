"""``chaoskit validate FILE...``: check fault plans and scenario files without running anything."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from chaoskit._errors import PlanError
from chaoskit.plan._locate import _SYNONYMS
from chaoskit.plan._model import Plan
from chaoskit.plan._yaml import load_yaml, read_source
from chaoskit.scenarios._scenario import Scenario, load_scenario


def add_parser(sub: Any) -> None:
    """Register ``chaoskit validate`` on the ``sub`` subparsers."""
    p = sub.add_parser("validate", help="check fault plan and scenario files and say what is wrong")
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="YAML fault plans (seed, faults) or scenarios (name, task, faults, success)",
    )
    p.set_defaults(func=run)


def _is_scenario(path: str) -> bool:
    """A file is a scenario when it has a key that only scenarios have (or a harness's word for one, such as
    ``prompt``); else it is read as a plan, whose errors then say what a plan holds."""
    text, src = read_source(path, None)
    data, _ = load_yaml(text, src)
    if not isinstance(data, Mapping):
        return False
    only_scenarios = set(Scenario.model_fields) - set(Plan.model_fields)
    return any(isinstance(k, str) and (k in only_scenarios or set(_SYNONYMS.get(k, ())) & only_scenarios) for k in data)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every file is valid, 2 when any is not (as for every input chaoskit cannot use)."""
    failed = 0
    for path in args.files:
        try:
            if _is_scenario(path):
                scenario = load_scenario(path)
                # an mcp: server's protocol faults go to the proxy's plan: checked as plan faults here
                server = scenario.mcp
                extra = list(server.faults) if server is not None else []
                protocol = Plan.from_dict({"faults": extra}, source=f"{path}: mcp").faults if extra else []
                print(f"ok: {path}: scenario {scenario.name!r}, {len(scenario.faults) + len(protocol)} fault(s)")
                faults = [*scenario.faults, *protocol]
            else:
                plan = Plan.from_yaml(path)
                print(f"ok: {path}: seed {plan.seed}, {len(plan.faults)} fault(s)")
                faults = plan.faults
        except PlanError as exc:
            failed += 1
            print(f"error: {exc}", file=sys.stderr)
            continue
        for i, fault in enumerate(faults):
            print(f"  [{i}] {fault.describe()}")
    return 2 if failed else 0
