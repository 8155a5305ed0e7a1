"""`chaoskit replay TRACE --agent module:factory`: rerun an agent on a recorded episode; did its verdicts change?

The episode is a trace file, or is read from Jaeger (``--from-jaeger URL --trace ID``) or Phoenix
(``--from-phoenix URL --project NAME [--trace ID]``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.cli._replay_from import add_backend_options, backend_trace
from chaoskit.grading import run_checks
from chaoskit.plan._model import Plan
from chaoskit.replay import ON_MISS, Cassette, episode
from chaoskit.runner._agents import PythonAgent, resolve_agent
from chaoskit.scenarios._scenario import load_scenario
from chaoskit.semconv import EPISODE_PREFIX, PLAN
from chaoskit.telemetry import capture
from chaoskit.traces._records import EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Add ``chaoskit replay``."""
    p = sub.add_parser(
        "replay",
        help="rerun an agent against a recorded episode (its tools answered from the trace); did its verdicts change?",
        description="Rerun --agent on the task of the episode recorded in TRACE (chaoskit run --record, "
        "episode(record=...), or any trace with tool results), every tool call answered from the recording, the "
        "recorded plan's faults (or --plan / --scenario) on top; compare the checks' verdicts with the recorded "
        "run's. Exit 0 when they are the same, 1 when one changed, 2 on an error. docs/replay.md",
    )
    p.add_argument("trace", metavar="TRACE", nargs="?", help="the recorded episode: an OTLP-JSON Lines file")
    add_backend_options(p, "--from-jaeger", "--from-phoenix")
    p.add_argument("--agent", required=True, metavar="MODULE:FACTORY", help="the agent to rerun (a Python factory)")
    p.add_argument("--plan", metavar="FILE", help="a fault plan YAML to apply instead of the recorded plan")
    p.add_argument("--scenario", metavar="FILE", help="a scenario YAML: its faults instead of the recorded plan")
    p.add_argument("--task", help="the task text (default: the recorded chaoskit.episode.task)")
    p.add_argument("--on-miss", choices=ON_MISS, default="error", help="a call the recording cannot answer")
    p.add_argument(
        "--ignore",
        action="append",
        type=_ignored,
        default=[],
        metavar="TOOL:ARG[,ARG]",
        help="leave these arguments of TOOL out of the match (e.g. search:timestamp); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run)


def _plan(args: argparse.Namespace, recorded: EpisodeRecord) -> Plan | None:
    if args.plan and args.scenario:
        raise ChaoskitError("--plan and --scenario: give one")
    if args.plan:
        return Plan.from_yaml(args.plan)
    if args.scenario:
        return load_scenario(args.scenario, resolve=False).plan()
    text = recorded.attributes.get(PLAN)
    return Plan.from_dict(json.loads(text)) if isinstance(text, str) else None


def _verdicts(trace: Trace) -> dict[str, str]:
    return {r.name: r.severity for r in run_checks(trace)}


def _ignored(text: str) -> tuple[str, list[str]]:
    tool, _, names = text.partition(":")
    args = [n.strip() for n in names.split(",") if n.strip()]
    if not tool.strip() or not args:
        raise argparse.ArgumentTypeError(f"expected TOOL:ARG[,ARG...] (e.g. search:timestamp), got {text!r}")
    return tool.strip(), args


def _rerun(agent: PythonAgent, name: str | None, plan: Plan | None, cassette: Cassette, task: str,
           args: argparse.Namespace) -> Trace:  # fmt: skip
    ignore: dict[str, list[str]] = {}
    for tool, names in args.ignore:
        ignore.setdefault(tool, []).extend(names)
    with capture() as cap:
        made = agent.make()
        with episode(name, plan, replay=cassette, on_miss=args.on_miss, ignore=ignore, task=task) as ep:
            if agent.is_async:
                output = asyncio.run(agent.ainvoke(made[0], task))
            else:
                output = agent.invoke(made[0], task)
            ep.finish(output)
    return Trace.from_spans(cap.spans)


def run(args: argparse.Namespace) -> int:
    """Run ``chaoskit replay``."""
    backend = backend_trace(args, "--from-jaeger", "--from-phoenix")
    if backend is not None and args.trace is not None:
        raise ChaoskitError("a TRACE file and a --from-... backend: give one")
    if backend is None and args.trace is None:
        raise ChaoskitError("give the recorded episode: TRACE (a file), --from-jaeger URL --trace ID, or "
                            "--from-phoenix URL --project NAME [--trace ID]")  # fmt: skip
    cassette = Cassette.open(args.trace) if backend is None else Cassette.from_trace(backend[1], source=backend[0])
    recorded = cassette.episode
    task = args.task or recorded.attributes.get(f"{EPISODE_PREFIX}task")
    if not isinstance(task, str):
        raise ChaoskitError(f"{cassette.path}: the recorded episode has no chaoskit.episode.task; give --task")
    agent = resolve_agent(args.agent)
    if not isinstance(agent, PythonAgent):
        raise ChaoskitError(f"--agent {args.agent}: chaoskit replay reruns a Python agent (module:factory)")
    agent.probe()
    before = _verdicts(Trace([recorded]))
    after = _verdicts(_rerun(agent, recorded.name, _plan(args, recorded), cassette, task, args))
    changed = {
        k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)
    }
    if args.json:
        print(json.dumps({"recorded": before, "replayed": after, "changed": changed}, indent=2))
    else:
        for name, (old, new) in changed.items():
            print(f"  {name:<24} {old or '-':>6} -> {new or '-'}")
        print(
            f"verdicts {'changed' if changed else 'unchanged'}: {len(changed)} of {len(after)} checks", file=sys.stdout
        )
    return 1 if changed else 0
