"""``chaoskit suggest --agent MODULE:OBJECT --out DIR``: a fault battery generated from the agent's own tools."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from chaoskit.suggest._battery_writer import FAULTS
from chaoskit.suggest._suggest import Suggestion, suggest


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return names


def add_parser(sub: Any) -> None:
    """Register ``chaoskit suggest`` on the ``sub`` subparsers."""
    p = sub.add_parser(
        "suggest",
        help="generate a fault battery from an agent's tools, with tool-contract findings",
        description="Read the agent's tools (no model is called), classify each one with the reason, list what in "
        "the tools themselves stands in the way of recovery, and write one commented scenario per tool and fault.",
    )
    p.add_argument(
        "--agent",
        metavar="MODULE:OBJECT",
        help="a factory (as for chaoskit run), a list of tools, a compiled LangGraph graph, or an OpenAPI file",
    )
    p.add_argument("--openapi", metavar="FILE", help="an OpenAPI 3 file whose operations are tools too")
    p.add_argument("--mcp", metavar="COMMAND", help="an MCP server command whose tools are listed (tools/list only)")
    p.add_argument(
        "--http-command",
        metavar="COMMAND",
        help="the command that starts the OpenAPI tools' API for each episode (with {port} or {ready_file}); "
        "their scenarios get an http: block, so chaoskit run puts the HTTP proxy in front",
    )
    p.add_argument("--http-url", metavar="URL", help="the URL of the running API behind the OpenAPI tools")
    p.add_argument("--out", metavar="DIR", help="where to write the scenarios (and suggest.json)")
    p.add_argument(
        "--task", metavar="TEXT", help="the task every scenario gives the agent (default: its own scenarios')"
    )
    p.add_argument("--faults", type=_names, metavar="KINDS", help=f"only these fault kinds, from: {', '.join(FAULTS)}")
    p.add_argument("--tools", type=_names, metavar="NAMES", help="only these tools")
    p.add_argument("--dry-run", action="store_true", help="print the classification and the cases; write nothing")
    p.add_argument(
        "--from-trace",
        metavar="TRACE",
        help="write the scenario that reruns this recorded episode (a cassette: chaoskit run --record) as a "
        "regression test, and its cassette to OUT/cassettes (--agent overrides the recorded agent)",
    )
    p.set_defaults(func=run)


def _yes(value: Any) -> str:
    return "yes" if value else "no"


def print_suggestion(s: Suggestion, out: TextIO) -> None:
    """The classification (each answer with its reason), the contract findings and the cases, as text."""
    print(f"{len(s.classes)} tool(s):", file=out)
    for c in s.classes:
        key = c.idempotency.value or "none"
        print(
            f"\n  {c.name}: {c.kind.value}; idempotency key: {key}; collection: {_yes(c.collection.value)}; "
            f"structured: {_yes(c.structured.value)}",
            file=out,
        )
        for label, d in (
            ("kind", c.kind),
            ("key", c.idempotency),
            ("collection", c.collection),
            ("structured", c.structured),
        ):
            print(f"    {label:<10} {d.why}", file=out)
        if c.tool.replaces_result is False:
            print(
                f"    {'faults':<10} no data fault: its entry point cannot replace a result (a callback handler)",
                file=out,
            )
        task = s.tasks.get(c.name)
        print(
            f"    {'task':<10} {f'{task.text!r} from {task.origin}' if task else s.skipped.get(c.name, '-')}", file=out
        )
    print(f"\nFix in the tool: {len(s.findings)} contract finding(s)", file=out)
    for f in s.findings:
        print(f"  - {f.tool}: {f.kind}\n      evidence: {f.evidence}\n      why: {f.why}\n      fix: {f.fix}", file=out)
    print(f"\n{len(s.cases)} case(s):", file=out)
    width = max((len(k.file) for k in s.cases), default=4)
    for k in s.cases:
        about = f"model / {k.fault} ({k.kind}; the task of {k.tool})" if k.target == "model" else None
        about = about or f"{k.tool} / {k.fault} ({k.kind})"
        print(f"  {k.file:<{width}}  {about}: {', '.join(k.checks)}", file=out)
    for name, why in s.skipped.items():
        print(f"  (no case for {name}: {why})", file=out)
    for name, why in s.gaps.items():
        print(f"  (no case {name}: {why})", file=out)


def run(args: argparse.Namespace) -> int:
    """Exit 0 after writing (or, with ``--dry-run``, printing) the battery; 2 for bad input."""
    if not args.dry_run and not args.out:
        print("chaoskit: error: --out DIR is required (or --dry-run to only print the cases)", file=sys.stderr)
        return 2
    if args.from_trace:
        return _from_trace(args)
    s = suggest(
        args.agent,
        openapi=args.openapi,
        mcp=args.mcp,
        task=args.task,
        faults=args.faults,
        tools=args.tools,
        http_command=args.http_command,
        http_url=args.http_url,
    )
    print_suggestion(s, sys.stdout)
    if s.http is None and any(c.tool.source.startswith("openapi:") for c in s.classes if c.name in s.tasks):
        print(
            "chaoskit: warning: the OpenAPI tools' scenarios have no http: block, so chaoskit run would start no "
            "HTTP proxy and no fault would fire on them (every case would fail on min_attempts); give "
            "--http-command 'python api.py --port {port}' or --http-url URL",
            file=sys.stderr,
        )
    if args.dry_run:
        return 0
    if not s.cases:
        print("chaoskit: error: no case to write (every tool was skipped; see above)", file=sys.stderr)
        return 2
    s.write(args.out)
    how = f"chaoskit run {args.out}" + ("" if s.agent else " --agent YOUR_AGENT")
    print(f"\nwrote {len(s.written)} scenario(s) to {args.out}; run them with: {how}", file=sys.stdout)
    if s.stale:
        names = ", ".join(p.name for p in s.stale)
        print(f"note: {len(s.stale)} file(s) an earlier suggest wrote there were not rewritten and still run: {names}")
    return 0


def _from_trace(args: argparse.Namespace) -> int:
    from chaoskit.suggest._from_trace import scenario_from_trace

    if args.dry_run or args.openapi or args.mcp or args.faults or args.tools:
        print("chaoskit: error: --from-trace takes --out DIR (and --agent) only", file=sys.stderr)
        return 2
    made = scenario_from_trace(args.from_trace, args.out, agent=args.agent)
    print(f"wrote {made.scenario} (checks required to pass again: {', '.join(made.passed) or 'none'})")
    if made.failed:
        print(f"the recorded episode failed: {', '.join(made.failed)}")
    print(f"run it offline with: chaoskit run {made.scenario} --replay {made.cassettes}")
    return 0
