"""Whether an episode can be graded at all: chaos must have reached the tools its plan names (no evidence, no pass).

An episode whose root span carries a plan (``chaoskit.plan``) with faults cannot be graded when

- the faults name tools (``tool: issue_refund``, a glob, a list; ``*`` names none) and no attempt of any of
  them went through chaoskit; or
- the model asked for tools the faults target (``chaoskit.episode.tool_calls``, counted from the model steps
  recorded through chaoskit, whatever the content capture) and not one call of those tools has an attempt span,
  even though other tools have (a subagent's tool run inside another tool); or
- no attempt at all went through chaoskit while the model asked for tools.

Such an episode is never a pass: :func:`evidence_gaps` gives one failed ``cannot_grade`` result for it, which
``run_checks`` returns instead of the checks' verdicts, ``score`` turns into 0, ``chaoskit check`` into exit 2
and the battery runner into a failed episode.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any

from chaoskit.grading._modelcalls import model_calls
from chaoskit.grading._result import CheckResult, names, times, where
from chaoskit.semconv import EPISODE_MODEL_CALLS, EPISODE_TOOL_CALLS, PLAN
from chaoskit.traces._records import EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["ATTACH_HINT", "CANNOT_GRADE", "evidence_gaps", "planned_selectors", "selector_matches"]

#: the name of the result an episode that cannot be graded gets (``CheckResult.name``)
CANNOT_GRADE = "cannot_grade"

#: how to put chaoskit in front of tools it did not reach
ATTACH_HINT = (
    "attach chaoskit to the tools it missed: @chaos on the tool, chaoskit_langchain.chaos_tools or ChaosMiddleware "
    "on the agent that owns them, chaoskit_langgraph.instrument_graph(...) on the graph that runs them (a "
    "subagent's or worker's own graph too), or ChaosCallbackHandler in the run's callbacks, which reaches "
    "subagents through inherited callbacks (see docs/langchain.md)"
)

#: what the engine leaves in place of the items of a list it cut to fit the attribute (``…[+384 items]``)
_CUT = "…[+"

#: the selectors of a plan's text, by the text (episodes of one scenario repeat the same plan)
_SELECTORS: dict[str, tuple[tuple[str, ...], int, bool] | None] = {}


def selector_matches(selector: tuple[str, ...], tool: str) -> bool:
    """Whether a fault's ``tool`` selector names ``tool``: exactly, by ``*`` or by a glob. The same rule as
    ``chaoskit.plan``'s ``tool_matches``, kept here because the plan layer loads pydantic, which ``chaoskit
    check`` must not."""
    for name in selector:
        if name == tool or name == "*":
            return True
        if any(c in name for c in "*?[") and fnmatch.fnmatchcase(tool, name):
            return True
    return False


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def planned_selectors(ep: EpisodeRecord) -> tuple[tuple[str, ...], int, bool] | None:
    """The tool selectors of the episode's plan that name tools (``*`` left out), the number of its faults, and
    whether the plan is whole (a long plan is cut on the root span: its first faults, then ``…[+N items]``);
    None when the episode has no plan, or its plan text cannot be read."""
    text = ep.attributes.get(PLAN)
    if not isinstance(text, str):
        return None
    if text in _SELECTORS:
        return _SELECTORS[text]
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    found: tuple[tuple[str, ...], int, bool] | None = None
    faults = data.get("faults") if isinstance(data, Mapping) else None
    if isinstance(faults, list):
        named: list[str] = []
        whole = True
        for fault in faults:
            if not isinstance(fault, Mapping):
                whole = False  # the cut mark in place of the faults left out
                continue
            # a fault without ``tool`` targets every tool; a cascading failure also names its dependents
            for key in ("tool", "dependents"):
                for n in _names(fault.get(key)):
                    if n.startswith(_CUT):
                        whole = False
                    elif n != "*":
                        named.append(n)
        found = (tuple(dict.fromkeys(named)), len(faults), whole)
    if len(_SELECTORS) >= 256:
        _SELECTORS.clear()
    _SELECTORS[text] = found
    return found


def _asked(ep: EpisodeRecord) -> dict[str, int]:
    """The tool calls the model asked for (``chaoskit.episode.tool_calls``), by tool; empty when not recorded."""
    raw = ep.attributes.get(EPISODE_TOOL_CALLS)
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    if not isinstance(data, Mapping):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and type(v) is int and v > 0}


#: plan text -> whether it has a model fault (``target: model``)
_MODEL_PLANS: dict[str, bool] = {}


def _plans_model_faults(ep: EpisodeRecord) -> bool:
    """Whether the episode's plan has a model fault (``target: model``); False when it cannot be read."""
    text = ep.attributes.get(PLAN)
    if not isinstance(text, str) or '"model"' not in text:
        return False
    found = _MODEL_PLANS.get(text)
    if found is None:
        try:
            faults = json.loads(text).get("faults")
        except (ValueError, AttributeError):
            faults = None
        found = isinstance(faults, list) and any(isinstance(f, Mapping) and f.get("target") == "model" for f in faults)
        if len(_MODEL_PLANS) >= 256:
            _MODEL_PLANS.clear()
        _MODEL_PLANS[text] = found
    return found


def _gap(ep: EpisodeRecord) -> str | None:
    """Why ``ep`` cannot be graded, or None when chaos reached what its plan names (or it has no plan)."""
    if EPISODE_MODEL_CALLS not in ep.attributes and _plans_model_faults(ep):
        return (
            "the plan has model faults (target: model), but no model call of this episode went through chaoskit, "
            "so none could fire: put ChaosMiddleware in the agent's middleware, ChaosCallbackHandler(model_faults="
            "True) in the run's callbacks, or instrument_graph(graph, model_faults=True), see docs/faults.md"
        )
    if _plans_model_faults(ep):
        read = model_calls(ep)
        calls = read if isinstance(read, list) else []
        skipped = sorted({c.skipped for c in calls if c.skipped})
        if skipped and not any(c.fault for c in calls):
            return (
                f"the plan's model faults were never applied: {', '.join(skipped)} skipped (chaoskit.fault.skipped) "
                "by an entry point that cannot change a model's answer; use ChaosMiddleware, see docs/faults.md"
            )
    plan = planned_selectors(ep)
    if plan is None or plan[1] == 0:
        return None
    selectors, _, whole = plan
    attempted = {a.tool for a in ep.attempts}
    reached = any(selector_matches(selectors, t) for t in attempted) if selectors else bool(attempted)
    if reached and EPISODE_TOOL_CALLS not in ep.attributes:
        return None  # the common case, graded at the cost of a set and a few name comparisons
    asked = _asked(ep)
    targeted = [t for t in asked if t not in attempted and (not selectors or selector_matches(selectors, t))]
    ran = names([f"{t} ({times(asked[t])})" for t in sorted(targeted)])
    if selectors and not reached and whole:  # a cut plan may name tools that were reached
        why = (
            f"the plan's faults name {names(list(selectors))}, but no attempt of "
            f"{'it' if len(selectors) == 1 else 'any of them'} went through chaoskit"
        )
        if ran:
            why += f"; the model asked for {ran}, which ran without chaoskit"
        elif attempted:
            why += f" (attempts recorded only for {names(sorted(attempted))})"
        return f"{why}: no fault could fire where the plan puts it; {ATTACH_HINT}"
    if ran and (selectors or not attempted):
        what = "tools the plan's faults target" if selectors else "tools"
        only = f" while only {names(sorted(attempted))} did" if attempted else ""
        return (
            f"the model asked for {what}, {ran}, and not one of those calls went through chaoskit{only}: they ran "
            f"without chaoskit, so no fault reached them; {ATTACH_HINT}"
        )
    return None


def evidence_gaps(trace: Trace) -> list[CheckResult]:
    """One failed ``cannot_grade`` result for each episode of ``trace`` that cannot be graded (see the module
    docstring); empty when every episode can be."""
    out: list[CheckResult] = []
    for ep in trace.episodes:
        why = _gap(ep)
        if why is not None:
            evidence = (ep.span_id,) if ep.span_id else ()
            out.append(CheckResult(CANNOT_GRADE, False, "fail", f"{where(trace, ep)}cannot grade: {why}", evidence))
    return out
