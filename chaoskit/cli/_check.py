"""``chaoskit check TRACES...``: grade recovery from exported traces (files, a running Jaeger or Phoenix).

Exit status: 0 when every check passed (warnings allowed), 1 when the traces were graded and a check failed,
2 when they could not be graded (unreadable, untrustworthy, nothing to grade, the backend unreachable) or on a
usage error. A trace that cannot be graded is never a pass. The verdicts come from ``checks.run_checks`` and
``score`` alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.cli._check_sources import add_source_options, check_sources, read_sources
from chaoskit.grading._model import TraceReadError
from chaoskit.grading._readers import FORMATS
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import score
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, run_checks

_EXIT_CODES = """exit status:
  0  graded: every check passed (warnings allowed)
  1  graded: at least one check failed
  2  could not grade, never a pass: a file or backend answer that cannot be read, a chaoskit span that
     cannot be graded (no ids or times, an end before its start, a tool span without chaoskit.attempt, a
     chaoskit attribute of the wrong type, a span id used twice with different content, an episode missing
     some of its attempts), nothing to grade (no chaoskit spans, no traces in Jaeger or Phoenix), the
     backend unreachable, too slow (--timeout) or answering an error; or a usage error. The reason is
     printed as one line naming the file or URL, the line and the span."""


def add_parser(sub: Any) -> None:
    """Register ``chaoskit check`` and its options on the subcommand parsers ``sub``."""
    p = sub.add_parser(
        "check",
        help="grade agent recovery from exported traces (OTLP-JSON, JSON Lines, Jaeger JSON, Jaeger, Phoenix)",
        description="Read traces, run recovery checks per episode, print a table; exit 1 when a check fails, "
        "2 when the traces cannot be graded.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("traces", nargs="*", metavar="TRACES", help="trace files (format sniffed from content)")
    p.add_argument("--format", choices=FORMATS, help="force the file format instead of sniffing it")
    p.add_argument(
        "--checks",
        metavar="NAMES",
        help=f"comma-separated checks (default: {','.join(DEFAULT_CHECKS)}); known: {','.join(REGISTRY)}",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument(
        "--max-attempts",
        action="append",
        default=[],
        metavar="TOOL=N",
        help="also check that TOOL was attempted at most N times (repeatable)",
    )
    p.add_argument(
        "--min-attempts",
        action="append",
        default=[],
        metavar="TOOL=N",
        help="also check that TOOL was retried at least N times unless it succeeded (repeatable)",
    )
    p.add_argument(
        "--retry-storm",
        type=int,
        default=3,
        metavar="N",
        help="no_retry_storm limit: identical calls in a row allowed (default 3)",
    )
    p.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool the task needs (repeatable); default: every tool that only ever failed",
    )
    add_source_options(p)
    p.set_defaults(func=run)


def _limits(values: list[str], flag: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        tool, sep, n = v.rpartition("=")
        if not sep or not tool or not n.isdigit():
            raise ChaoskitError(f"{flag} expects TOOL=N with N a whole number, got {v!r}")
        out[tool] = int(n)
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``chaoskit check`` with parsed arguments; returns the exit status (0 passed, 1 failed, 2 ungradable)."""
    names = [n.strip() for n in args.checks.split(",") if n.strip()] if args.checks is not None else None
    if names is not None:
        if not names:
            raise ChaoskitError(f"--checks names no check; known: {', '.join(REGISTRY)}")
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise ChaoskitError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    if args.retry_storm < 1:
        raise ChaoskitError(f"--retry-storm must be a whole number >= 1, got {args.retry_storm}")
    check_sources(args)
    params: dict[str, Any] = {
        "n": args.retry_storm,
        "required_tools": args.require or None,
        "max_attempts": _limits(args.max_attempts, "--max-attempts"),
        "min_attempts": _limits(args.min_attempts, "--min-attempts"),
    }
    if names is not None:
        for flag in ("max_attempts", "min_attempts"):
            if params[flag] and flag not in names:
                names.append(flag)

    try:
        sources = read_sources(args)
    except TraceReadError as exc:
        print(f"chaoskit: cannot grade: {exc}", file=sys.stderr)
        return 2

    report: list[dict[str, Any]] = []
    failed = False
    for source, trace in sources:
        for one in trace.split():
            ep = one.episodes[0]
            results = run_checks(one, names, **params)
            sc = score(one, checks=results, required_tools=params["required_tools"])
            failed = failed or any(not r.passed for r in results)
            report.append({"source": source, "episode": ep, "results": results, "score": sc})
    if args.json:
        print(json.dumps(_as_json(report, failed), indent=2, ensure_ascii=False))
    else:
        _print_tables(report, failed)
    return 1 if failed else 0


def _as_json(report: list[dict[str, Any]], failed: bool) -> dict[str, Any]:
    episodes = []
    for item in report:
        ep = item["episode"]
        episodes.append(
            {
                "source": item["source"],
                "id": ep.id,
                "name": ep.name,
                "outcome": ep.outcome,
                "output": ep.output,
                "trace_id": ep.trace_id,
                "attempts": len(ep.attempts),
                "checks": [r.to_dict() for r in item["results"]],
                "score": item["score"].to_dict(),
            }
        )
    return {"passed": not failed, "episodes": episodes}


def _print_tables(report: list[dict[str, Any]], failed: bool) -> None:
    if not report:
        print("no chaoskit episodes found in the given traces")
        return
    for item in report:
        ep = item["episode"]
        results: list[CheckResult] = item["results"]
        label = ep.name or "(no name)"
        eid = ep.id[:12] if ep.id else "outside any episode"
        print(
            f"episode {label}  id {eid}  outcome {ep.outcome or '?'}  attempts {len(ep.attempts)}  "
            f"score {item['score'].value:.1f}/100  ({item['source']})"
        )
        width = max([len("CHECK"), *(len(r.name) for r in results)])
        print(f"  {'CHECK':<{width}}  RESULT  MESSAGE")
        for r in results:
            print(f"  {r.name:<{width}}  {r.severity.upper():<6}  {r.message}")
            if r.evidence and r.severity != "pass":
                print(f"  {'':<{width}}          spans: {', '.join(r.evidence)}")
        print()
    n_fail = sum(1 for item in report for r in item["results"] if not r.passed)
    n_warn = sum(1 for item in report for r in item["results"] if r.severity == "warn")
    print(
        f"{len(report)} episode(s): {n_fail} failed check(s), {n_warn} warning(s)"
        + (" — FAILED" if failed else " — ok")
    )
