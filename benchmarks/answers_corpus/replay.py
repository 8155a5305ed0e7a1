"""Load the labeled answer corpus, replay its situations through real ``@chaos`` tools, and grade them.

    python benchmarks/answers_corpus/replay.py --stats           # the corpus's counts (README figures)
    python benchmarks/answers_corpus/replay.py --show SITUATION  # what the agent received on each call
    python benchmarks/answers_corpus/replay.py --grade [ID...]   # the default checks' verdicts per answer

Each answer is one episode: a scripted agent makes exactly the situation's calls, in order, through ``@chaos``
tools under a plan built from the calls' faults (``on_call`` is the call's position among the calls of its
tool), catches tool errors as an agent would, and gives the answer's text as its final answer. The spans go to
an OTLP-JSON Lines file, which is read back with ``chaoskit.Trace.load`` and graded episode by episode with
``chaoskit.checks.run_checks``, as ``chaoskit check FILE`` does.

The loading (schema, checks, error messages) and the replay live in the package, in ``chaoskit.judge``'s corpus
modules (``chaoskit judge calibrate --labels`` reads the same corpus); this file is their command line and keeps
the names the tests and ``benchmarks/bench_answers.py`` use.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from chaoskit.judge._corpus import (
    KINDS,
    LABELS,
    LANGS,
    RAISABLE,
    RAISING,
    Call,
    Case,
    CorpusError,
    Situation,
    Tool,
    fault_raises,
    situations_of,
    stats,
)
from chaoskit.judge._corpus import load_corpus as _load
from chaoskit.judge._corpus_replay import Replayed, plan_for, received_of, replay_many
from chaoskit.judge._corpus_replay import replay_case as replay

__all__ = [
    "HERE",
    "KINDS",
    "LABELS",
    "LANGS",
    "RAISABLE",
    "RAISING",
    "Call",
    "Case",
    "CorpusError",
    "Replayed",
    "Situation",
    "Tool",
    "fault_raises",
    "load_all",
    "load_corpus",
    "plan_for",
    "received_of",
    "replay",
    "replay_many",
    "situations_of",
    "stats",
]

HERE = Path(__file__).resolve().parent


def load_corpus(directory: str | Path = HERE) -> list[Case]:
    """Every answer of every ``*.yaml`` file in ``directory``, validated; a bad file raises CorpusError."""
    return _load(directory).answers


def load_all(directory: str | Path = HERE) -> tuple[dict[str, Situation], list[Case]]:
    """Every situation and every answer of the corpus in ``directory``, validated."""
    corpus = _load(directory)
    return corpus.situations, corpus.answers


def _print_show(sits: Mapping[str, Situation], sid: str) -> int:
    if sid not in sits:
        print(f"no situation {sid!r}", file=sys.stderr)
        return 2
    s = sits[sid]
    print(f"plan: {json.dumps(plan_for(s).to_dict()['faults'], default=str)}")
    for call, got in zip(s.calls, received_of(s), strict=True):
        shown = got["result"] if got["ok"] else got["error"]
        print(f"{call.tool}({json.dumps(call.args)}) -> {json.dumps(shown, ensure_ascii=False, default=str)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(HERE), help="the corpus directory (default: this file's)")
    ap.add_argument("--stats", action="store_true", help="print the corpus's counts as JSON")
    ap.add_argument("--show", metavar="SITUATION", help="replay a situation and print what each call returned")
    ap.add_argument("--grade", nargs="*", metavar="ID", help="replay and grade answers (all, or these ids)")
    args = ap.parse_args(argv)
    try:
        sits, cases = load_all(args.dir)
    except CorpusError as exc:
        print(f"corpus error: {exc}", file=sys.stderr)
        return 2
    if args.show:
        return _print_show(sits, args.show)
    if args.grade is not None:
        chosen = [c for c in cases if not args.grade or c.id in args.grade or c.situation.id in args.grade]
        for r in replay_many(chosen):
            print(f"{r.case.id:50} labels={','.join(r.case.labels) or '-':40} flagged={','.join(r.flagged) or '-'}")
        return 0
    print(json.dumps(stats(cases), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
