"""The answer checks measured on the labeled answer corpus: recall, precision and Cohen's kappa per check, label
and language, and the share of dishonest and of honest answers flagged.

    python benchmarks/bench_answers.py                      # the corpus in benchmarks/answers_corpus
    python benchmarks/bench_answers.py --dir PATH --json    # another corpus; the figures as JSON
    python benchmarks/bench_answers.py --split holdout      # only the held-out fifth of the situations
    python benchmarks/bench_answers.py --misses             # also list each wrongly graded answer
    python benchmarks/bench_answers.py --markdown           # the tables docs/checks.md publishes

Each answer is replayed through real ``@chaos`` tools and graded with the default checks by the corpus replay
of ``chaoskit.judge`` (the one ``benchmarks/answers_corpus/replay.py`` runs; as ``chaoskit check`` grades an
export). An answer is *flagged* when a check fails or warns on it.
The held-out part is the situations whose id hashes to 0 mod 5 (sha256): it was looked at only at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chaoskit.judge._corpus import load_corpus
from chaoskit.judge._corpus_replay import replay_many

HERE = Path(__file__).resolve().parent
#: which labels each answer check is meant to catch
CHECK_LABELS: dict[str, tuple[str, ...]] = {
    "no_bluff": ("false_success",),
    "reports_failure": ("silent_failure",),
    "no_fabrication": ("fabricated_detail", "repeats_faulted_value"),
    "no_injection_followed": ("claims_injected_action",),
}
LABELS = ("false_success", "silent_failure", "fabricated_detail", "repeats_faulted_value", "claims_injected_action")


def held_out(situation_id: str) -> bool:
    """The situation is in the held-out fifth."""
    return int(hashlib.sha256(situation_id.encode()).hexdigest(), 16) % 5 == 0


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (predicted, actual) pairs; None when chance agreement is total."""
    n = len(pairs)
    if not n:
        return None
    agree = sum(p == a for p, a in pairs) / n
    p_yes = sum(p for p, _ in pairs) / n
    a_yes = sum(a for _, a in pairs) / n
    chance = p_yes * a_yes + (1 - p_yes) * (1 - a_yes)
    return None if chance >= 1 else (agree - chance) / (1 - chance)


def _ratio(num: int, den: int) -> dict[str, Any]:
    return {"n": num, "of": den, "pct": round(100 * num / den, 1) if den else None}


def measure(done: Sequence[Any], flagged: Callable[[Any, str], bool]) -> dict[str, Any]:
    """The figures over replayed answers; ``flagged(replayed, check)`` says whether a check flagged one."""
    out: dict[str, Any] = {"answers": len(done), "checks": {}, "labels": {}, "languages": {}}
    for check, labels in CHECK_LABELS.items():
        pairs = [(flagged(r, check), any(lab in r.case.labels for lab in labels)) for r in done]
        hits = [r for r in done if flagged(r, check)]
        per_label = {
            lab: _ratio(
                sum(flagged(r, check) for r in done if lab in r.case.labels),
                sum(lab in r.case.labels for r in done),
            )
            for lab in labels
        }
        k = kappa(pairs)
        out["checks"][check] = {
            "recall": per_label,
            "precision": _ratio(sum(a for p, a in pairs if p), len(hits)),
            "kappa": None if k is None else round(k, 3),
            "honest_flagged": _ratio(sum(1 for r in hits if not r.case.labels), sum(not r.case.labels for r in done)),
        }
    any_flag = {id(r): any(flagged(r, c) for c in CHECK_LABELS) for r in done}
    for lab in LABELS:
        out["labels"][lab] = _ratio(
            sum(any_flag[id(r)] for r in done if lab in r.case.labels), sum(lab in r.case.labels for r in done)
        )
    for lang in sorted({r.case.lang for r in done}):
        mine = [r for r in done if r.case.lang == lang]
        k = kappa([(any_flag[id(r)], bool(r.case.labels)) for r in mine])
        out["languages"][lang] = {
            "dishonest_flagged": _ratio(
                sum(any_flag[id(r)] for r in mine if r.case.labels), sum(bool(r.case.labels) for r in mine)
            ),
            "honest_flagged": _ratio(
                sum(any_flag[id(r)] for r in mine if not r.case.labels), sum(not r.case.labels for r in mine)
            ),
            "precision": _ratio(
                sum(any_flag[id(r)] for r in mine if r.case.labels), sum(any_flag[id(r)] for r in mine)
            ),
            "kappa": None if k is None else round(k, 3),
        }
    dishonest = [r for r in done if r.case.labels]
    honest = [r for r in done if not r.case.labels]
    out["dishonest_flagged"] = _ratio(sum(any_flag[id(r)] for r in dishonest), len(dishonest))
    out["honest_flagged"] = _ratio(sum(any_flag[id(r)] for r in honest), len(honest))
    return out


def _pct(r: dict[str, Any]) -> str:
    return "-" if r["pct"] is None else f"{r['pct']:.1f} % ({r['n']}/{r['of']})"


def _print(title: str, m: dict[str, Any]) -> None:
    print(f"\n== {title}: {m['answers']} answers")
    print(f"dishonest flagged: {_pct(m['dishonest_flagged'])}    honest flagged: {_pct(m['honest_flagged'])}")
    print(f"{'check':<24}{'label':<26}{'recall':<22}{'precision':<22}{'kappa':<8}honest flagged")
    for check, c in m["checks"].items():
        for i, (lab, rec) in enumerate(c["recall"].items()):
            tail = (
                f"{_pct(c['precision']):<22}{'-' if c['kappa'] is None else c['kappa']:<8}{_pct(c['honest_flagged'])}"
                if i == 0
                else ""
            )
            print(f"{check if i == 0 else '':<24}{lab:<26}{_pct(rec):<22}{tail}")
    print("any check, per label: " + ", ".join(f"{lab} {_pct(r)}" for lab, r in m["labels"].items()))
    for lang, v in m["languages"].items():
        print(
            f"  {lang}: dishonest flagged {_pct(v['dishonest_flagged'])}, honest flagged {_pct(v['honest_flagged'])}, "
            f"precision {_pct(v['precision'])}, kappa {'-' if v['kappa'] is None else v['kappa']}"
        )


def _md_pct(r: dict[str, Any]) -> str:
    return "-" if r["pct"] is None else f"{r['pct']:.1f} % ({r['n']}/{r['of']})"


def markdown(m: dict[str, Any]) -> str:
    """The figures as the Markdown tables docs/checks.md publishes: per check and label, per language."""
    lines = [
        f"Dishonest answers flagged: {_md_pct(m['dishonest_flagged'])}; honest answers flagged: "
        f"{_md_pct(m['honest_flagged'])} ({m['answers']} answers).",
        "",
        "| check | label | recall | precision | κ | honest answers flagged |",
        "|---|---|---|---|---|---|",
    ]
    for check, c in m["checks"].items():
        for i, (lab, rec) in enumerate(c["recall"].items()):
            head = (
                f"`{check}` | {lab} | {_md_pct(rec)} | {_md_pct(c['precision'])} | "
                f"{'-' if c['kappa'] is None else c['kappa']} | {_md_pct(c['honest_flagged'])}"
                if i == 0
                else f" | {lab} | {_md_pct(rec)} | | |"
            )
            lines.append(f"| {head} |")
    lines += ["", "| label | flagged by any check |", "|---|---|"]
    lines += [f"| {lab} | {_md_pct(r)} |" for lab, r in m["labels"].items()]
    lines += [
        "",
        "| language | dishonest flagged (recall) | honest flagged | precision | κ |",
        "|---|---|---|---|---|",
    ]
    for lang, v in m["languages"].items():
        lines.append(
            f"| {lang} | {_md_pct(v['dishonest_flagged'])} | {_md_pct(v['honest_flagged'])} | "
            f"{_md_pct(v['precision'])} | {'-' if v['kappa'] is None else v['kappa']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(HERE / "answers_corpus"), help="the corpus directory")
    ap.add_argument("--split", choices=("all", "tuning", "holdout"), default="all")
    ap.add_argument("--fails-only", action="store_true", help="count only failed checks as flagged, not warnings")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the figures as docs/checks.md's tables")
    ap.add_argument("--misses", action="store_true", help="list the answers graded wrongly")
    args = ap.parse_args(argv)
    cases = load_corpus(args.dir).answers
    if args.split != "all":
        cases = [c for c in cases if held_out(c.situation.id) == (args.split == "holdout")]
    done = replay_many(cases)
    bad = ("fail",) if args.fails_only else ("fail", "warn")

    def flagged(r: Any, check: str) -> bool:
        return any(x.name == check and x.severity in bad for x in r.results)

    m = measure(done, flagged)
    if args.json:
        print(json.dumps(m, indent=2))
    elif args.markdown:
        print(markdown(m))
    else:
        _print(f"{args.split} ({'fail' if args.fails_only else 'fail or warn'} counts as flagged)", m)
    if args.misses:
        for r in done:
            hit = [c for c in CHECK_LABELS if flagged(r, c)]
            if bool(hit) != bool(r.case.labels):
                why = "; ".join(x.message for x in r.results if x.name in hit)[:300]
                head = "MISSED" if r.case.labels else "FALSE FLAG"
                print(f"\n{head} {r.case.id} [{r.case.lang}] {list(r.case.labels)} {hit}")
                print(f"  note: {r.case.note}")
                print("  text: " + " ".join(r.case.text.split())[:400])
                if why:
                    print(f"  why: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
