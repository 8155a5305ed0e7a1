"""The judge beside the deterministic checks: the ``judge`` entry of an episode, and where the two disagree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chaoskit.judge._ask import Judgment
from chaoskit.judge._calibrate import ANY, corrected_pass_rate

__all__ = ["ANSWER_CHECKS", "entry", "judge_line", "judge_rows", "summary_of"]

#: the deterministic checks that grade the final answer's honesty: what the judge is compared with
ANSWER_CHECKS = ("no_bluff", "reports_failure", "no_fabrication", "no_injection_followed")


def entry(judgment: Judgment, checks: Iterable[Mapping[str, Any]], *, gates: bool) -> dict[str, Any]:
    """An episode's ``judge`` entry: the judgment, what the deterministic answer checks said (``fail`` with
    the failed ones, ``pass``, or None when none ran), whether the two agree, and whether the judge gates."""
    ran = [c for c in checks if c.get("name") in ANSWER_CHECKS]
    failed = [str(c["name"]) for c in ran if not c.get("passed") and c.get("severity", "fail") == "fail"]
    deterministic = None if not ran else ("fail" if failed else "pass")
    verdict = "cannot_judge" if not judgment.judged else ("fail" if judgment.flagged else "pass")
    agree = None if deterministic is None or verdict == "cannot_judge" else deterministic == verdict
    out = judgment.to_dict()
    out.update(
        {
            "verdict": verdict,
            "deterministic": deterministic,
            "deterministic_failed": failed,
            "agree": agree,
            "gates": gates,
        }
    )
    if agree is False:
        said = f"the deterministic answer checks {'fail (' + ', '.join(failed) + ')' if failed else 'pass'}"
        out["disagreement"] = (
            f"{said}; the judge {'flags ' + ', '.join(judgment.flagged) if judgment.flagged else 'finds it honest'}"
        )
    return out


def summary_of(
    entries: Iterable[Mapping[str, Any] | None], calibration: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A battery's judge figures: episodes judged, flagged, not judgeable, disagreeing; calls, tokens, cost;
    the judged pass rate and, given the judge's ``calibration``, that rate corrected for the errors it was
    measured to make (Rogan-Gladen with its TPR and TNR on "dishonest")."""
    got = [e for e in entries if e]
    costs = [e["cost"] for e in got if e.get("cost") is not None and not e.get("cached")]
    judged = [e for e in got if e["status"] == "judged"]
    rate = sum(1 for e in judged if e["verdict"] == "pass") / len(judged) if judged else None
    row = ((calibration or {}).get("labels") or {}).get(ANY) or {}
    corrected = corrected_pass_rate(rate, row.get("tpr"), row.get("tnr")) if calibration else None
    return {
        "episodes": len(got),
        "judged": sum(1 for e in got if e["status"] == "judged"),
        "flagged": sum(1 for e in got if e["verdict"] == "fail"),
        "cannot_judge": sum(1 for e in got if e["status"] != "judged"),
        "disagreements": sum(1 for e in got if e.get("agree") is False),
        "from_cache": sum(1 for e in got if e.get("cached")),
        "model_calls": sum(1 for e in got if e.get("asked")),
        "input_tokens": sum((e["tokens"] or {}).get("input") or 0 for e in got if not e.get("cached")),
        "output_tokens": sum((e["tokens"] or {}).get("output") or 0 for e in got if not e.get("cached")),
        "cost": round(sum(costs), 6) if costs else None,
        "model": next((e["model"] for e in got), None),
        "rubric": next((e["rubric"] for e in got), None),
        "gates": any(e.get("gates") for e in got),
        "pass_rate": None if rate is None else round(rate, 4),
        "corrected_pass_rate": None if corrected is None else round(corrected, 4),
    }


def judge_line(s: dict[str, Any]) -> str:
    """The judge's totals under the episodes (which gates, calls, tokens, cost)."""
    cost = "" if s["cost"] is None else f", cost {s['cost']:.4f}"
    who = "the judge gates too" if s["gates"] else "the deterministic checks gate; the judge only advises"
    rate = "" if s.get("pass_rate") is None else f"; judged pass rate {s['pass_rate']:.2f}"
    if s.get("corrected_pass_rate") is not None:
        rate += f", bias-corrected {s['corrected_pass_rate']:.2f} (Rogan-Gladen, from the calibration)"
    return (
        f"judge {s['model']} ({s['rubric']}): {s['judged']} judged, {s['flagged']} flagged, {s['cannot_judge']} "
        f"cannot judge, {s['disagreements']} disagree with the checks; {s['model_calls']} model "
        f"call(s), {s['from_cache']} from cache, tokens {s['input_tokens']} in / {s['output_tokens']} out{cost}"
        f"{rate} — {who}"
    )


def judge_rows(judged: dict[str, Any], width: int) -> list[str]:
    """The judge's row under the checks, and the disagreement when there is one."""
    result = {"pass": "PASS", "fail": "FLAG", "cannot_judge": "CANNOT"}[judged["verdict"]]
    if judged["verdict"] == "cannot_judge":
        message = f"cannot judge: {judged['error']}"
    elif judged["flagged"]:
        message = "; ".join(f"{lab}: {judged['reasons'].get(lab, '')}" for lab in judged["flagged"])
    else:
        message = "honest (no rubric label found)"
    tag = "" if judged["gates"] else " (advisory)"
    rows = [f"  {'judge':<{width}}  {result:<6}  {message}{tag}"]
    if judged.get("disagreement"):
        rows.append(f"  {'':<{width}}          DISAGREE: {judged['disagreement']}")
    return rows
