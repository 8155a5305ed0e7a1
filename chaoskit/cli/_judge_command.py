"""``chaoskit judge calibrate``: measure a judge against a labelled answer corpus, and write its calibration."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.cli._judge_options import add_judge_options, judge_from


def add_parser(sub: Any) -> None:
    """Register ``chaoskit judge`` and its ``calibrate`` subcommand."""
    p = sub.add_parser("judge", help="the optional rubric grader: calibrate a judge model on labelled answers")
    judge_sub = p.add_subparsers(dest="judge_command", metavar="COMMAND")
    c = judge_sub.add_parser(
        "calibrate",
        help="measure a judge on a labelled answer corpus: TPR, TNR, kappa with 95%% intervals",
        description="Replay every situation of a labelled corpus through real @chaos tools, ask the judge about "
        "each answer, and compare with the labels: TPR and TNR (Wilson 95% intervals), Cohen's kappa (bootstrap "
        "95% interval), per label, for any label and per language, and the bias-corrected pass rate "
        "(Rogan-Gladen). Exit 0 when measured, 2 on bad input.",
    )
    c.add_argument(
        "--labels", required=True, metavar="FILE", help="a corpus file or folder (benchmarks/answers_corpus)"
    )
    c.add_argument("--out", metavar="FILE", help="write the calibration (JSON) here, for --judge-calibration")
    c.add_argument("--json", action="store_true", help="print the calibration as JSON instead of tables")
    c.add_argument("--seed", type=int, default=0, help="seed of the situations' replays (default 0)")
    add_judge_options(c, gate=False)
    c.set_defaults(func=calibrate_command)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def calibrate_command(args: argparse.Namespace) -> int:
    """Run ``chaoskit judge calibrate``."""
    judge = judge_from(args)
    if judge is None:
        raise ChaoskitError("chaoskit judge calibrate needs --judge MODULE:OBJECT or --judge-url URL")
    from chaoskit.judge._calibrate import calibrate

    def progress(i: int, n: int) -> None:
        if sys.stderr.isatty():
            print(f"\rjudged {i}/{n}", end="" if i < n else "\n", file=sys.stderr, flush=True)

    report = calibrate(judge, args.labels, seed=args.seed, progress=progress)
    if args.out:
        try:
            Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ChaoskitError(f"--out {args.out}: cannot write the calibration: {exc.strerror or exc}") from None
    print(json.dumps(report, indent=1, ensure_ascii=False) if args.json else render(report))
    if args.out and not args.json:
        print(f"calibration written to {args.out}")
    return 0


def _pct(x: float | None) -> str:
    return "    -" if x is None else f"{x:5.2f}"


def _ci(x: list[float] | None) -> str:
    return "[    -,     -]" if not x else f"[{x[0]:5.2f}, {x[1]:5.2f}]"


def _row(name: str, r: dict[str, Any]) -> str:
    pos = r["tp"] + r["fn"]
    return (
        f"  {name:<26} {r['n']:>5} {pos:>5}  {_pct(r['tpr'])} {_ci(r['tpr_ci95'])}  {_pct(r['tnr'])} "
        f"{_ci(r['tnr_ci95'])}  {_pct(r['kappa'])} {_ci(r['kappa_ci95'])}"
    )


def render(report: dict[str, Any]) -> str:
    """The calibration as the terminal shows it."""
    c, u, p = report["corpus"], report["usage"], report["pass_rate"]
    cost = "unknown (no --judge-prices)" if u["cost"] is None else f"{u['cost']:.4f} {u['currency'] or ''}".strip()
    head = f"  {'QUESTION':<26} {'N':>5} {'POS':>5}  {'TPR   [95% CI]':<20}  {'TNR   [95% CI]':<20}  KAPPA [95% CI]"
    lines = [
        f"judge {report['model']}  rubric {report['rubric']}",
        f"corpus {c['path']}: {c['answers']} answers, {c['situations']} situations, languages "
        f"{', '.join(c['languages'])} (sha256 {c['sha256'][:12]})",
        f"model calls {u['model_calls']}, from cache {u['from_cache']}, cannot judge {report['cannot_judge']} "
        f"(counted as wrong), tokens {u['input_tokens']} in / {u['output_tokens']} out, cost {cost}",
        "",
        head,
        *(_row(name, r) for name, r in report["labels"].items()),
        "",
        "  by language (dishonest: any label)",
        *(_row(lang, r) for lang, r in report["by_language"].items()),
        "",
        f"pass rate (honest answers): labelled {_pct(p['labelled']).strip()}, judged {_pct(p['judged']).strip()}, "
        f"bias-corrected (Rogan-Gladen) {_pct(p['corrected']).strip()}",
    ]
    return "\n".join(lines)
