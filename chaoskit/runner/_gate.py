"""The CI gate: its options, its rules (score floor, absolute rules, attempt regressions) and baselines."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__
from chaoskit.grading._evidence import CANNOT_GRADE
from chaoskit.runner._results import RESULTS_KIND, EpisodeResult, Summary, Verdict, agent_label

__all__ = [
    "BASELINE_KIND",
    "baseline_attempts",
    "cell_key",
    "check_gate",
    "explain",
    "load_baseline",
    "make_baseline",
    "verdict",
]

#: the ``kind`` of a baseline file (``--baseline FILE --update-baseline``)
BASELINE_KIND = "chaoskit-baseline"


def check_gate(fail_under: float | None, attempt_tolerance: float | None) -> None:
    """The gate options of ``chaoskit run`` and ``chaoskit merge``: a value that can never be met is a typo."""
    if fail_under is not None and not 0.0 <= fail_under <= 100.0:
        raise ChaoskitError(f"--fail-under must be a score from 0 to 100, got {fail_under:g}")
    if attempt_tolerance is not None and not attempt_tolerance >= 0.0:
        raise ChaoskitError(
            f"--attempt-tolerance must be a fraction >= 0 (0.1 allows a 10% rise), got {attempt_tolerance:g}"
        )


def cell_key(eps: float, lam: float) -> str:
    """How a baseline names a grid point: ``eps=0,lam=0.1``."""
    return f"eps={eps:g},lam={lam:g}"


def baseline_attempts(baseline: Mapping[str, Any], scenario: str, agent: str, eps: float, lam: float) -> float | None:
    """A baseline's mean attempts for one cell: ``attempts[scenario][agent][eps=..,lam=..]``, or, in a baseline
    written before batteries had several agents, ``attempts[scenario][eps=..,lam=..]`` (for any agent)."""
    by_scenario = baseline.get("attempts", {}).get(scenario, {})
    by_agent = by_scenario.get(agent)
    if isinstance(by_agent, Mapping):
        value = by_agent.get(cell_key(eps, lam))
    else:
        value = by_scenario.get(cell_key(eps, lam))
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def verdict(
    episodes: Sequence[EpisodeResult], summary: Summary, config: Mapping[str, Any], baseline: Mapping[str, Any] | None
) -> Verdict:
    """The CI verdict of a graded battery: the ``--fail-under`` floor, a battery where nothing ran or nothing
    went through chaoskit, an episode that could not be graded (``cannot_grade``: chaos did not reach the tools
    its plan names), a repeated irreversible write (absolute), attempt counts rising against ``baseline``."""
    v = Verdict(ok=True)
    fail_under = config.get("fail_under")
    mean = summary.overall["mean_score"]
    if fail_under is not None and mean < float(fail_under):
        v.reasons.append(f"mean score {mean:.1f} is below --fail-under {float(fail_under):g}")
    if episodes and not any(e.outcome == "completed" for e in episodes):
        # nothing ran to the end: almost always a broken agent command or factory, not a result to pass
        first = next((e.error for e in episodes if e.error), None)
        v.reasons.append(
            f"no episode completed: all {len(episodes)} ended as {', '.join(sorted({e.outcome for e in episodes}))}"
            + (f" (first error: {first[:200]})" if first else "")
        )
    elif episodes and not any(e.attempts.get("total", 0) for e in episodes):
        # every episode ran, yet no tool call went through chaoskit: no fault could fire, nothing was tested
        v.reasons.append(
            f"no tool attempt was recorded in any of the {len(episodes)} episodes: the agent's tools do not go "
            "through chaoskit (wrap them with @chaos, chaoskit_langchain.chaos_tools or "
            "chaoskit_langgraph.instrument_graph)"
        )
    many = len({e.agent for e in episodes}) > 1
    ungraded = [e for e in episodes if any(c["name"] == CANNOT_GRADE for c in e.checks)]
    if ungraded:
        # an episode chaos did not reach has no verdict: never part of a green run, whatever the mean score
        e = ungraded[0]
        why = next(c["message"] for c in e.checks if c["name"] == CANNOT_GRADE).removeprefix("cannot grade: ")
        who = f" [{e.agent_label}]" if many else ""
        v.reasons.append(
            f"{len(ungraded)} episode(s) could not be graded (first: {e.scenario}{who} rep {e.repetition}: "
            f"{why[:297] + '...' if len(why) > 300 else why})"
        )
    for e in episodes:
        # the no_duplicate_writes check is the one judge of a repeated write (no second count here)
        dup = [c for c in e.checks if c["name"] == "no_duplicate_writes" and not c["passed"]]
        if dup:
            msg = dup[0]["message"]
            short = msg if len(msg) <= 160 else msg[:157] + "..."
            who = f" [{e.agent_label}]" if many else ""
            v.duplicate_writes.append(
                f"{e.scenario}{who} rep {e.repetition} eps {e.epsilon:g} lam {e.intensity:g}: {short}"
                f"  (replay: {e.replay})"
            )
    if v.duplicate_writes:
        v.reasons.append(f"{len(v.duplicate_writes)} episode(s) repeated an irreversible write (absolute rule)")
    if baseline:
        tol = float(config.get("attempt_tolerance") or 0.0)
        many = len({c.agent for c in summary.cells}) > 1
        for c in summary.cells:
            old = baseline_attempts(baseline, c.scenario, c.agent, c.epsilon, c.intensity)
            if old is not None and c.mean_attempts > float(old) * (1 + tol) + 1e-9:
                who = f" [{agent_label(c.agent)}]" if many else ""
                v.regressions.append(
                    f"{c.scenario}{who} ({cell_key(c.epsilon, c.intensity)}): mean attempts "
                    f"{c.mean_attempts:g}, baseline {float(old):g}"
                )
        if v.regressions:
            v.reasons.append(f"attempt counts rose against the baseline in {len(v.regressions)} scenario cell(s)")
    v.ok = not v.reasons
    return v


def explain(v: Verdict, episodes: Sequence[EpisodeResult], config: Mapping[str, Any], mean_score: float) -> str:
    """One sentence on what the verdict rests on. A PASS that rests on the absolute rules alone says so, with the
    share of episodes that passed, since a run in which every episode failed is green without a gate on them."""
    n = len(episodes)
    failing = sum(not e.passed for e in episodes)
    if not v.ok:
        first = v.reasons[0] if v.reasons else "the gate failed"
        more = len(v.reasons) - 1
        return first + (f" (and {more} more reason{'s' * (more != 1)})" if more > 0 else "")
    exp = v.expectations
    if exp is not None:
        expected = sum(1 for e in episodes if not e.passed and [e.scenario, e.agent] in exp.get("expected_fail", []))
        text = f"{exp.get('met', 0)} of {exp.get('met', 0)} expected outcomes met"
        if failing:
            text += f"; the {expected} failing episode{'s were' if expected != 1 else ' was'} expected by the table"
        return text
    fail_under = config.get("fail_under")
    if fail_under is not None:
        return f"mean score {mean_score:.1f} >= --fail-under {float(fail_under):g}, and no absolute rule was broken"
    if not failing:
        return f"all {n} episode{'s' * (n != 1)} passed"
    share = (n - failing) / n * 100 if n else 0.0
    return (
        f"on the absolute rules only: {share:.0f} % of episodes passed ({failing} of {n} failed); "
        "add --fail-under or --expect to gate on them"
    )


def _attempts_of(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{scenario: {agent: {cell key: mean attempts}}}`` from cells as dicts (a cell without an agent, from a
    results file written before batteries had several agents, gives the old ``{scenario: {cell key: ...}}``)."""
    attempts: dict[str, Any] = {}
    for c in cells:
        key = cell_key(c["epsilon"], c["intensity"])
        if c.get("agent"):
            attempts.setdefault(c["scenario"], {}).setdefault(c["agent"], {})[key] = c["mean_attempts"]
        else:
            attempts.setdefault(c["scenario"], {})[key] = c["mean_attempts"]
    return attempts


def make_baseline(summary: Summary) -> dict[str, Any]:
    """A baseline from a green run: each cell's mean attempt count (per scenario, agent and grid point), and
    the mean score."""
    attempts = _attempts_of([c.to_dict() for c in summary.cells])
    return {
        "kind": BASELINE_KIND,
        "version": 2,
        "chaoskit": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "mean_score": summary.overall["mean_score"],
        "attempts": attempts,
    }


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A baseline file, or a results file (``--json`` output) to compare against; None when it does not exist."""
    p = Path(path)
    if not p.exists():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ChaoskitError(f"{p}: cannot read the baseline: {exc}") from None
    if isinstance(data, dict) and data.get("kind") == RESULTS_KIND:
        s = data.get("summary", {})
        attempts = _attempts_of(s.get("cells", []))
        return {"kind": BASELINE_KIND, "attempts": attempts, "mean_score": s.get("overall", {}).get("mean_score")}
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise ChaoskitError(f'{p}: not a chaoskit baseline (expected "kind": "{BASELINE_KIND}")')
    return data
