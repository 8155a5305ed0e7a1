"""The fault cases of a test session as the runner's results: one graded episode per case, the summary, the reports.

Each case (a test that ran a ``chaos_episode``) becomes an ``EpisodeResult`` in the runner's JSON shape, so
that ``chaoskit.report.render_html`` renders a session as it renders a battery, and case dicts cross process
boundaries (pytest-xdist workers) as plain JSON. Nothing here imports pytest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import score
from chaoskit.grading.checks import run_checks
from chaoskit.plan._model import Plan
from chaoskit.report._html import write_html
from chaoskit.runner._grade_episode import timeline
from chaoskit.runner._results import BatteryResult, EpisodeResult, Verdict
from chaoskit.runner._summary import summarize
from chaoskit.traces._trace import Trace

__all__ = ["TEST_CHECK", "case_result", "results_of", "summary_lines", "write_report"]

#: the name of the criterion that holds the test's own outcome in a case's ``checks``
TEST_CHECK = "test"


def _checks(trace: Trace, asserted: Sequence[CheckResult]) -> list[CheckResult]:
    """The default checks, with each check the test asserted itself in its place (it carries the test's own
    parameters, e.g. ``required_tools``); asserted checks that are not defaults follow."""
    mine = {r.name: r for r in asserted}
    try:
        defaults = run_checks(trace)
    except Exception as exc:  # a check that breaks is a failed check, never a crash of the session
        defaults = [CheckResult("checks", False, "fail", f"the checks raised {type(exc).__name__}: {exc}")]
    out = [mine.pop(r.name, r) for r in defaults]
    return [*out, *mine.values()]


def case_result(
    *,
    trace: Trace,
    scenario: str,
    source: str | None,
    task: str,
    agent: str,
    seed: int,
    plan: Plan | None,
    passed: bool,
    error: str | None,
    duration_s: float,
    asserted: Sequence[CheckResult],
    replay: str,
    tags: Sequence[str],
) -> dict[str, Any]:
    """One fault case as the runner's episode dict (``EpisodeResult.to_dict()``).

    ``checks`` holds the test's outcome first (criterion ``test``), then the default checks run on the trace
    through ``run_checks`` (those the test asserted replaced by the asserted results). ``passed`` is the test's
    outcome: its own assertions are the judge; the checks say what else the trace shows."""
    checks = _checks(trace, asserted)
    value = score(trace, checks=checks).value
    ep = trace.episodes[0] if trace.episodes else None
    by_tool: dict[str, int] = {}
    for a in trace.attempts:
        by_tool[a.tool] = by_tool.get(a.tool, 0) + 1
    test = {
        "name": TEST_CHECK,
        "passed": passed,
        "severity": "pass" if passed else "fail",
        "message": "the test passed" if passed else (error or "the test failed"),
        "evidence": [],
    }
    result = EpisodeResult(
        scenario=scenario,
        source=source,
        repetition=0,
        epsilon=0.0,
        intensity=0.0,
        seed=seed,
        task=task,
        edits=[],
        agent=agent,
        outcome=(ep.outcome if ep is not None and ep.outcome else "completed"),
        error=error,
        output=ep.output if ep is not None else None,
        duration_s=round(duration_s, 6),
        attempts={
            "total": len(trace.attempts),
            "by_tool": by_tool,
            "faults": sum(a.fault_type is not None for a in trace.attempts),
            "duplicate_writes": int(any(r.name == "no_duplicate_writes" and not r.passed for r in checks)),
            "timeline": timeline(trace, ep.start_time if ep is not None else None),
        },
        checks=[test, *(r.to_dict() for r in checks)],
        score=round(float(value), 2),
        oracle=None,
        base_passed=passed,
        passed=passed,
        replay=replay,
        trace_id=ep.trace_id if ep is not None else None,
        episode_id=ep.id if ep is not None else None,
        tags=sorted(set(tags)),
        domain=None,
        faults=sorted({f.type for f in plan.faults}) if plan is not None else [],
    )
    return result.to_dict()


def results_of(cases: Sequence[Mapping[str, Any]], config: Mapping[str, Any], elapsed_s: float = 0.0) -> dict[str, Any]:
    """The session's results dict (the runner's ``--json`` shape) from its case dicts, in nodeid order.

    The summary is the runner's; the verdict is the tests': ok when every fault case passed, with the
    repeated irreversible writes the runner's gate found listed beside."""
    episodes = sorted((EpisodeResult.from_dict(dict(c)) for c in cases), key=lambda e: (e.scenario, e.agent))
    config = {"k": 1, "repeat": 1, **config}
    summary, gate = summarize(episodes, config)
    failed = [e for e in episodes if not e.passed]
    verdict = Verdict(ok=not failed, duplicate_writes=gate.duplicate_writes)
    if failed:
        verdict.reasons.append(
            f"{len(failed)} of {len(episodes)} fault case(s) failed: " + ", ".join(e.scenario for e in failed[:5])
        )
    return BatteryResult(dict(config), episodes, summary, verdict, elapsed_s).to_dict()


def write_report(results: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``results`` to ``path``: the HTML report when it ends in ``.html``/``.htm``, else JSON results."""
    p = Path(path)
    if p.suffix.lower() in (".html", ".htm"):
        try:
            write_html(results, p)
        except ChaoskitError as exc:
            raise ChaoskitError(f"--chaos-report {exc}") from None
        return p
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    except OSError as exc:
        raise ChaoskitError(f"--chaos-report {p}: cannot write the report: {exc.strerror or exc}") from None
    return p


def _failed_check_counts(episodes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in episodes:
        for c in e.get("checks", []):
            if c.get("name") != TEST_CHECK and not c.get("passed") and c.get("severity", "fail") == "fail":
                counts[c["name"]] = counts.get(c["name"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summary_lines(results: Mapping[str, Any], *, max_failed: int = 20) -> list[str]:
    """The terminal summary: the cases (passed, failed), the failed checks with their counts, the mean score,
    and per failed case its first message line and the command that reruns it."""
    episodes: list[Mapping[str, Any]] = list(results.get("episodes", []))
    n = len(episodes)
    passes = sum(bool(e.get("passed")) for e in episodes)
    mean = sum(float(e.get("score", 0.0)) for e in episodes) / n if n else 0.0
    seed = results.get("config", {}).get("seed")
    lines = [
        f"{n} fault case{'s' if n != 1 else ''}: {passes} passed, {n - passes} failed; mean score {mean:.1f}"
        + (f"; seed {seed}" if seed is not None else "")
    ]
    counts = _failed_check_counts(episodes)
    if counts:
        lines.append("failed checks: " + ", ".join(f"{name} ({k})" for name, k in counts.items()))
    else:
        lines.append("failed checks: none")
    failed = [e for e in episodes if not e.get("passed")]
    for e in failed[:max_failed]:
        first = (e.get("error") or "failed").strip().splitlines()[0] if (e.get("error") or "").strip() else "failed"
        lines.append(f"FAILED {e.get('scenario')} (score {float(e.get('score', 0.0)):.0f}): {first}")
        lines.append(f"  rerun: {e.get('replay')}")
    if len(failed) > max_failed:
        lines.append(f"... and {len(failed) - max_failed} more failed case(s)")
    judged = [e for e in episodes if isinstance(e.get("judge"), Mapping)]
    if judged:
        from chaoskit.judge import judge_line, judge_rows, summary_of

        lines.append(judge_line(summary_of(e["judge"] for e in judged)))
        for e in judged:
            if e["judge"].get("agree") is False or e["judge"]["verdict"] != "pass":
                lines.append(f"{e.get('scenario')}:")
                lines.extend(judge_rows(e["judge"], 5))
    return lines
