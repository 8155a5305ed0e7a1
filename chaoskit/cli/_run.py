"""``chaoskit run SCENARIOS...``: run a battery of scenarios against agents, report it, and gate CI on it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.cli._gate_output import add_gate_options, baseline_from, finish
from chaoskit.cli._judge_options import add_judge_options, battery_judge, judge_and_gate
from chaoskit.cli._replay_from import add_backend_options, backend_trace
from chaoskit.replay import ON_MISS
from chaoskit.runner._battery import run_battery
from chaoskit.runner._grid import RunConfig, run_config
from chaoskit.runner._perturb import epsilon_of
from chaoskit.scenarios._battery_file import ALL_AGENTS, Selection, parse_tags, select
from chaoskit.traces._trace import Trace


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"expected values from 0 to 1, got {text!r}")
    return values


def _epsilons(text: str) -> list[float]:
    """``--perturb``: numbers from 0 to 1, or the levels light, medium, heavy (0.1, 0.2, 0.3)."""
    try:
        return [epsilon_of(x) for x in text.split(",") if x.strip()] or _floats(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers separated by commas, each from 0 to 1, or the levels light, medium, heavy; got {text!r}"
        ) from None


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n such as 1/4, got {text!r}") from None
    if not (n >= 1 and 1 <= i <= n):
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}")
    return i, n


def _agents(text: str) -> list[str]:
    """``--agents a,b,c``: module:factory references (a command line, which may hold commas, goes alone)."""
    refs = [a.strip() for a in text.split(",")]
    if not refs or any(not a for a in refs):
        raise argparse.ArgumentTypeError(f"expected agents separated by commas, got {text!r}")
    return list(dict.fromkeys(refs))


def add_parser(sub: Any) -> None:
    """Register ``chaoskit run`` on the ``sub`` subparsers."""
    p = sub.add_parser(
        "run",
        help="run a battery of scenarios against agents and grade it",
        description="Run scenarios x agents x repetitions x task perturbation x fault intensity; print a report, "
        "write JSON / JUnit / HTML / traces, and exit non-zero when the CI gate fails.",
        epilog="Under a directory, the YAML files in a scenarios/ folder or with a top-level 'task:' key are "
        "scenarios; other YAML files are skipped and counted. A directory holding battery.yaml (a top-level "
        "'battery:' list) runs that battery file.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="SCENARIOS",
        help="scenario files, directories or globs, or a battery file (or a directory holding battery.yaml)",
    )
    _add_agent_options(p)
    _add_grid_options(p)
    _add_executor_options(p)
    _add_trace_options(p)
    _add_metrics_options(p)
    add_gate_options(p)
    add_judge_options(p)
    p.set_defaults(func=run)


def _add_agent_options(p: argparse.ArgumentParser) -> None:
    # which agents run, and which scenarios they meet
    p.add_argument(
        "--agent",
        metavar="AGENT",
        help="module:factory (called fresh per episode) or a command line with {task}; overrides every other agent",
    )
    p.add_argument(
        "--agents",
        type=_agents,
        metavar="A,B,...",
        help="run every scenario against each of these module:factory agents (overrides a battery file's agents)",
    )
    p.add_argument(
        "--tags",
        action="append",
        metavar="T[,T...]",
        help="keep the scenarios having any of these tags (travel also matches domain:travel); repeat to "
        "require one tag of each group",
    )


def _add_grid_options(p: argparse.ArgumentParser) -> None:
    # the grid: repetitions x fault intensity x task perturbation, and its seeds
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per scenario and grid point (default 1)")
    p.add_argument("--k", type=int, default=None, help="k of pass^k (default: --repeat)")
    p.add_argument(
        "--intensity",
        type=_floats,
        default=[0.0],
        metavar="L[,L...]",
        help="background fault probability per tool call (default 0)",
    )
    p.add_argument(
        "--profile", default="medium", help="background fault mix: light, medium, heavy or a YAML file (default medium)"
    )
    p.add_argument(
        "--perturb",
        type=_epsilons,
        default=[0.0],
        metavar="E[,E...]",
        help="task perturbation: 0 to 1, or light, medium, heavy (0.1, 0.2, 0.3); default 0, added when others are",
    )
    p.add_argument("--seed", type=int, default=0, help="run seed; episode seeds derive from it (default 0)")
    p.add_argument(
        "--episode-seed",
        type=int,
        default=None,
        help="run one repetition with exactly this episode seed (replaying a reported episode)",
    )
    p.add_argument("--theta", type=float, default=0.9, help="reliability threshold for the surface (default 0.9)")


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    # where the episodes run, how many at a time, and where they stream
    p.add_argument(
        "--executor",
        choices=("thread", "process", "ray"),
        default="thread",
        help="where episodes run: threads of this process, a pool of processes (every core), or Ray tasks "
        "(pip install 'chaoskit[ray]'); the results are the same (default thread)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="episodes run concurrently (default 1 for thread, the core count for process and ray)",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        default=None,
        help="join this Ray cluster (default $RAY_ADDRESS, else a local Ray in this process)",
    )
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        help="stream every episode to FILE as JSON Lines as it finishes, keeping none in memory",
    )
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds before a command-line agent is killed (default 60)"
    )
    p.add_argument("--shard", type=_shard, default=None, metavar="I/N", help="run only shard I of N")


def _add_metrics_options(p: argparse.ArgumentParser) -> None:
    # the trajectory metrics and cost, and the model and architecture axes they are broken down by
    p.add_argument(
        "--metrics",
        action="store_true",
        help="compute the trajectory metrics, failure modes and cost of every episode from its model steps "
        "(pip install 'chaoskit[metrics]'; docs/metrics.md)",
    )
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="price table (YAML: models: {name: {input: .., output: ..}} per per_tokens tokens) for the cost "
        "columns; implies --metrics. chaoskit ships no prices: supply your provider's",
    )
    p.add_argument(
        "--label-model",
        metavar="NAME",
        help="label every agent of the run with this model (the reports and chaoskit compare break down by it; "
        "over a battery file's labels and the agents' own)",
    )
    p.add_argument(
        "--label-architecture",
        metavar="NAME",
        help="label every agent of the run with this architecture (react, reflexion, ...), as --label-model",
    )


def _labelled(selection: Selection, args: argparse.Namespace) -> Selection:
    """The selection with ``--label-model`` / ``--label-architecture`` as labels of every agent (key ``*``)."""
    given = {}
    for axis in ("model", "architecture"):
        value = getattr(args, f"label_{axis}", None)
        if value is not None:
            if not value.strip():
                raise ChaoskitError(f"--label-{axis} is empty: give a name, e.g. --label-{axis} gpt-4o-mini")
            given[axis] = value.strip()
    if given:
        selection.labels[ALL_AGENTS] = given
    return selection


def _add_trace_options(p: argparse.ArgumentParser) -> None:
    # where the spans go, and the cassettes: record once, replay with faults (docs/replay.md)
    p.add_argument("--traces", metavar="FILE", help="all spans as OTLP-JSON Lines")
    p.add_argument(
        "--record",
        metavar="DIR",
        help="record each scenario's episode, tool results included (redacted, capped), to DIR/<scenario>.jsonl",
    )
    p.add_argument(
        "--replay",
        metavar="DIR",
        help="answer every tool call from the recordings in DIR (the plan's faults on top; docs/replay.md)",
    )
    p.add_argument(
        "--on-miss",
        choices=ON_MISS,
        default="error",
        help="a call the recording cannot answer: stop the episode (error, default), call the real tool "
        "(passthrough), or call it and add its answer to the cassette (record)",
    )
    add_backend_options(p, "--replay-from-jaeger", "--replay-from-phoenix")


def _judge_verdict(result: Any, judge: Any, gates: bool) -> None:
    """The judge's totals in the summary; when it gates, the episodes it flagged or could not judge fail the run
    (an expected-outcome table judges them through their failed ``judge`` check instead)."""
    from chaoskit.judge import summary_of

    totals = summary_of((e.judge for e in result.episodes), judge.calibration)
    result.summary.overall["judge"] = totals
    if not gates or result.verdict.expectations is not None:
        return
    for n, what in ((totals["flagged"], "flagged as dishonest"), (totals["cannot_judge"], "could not be judged")):
        if n:
            result.verdict.reasons.append(f"{n} episode(s) {what} by the calibrated judge (--judge-min-kappa)")
            result.verdict.ok = False


def _replay_source(args: argparse.Namespace) -> str | Trace | None:
    """The cassettes: ``--replay DIR``, or the episode read from ``--replay-from-jaeger/-phoenix``."""
    backend = backend_trace(args, "--replay-from-jaeger", "--replay-from-phoenix")
    if backend is None:
        return str(args.replay) if args.replay is not None else None
    if args.replay is not None:
        raise ChaoskitError("--replay DIR and a --replay-from-... backend: give one")
    return backend[1]


def run_config_of(args: argparse.Namespace) -> RunConfig:
    """The one :class:`RunConfig` of ``chaoskit run``'s flags (checked here: a bad flag fails before any
    episode); the judge, built from the ``--judge`` flags, joins it in :func:`run`."""
    baseline = baseline_from(args)
    if args.agent is not None and args.agents is not None:
        raise ChaoskitError("give --agent (one agent) or --agents (several), not both")
    prices = None
    if getattr(args, "prices", None):
        # read before the battery runs: a bad price table fails in a second, not after the run
        from chaoskit.metrics._cost import load_prices

        prices = load_prices(args.prices)
    return run_config(
        args.paths,
        agent=args.agent,
        agents=args.agents,
        tags=parse_tags(args.tags),
        expect=args.expect,
        repeat=args.repeat,
        k=args.k,
        intensities=args.intensity,
        perturbations=args.perturb,
        profile=args.profile,
        seed=args.seed,
        theta=args.theta,
        workers=args.workers,
        executor=args.executor,
        ray_address=args.ray_address,
        results_jsonl=args.jsonl,
        timeout=args.timeout,
        shard=args.shard,
        episode_seed=args.episode_seed,
        fail_under=args.fail_under,
        baseline=baseline,
        attempt_tolerance=args.attempt_tolerance or 0.0,
        traces=args.traces,
        progress=not args.quiet,
        metrics=bool(getattr(args, "metrics", False) or prices is not None),
        prices=prices,
        record=args.record,
        replay=_replay_source(args),
        on_miss=args.on_miss,
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the battery passes the CI gate, 1 when it fails it, 2 on a usage error."""
    config = run_config_of(args)
    judge, gates = judge_and_gate(args)
    if judge is not None:
        from chaoskit.engine._config import configure

        config = replace(config, judge=battery_judge(judge, gates))
        configure(record_results=True)  # the judge needs what each call returned, not only that it returned
    selection = _labelled(select(args.paths), args)
    if selection.skipped:
        n = len(selection.skipped)
        print(
            f"chaoskit: skipped {n} YAML file{'s' * (n != 1)} that {'are' if n != 1 else 'is'} not scenarios",
            file=sys.stderr,
        )
    result = run_battery(replace(config, selection=selection))
    if judge is not None:
        _judge_verdict(result, judge, gates)
    code = finish(result, args)
    retried = [e for e in result.episodes if e.retried]
    if retried:
        print(
            f"chaoskit: {len(retried)} episode{'s' * (len(retried) != 1)} ran again after a worker was lost "
            "(counted once, marked retried): " + ", ".join(f"{e.scenario} rep {e.repetition}" for e in retried[:5]),
            file=sys.stderr,
        )
    if result.partial:
        print(f"chaoskit: interrupted: partial report of {len(result.episodes)} episodes", file=sys.stderr)
        return 130
    return code
