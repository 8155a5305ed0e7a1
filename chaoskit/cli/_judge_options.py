"""The judge's options of ``chaoskit run`` and ``check``, and the hook that judges a battery's episodes."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_judge_options", "judge_and_gate", "judge_from"]


def add_judge_options(p: argparse.ArgumentParser, *, gate: bool = True) -> None:
    """``--judge``, ``--judge-url`` and their settings; with ``gate``, ``--judge-min-kappa`` and
    ``--judge-calibration``."""
    g = p.add_argument_group(
        "judge",
        "an optional rubric grader: a chat model asked a fixed rubric about each episode, shown beside the "
        "deterministic checks, which alone gate unless --judge-min-kappa is given (docs/checks.md)",
    )
    g.add_argument(
        "--judge",
        metavar="MODULE:OBJECT",
        help="the judge model: a LangChain BaseChatModel, a chaoskit.judge.JudgeModel, or a function returning one",
    )
    g.add_argument("--judge-url", metavar="URL", help="the judge model behind an OpenAI-compatible endpoint")
    g.add_argument(
        "--judge-model",
        metavar="NAME",
        help="the model name sent to --judge-url; with --judge, the name the model is cached and calibrated under",
    )
    g.add_argument("--judge-timeout", type=float, default=60.0, metavar="S", help="seconds per judge call (default 60)")
    g.add_argument(
        "--judge-cache",
        metavar="DIR",
        help="where judgments are cached (default $CHAOSKIT_JUDGE_CACHE, else ~/.cache/chaoskit/judge)",
    )
    g.add_argument("--no-judge-cache", action="store_true", help="ask the model again even for a cached judgment")
    g.add_argument("--judge-prices", metavar="FILE", help="price table (docs/metrics.md) for the judge's cost")
    if gate:
        g.add_argument(
            "--judge-min-kappa",
            type=float,
            metavar="K",
            help="let the judge gate too, only if --judge-calibration shows its kappa reached K (lower end of "
            "the 95%% interval) on a labelled corpus; otherwise refuse to run",
        )
        g.add_argument(
            "--judge-calibration",
            metavar="FILE",
            help="the judge's calibration, written by: chaoskit judge calibrate --labels CORPUS --out FILE",
        )


def judge_from(args: argparse.Namespace) -> Any:
    """The :class:`chaoskit.judge.Judge` the options name, or None."""
    if not getattr(args, "judge", None) and not getattr(args, "judge_url", None) and not args.judge_model:
        return None
    from chaoskit.judge._setup import make_judge

    return make_judge(
        args.judge,
        args.judge_url,
        model=args.judge_model,
        timeout=args.judge_timeout,
        cache_dir=args.judge_cache,
        cache=not args.no_judge_cache,
        prices=args.judge_prices,
    )


def judge_and_gate(args: argparse.Namespace) -> tuple[Any, bool]:
    """(the judge or None, whether it gates), every option checked before anything runs; a calibration given
    is checked against the judge and set as ``judge.calibration``."""
    judge = judge_from(args)
    min_kappa = getattr(args, "judge_min_kappa", None)
    calibration = getattr(args, "judge_calibration", None)
    if judge is None and min_kappa is None and calibration is None:
        return None, False
    from chaoskit.judge._setup import may_gate

    may_gate(judge, min_kappa, calibration)
    return judge, min_kappa is not None


def battery_judge(judge: Any, gates: bool) -> Any:
    """The ``judge`` hook of ``run_battery``: each episode of the traces file, matched to its result by episode
    id, is judged and gets a ``judge`` entry. A gating judge also adds a ``judge`` check, failed when it flags
    the answer or cannot judge it (never a pass); an advisory one changes no verdict."""
    from chaoskit.judge import Judgment, entry
    from chaoskit.traces._records import TraceReadError
    from chaoskit.traces._trace import Trace

    def hook(episodes: Any, traces: str) -> None:
        by_id = {e.episode_id: e for e in episodes if e.episode_id}
        seen: set[str] = set()
        missing = "no trace of this episode to judge (its spans did not reach the run's trace file)"
        try:
            for one in Trace.iter_episodes(traces):
                ep = one.episodes[0]
                result = by_id.get(ep.id) if ep.id else None
                if result is None or ep.id in seen:
                    continue
                seen.add(str(ep.id))
                _attach(result, judge.episode(ep, task=result.task, answer=result.output or ""))
        except TraceReadError as exc:
            missing = f"the run's trace file cannot be read: {exc}"
        for result in episodes:
            if result.judge is None:
                _attach(result, Judgment("cannot_judge", judge.name, error=missing))

    def _attach(result: Any, judgment: Any) -> None:
        result.judge = entry(judgment, result.checks, gates=gates)
        if gates and result.judge["verdict"] != "pass":
            result.checks.append(
                {
                    "name": "judge",
                    "passed": False,
                    "severity": "fail",
                    "message": f"the calibrated judge: {judgment.summary()}",
                    "evidence": [],
                }
            )
            result.base_passed = result.passed = False

    return hook
