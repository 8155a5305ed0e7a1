"""``chaoskit run`` (a battery of scenarios) and ``chaoskit merge`` (shard results into one verdict)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"expected values from 0 to 1, got {text!r}")
    return values


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n such as 1/4, got {text!r}") from None
    if not (n >= 1 and 1 <= i <= n):
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}")
    return i, n


def _gate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CI gate")
    g.add_argument("--fail-under", type=float, metavar="SCORE",
                   help="fail when the mean episode score (0-100) is below SCORE")
    g.add_argument("--baseline", metavar="FILE",
                   help="fail when a scenario's mean attempt count rises against this baseline (or results) file")
    g.add_argument("--update-baseline", action="store_true",
                   help="write the --baseline file from this run, when the run is green")
    g.add_argument("--attempt-tolerance", type=float, default=None, metavar="FRACTION",
                   help="allowed relative rise of attempts against the baseline (default 0)")
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="every episode, the aggregates and the verdict as JSON")
    o.add_argument("--junit", metavar="FILE",
                   help="JUnit XML: one test case per episode (scenario x repetition x eps x lambda)")
    o.add_argument("--quiet", "-q", action="store_true", help="print only the verdict")
    o.add_argument("--max-failures", type=int, default=10, metavar="N",
                   help="failing episodes listed in the terminal report (default 10)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="run a battery of scenarios against an agent and grade it",
        description="Run scenarios x repetitions x task perturbation x fault intensity; print a report, "
                    "write JSON / JUnit / traces, and exit non-zero when the CI gate fails.",
    )
    p.add_argument("paths", nargs="+", metavar="SCENARIOS", help="scenario files, directories or globs")
    p.add_argument("--agent", metavar="AGENT",
                   help="module:factory (called fresh per episode) or a command line with {task}; "
                        "overrides the scenarios' agent")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per scenario and grid point (default 1)")
    p.add_argument("--k", type=int, default=None, help="k of pass^k (default: --repeat)")
    p.add_argument("--intensity", type=_floats, default=[0.0], metavar="L[,L...]",
                   help="background fault probability per tool call (default 0)")
    p.add_argument("--profile", default="medium",
                   help="background fault mix: light, medium, heavy or a YAML file (default medium)")
    p.add_argument("--perturb", type=_floats, default=[0.0], metavar="E[,E...]",
                   help="task perturbation intensity (default 0; 0 is added when others are given)")
    p.add_argument("--seed", type=int, default=0, help="run seed; episode seeds derive from it (default 0)")
    p.add_argument("--episode-seed", type=int, default=None,
                   help="run one repetition with exactly this episode seed (replaying a reported episode)")
    p.add_argument("--theta", type=float, default=0.9, help="reliability threshold for the surface (default 0.9)")
    p.add_argument("--workers", type=int, default=1, help="episodes run concurrently (default 1)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds before a command-line agent is killed (default 60)")
    p.add_argument("--shard", type=_shard, default=None, metavar="I/N", help="run only shard I of N")
    p.add_argument("--traces", metavar="FILE", help="all spans as OTLP-JSON Lines")
    _gate_options(p)
    p.set_defaults(func=run)

    m = sub.add_parser("merge", help="combine the --json results of shards into one report and verdict")
    m.add_argument("files", nargs="+", metavar="RESULTS", help="JSON files written by chaoskit run --json")
    _gate_options(m)
    m.set_defaults(func=merge)


def _finish(result: Any, args: argparse.Namespace) -> int:
    from chaoskit.report._report import make_baseline, render_text, write_json, write_junit

    for flag, path, write in (("--json", args.json, write_json), ("--junit", args.junit, write_junit)):
        if path:
            try:
                write(result, path)
            except OSError as exc:
                raise ChaoskitError(f"{flag} {path}: cannot write the report: {exc.strerror or exc}") from None
    if args.quiet:
        print("verdict: PASS" if result.ok else "verdict: FAIL: " + "; ".join(result.verdict.reasons))
    else:
        print(render_text(result, max_failures=args.max_failures))
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


def _baseline(args: argparse.Namespace) -> Any:
    """Checks the gate and output options before any episode runs, then loads the baseline."""
    from chaoskit.report._report import load_baseline
    from chaoskit.runner._battery import _check_gate

    _check_gate(args.fail_under, args.attempt_tolerance)
    if args.max_failures < 0:
        raise ChaoskitError(f"--max-failures must be >= 0, got {args.max_failures}")
    if args.update_baseline and not args.baseline:
        raise ChaoskitError("--update-baseline needs --baseline FILE")
    if not args.baseline:
        return None
    if not Path(args.baseline).exists() and not args.update_baseline:
        # a mistyped path would otherwise switch the attempt gate off without a word
        raise ChaoskitError(f"--baseline {args.baseline}: file not found; create it with --update-baseline "
                            "after a green run")
    return load_baseline(args.baseline)


def run(args: argparse.Namespace) -> int:
    from chaoskit.runner._battery import run_battery

    baseline = _baseline(args)
    result = run_battery(
        args.paths, agent=args.agent, repeat=args.repeat, k=args.k, intensities=args.intensity,
        perturbations=args.perturb, profile=args.profile, seed=args.seed, theta=args.theta,
        workers=args.workers, timeout=args.timeout, shard=args.shard, episode_seed=args.episode_seed,
        fail_under=args.fail_under, baseline=baseline,
        attempt_tolerance=args.attempt_tolerance or 0.0, traces=args.traces,
        progress=not args.quiet,
    )
    return _finish(result, args)


def merge(args: argparse.Namespace) -> int:
    from chaoskit.report._report import load_results, merge_results

    baseline = _baseline(args)
    datas = [load_results(f) for f in args.files]
    result = merge_results(datas, overrides={"fail_under": args.fail_under,
                                             "attempt_tolerance": args.attempt_tolerance},
                           baseline=baseline, sources=args.files)
    return _finish(result, args)
