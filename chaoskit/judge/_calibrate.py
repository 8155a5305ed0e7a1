"""Calibrating a judge on a labelled corpus, the calibration file, and the gate that refuses an uncalibrated judge."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.judge._agreement import BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED, Agreement, agreement, rogan_gladen
from chaoskit.judge._ask import Judge, Judgment
from chaoskit.judge._corpus import Answer, load_corpus
from chaoskit.judge._corpus_replay import iter_replayed as _replayed
from chaoskit.judge._input import judge_input
from chaoskit.judge._rubric import LABELS, RUBRIC_SHA, RUBRIC_VERSION

__all__ = ["ANY", "CALIBRATION_KIND", "calibrate", "check_calibration", "corrected_pass_rate"]

#: the ``kind`` of a calibration file (``chaoskit judge calibrate --out FILE``)
CALIBRATION_KIND = "chaoskit-judge-calibration"
#: the row of "any label": dishonest or not, which is what a gating judge decides
ANY = "dishonest"


def _flags(a: Answer, j: Judgment, label: str | None) -> tuple[bool, bool]:
    """(labelled, judged) for one answer and question; a judgment that could not be made counts as wrong."""
    truth = bool(a.labels) if label is None else label in a.rubric_labels
    if not j.judged:
        return truth, not truth
    return truth, bool(j.flagged) if label is None else bool(j.verdicts.get(label))


def _table(rows: list[tuple[Answer, Judgment]], label: str | None) -> Agreement:
    return agreement([_flags(a, j, label) for a, j in rows])


def calibrate(
    judge: Judge, labels: str | os.PathLike[str], *, seed: int = 0, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Judge every answer of the corpus at ``labels`` and measure the judge against the labels: per rubric
    label and for "any label", TPR and TNR (Wilson 95 % intervals) and Cohen's kappa (percentile bootstrap 95 %
    interval), kappa by language, and the pass rates. A judgment that cannot be made counts as a wrong one."""
    corpus = load_corpus(labels)
    calls, hits = judge.calls, judge.hits
    rows: list[tuple[Answer, Judgment]] = []
    for i, (a, s, ep) in enumerate(_replayed(corpus, seed=seed), 1):
        rows.append((a, judge.ask(judge_input(ep, task=s.task, answer=a.text))))
        if progress is not None:
            progress(i, len(corpus.answers))
    whole = _table(rows, None)
    honest_true = sum(1 for a, _ in rows if not a.labels) / len(rows)
    judged = [j for _, j in rows if j.judged]
    observed = sum(1 for j in judged if not j.flagged) / len(judged) if judged else None
    langs = sorted({a.lang for a, _ in rows})
    spent = [j for _, j in rows if not j.cached]
    costs = [j.cost for j in spent if j.cost is not None]
    return {
        "kind": CALIBRATION_KIND,
        "version": 1,
        "rubric": RUBRIC_VERSION,
        "rubric_sha": RUBRIC_SHA,
        "model": judge.name,
        "corpus": {
            "path": os.path.abspath(corpus.path),
            "sha256": corpus.sha256,
            "answers": len(rows),
            "situations": len(corpus.situations),
            "languages": langs,
        },
        "cannot_judge": len(rows) - len(judged),
        "labels": {ANY: whole.to_dict(), **{lab: _table(rows, lab).to_dict() for lab in LABELS}},
        "by_language": {lang: _table([(a, j) for a, j in rows if a.lang == lang], None).to_dict() for lang in langs},
        "pass_rate": {
            "labelled": round(honest_true, 4),
            "judged": None if observed is None else round(observed, 4),
            "corrected": _round(corrected_pass_rate(observed, whole.tpr, whole.tnr)),
        },
        "method": {
            "intervals": "Wilson score 95 % for TPR and TNR; percentile bootstrap 95 % for kappa "
            f"({BOOTSTRAP_ROUNDS} resamples, seed {BOOTSTRAP_SEED})",
            "cannot_judge": "counted as a wrong verdict",
            "corrected_pass_rate": "Rogan-Gladen: 1 - (q + TNR - 1) / (TPR + TNR - 1), q the judged dishonest rate",
        },
        "usage": {
            "model_calls": judge.calls - calls,
            "from_cache": judge.hits - hits,
            "input_tokens": sum(j.input_tokens or 0 for j in spent),
            "output_tokens": sum(j.output_tokens or 0 for j in spent),
            "cost": round(sum(costs), 6) if costs else None,
            "currency": next((j.currency for j in spent if j.currency), None),
        },
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def corrected_pass_rate(observed: float | None, tpr: float | None, tnr: float | None) -> float | None:
    """The share of honest episodes behind a judge's observed pass rate, given its TPR and TNR on the
    "dishonest" question (Rogan-Gladen); None when it cannot be told."""
    if observed is None:
        return None
    prevalence = rogan_gladen(1.0 - observed, tpr, tnr)
    return None if prevalence is None else 1.0 - prevalence


def _corpus_sha(path: str) -> str | None:
    try:
        return load_corpus(path).sha256
    except (ChaoskitError, OSError):
        return None


def check_calibration(path: str | os.PathLike[str], judge_name: str, min_kappa: float) -> dict[str, Any]:
    """The calibration file at ``path`` if it lets ``judge_name`` gate at ``min_kappa``; else a
    :class:`ChaoskitError` saying why. It must be a calibration of this model under this rubric, its corpus
    must be unchanged since (when it is still there), and the lower end of the 95 % interval of kappa on
    "dishonest" must reach ``min_kappa``: a judge gates only where its agreement with people was measured."""
    where = f"--judge-calibration {path}"
    how = f"run: chaoskit judge calibrate --labels CORPUS --judge ... --out {path}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ChaoskitError(f"{where}: cannot read it ({exc.strerror or exc}); {how}") from None
    except ValueError:
        raise ChaoskitError(f"{where}: not JSON; {how}") from None
    if not isinstance(data, dict) or data.get("kind") != CALIBRATION_KIND:
        raise ChaoskitError(f"{where}: not a judge calibration (kind {CALIBRATION_KIND!r}); {how}")
    refuse = f"refusing to gate on judge {judge_name!r}"
    if data.get("rubric") != RUBRIC_VERSION or data.get("rubric_sha") != RUBRIC_SHA:
        raise ChaoskitError(
            f"{where}: {refuse}: calibrated under rubric {data.get('rubric')!r}, this is {RUBRIC_VERSION!r}; {how}"
        )
    if data.get("model") != judge_name:
        raise ChaoskitError(f"{where}: {refuse}: the calibration is of model {data.get('model')!r}; {how}")
    corpus = data.get("corpus") or {}
    if corpus.get("path") and os.path.exists(corpus["path"]) and _corpus_sha(corpus["path"]) != corpus.get("sha256"):
        raise ChaoskitError(f"{where}: {refuse}: the corpus {corpus['path']} changed since it was calibrated; {how}")
    row = (data.get("labels") or {}).get(ANY) or {}
    interval = row.get("kappa_ci95")
    low = interval[0] if isinstance(interval, list) and interval else None
    if not isinstance(low, int | float) or low < min_kappa:
        raise ChaoskitError(
            f"{where}: {refuse}: its kappa on {corpus.get('answers', '?')} labelled answers is {row.get('kappa')} "
            f"(95 % interval {interval}); gating needs the interval's lower end >= --judge-min-kappa {min_kappa:g}"
        )
    return data
