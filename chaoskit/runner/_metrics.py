"""Trajectory metrics, failure modes and cost for a battery's episodes, and their aggregates per agent and scenario."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chaoskit.metrics._compute import trajectory_metrics
from chaoskit.metrics._cost import Prices, episode_cost
from chaoskit.metrics._model_steps import StepRecord, read_steps, steps_from_spans
from chaoskit.metrics._stats import mean_summary
from chaoskit.metrics._taxonomy import MODES, Thresholds, failure_modes, persistent_tools
from chaoskit.metrics._trajectory import Trajectory, trajectories
from chaoskit.runner._pass_rates import pass_hat_k
from chaoskit.runner._results import agent_label
from chaoskit.traces._records import TraceReadError
from chaoskit.traces._trace import Trace

__all__ = [
    "METRIC_NAMES",
    "attach_from_traces",
    "degradation",
    "episode_metrics",
    "metrics_by_episode",
    "metrics_summary",
    "run_metrics",
    "trajectory_record",
]

#: the per-episode metrics the aggregates average, in report order
METRIC_NAMES = ("cdi", "svr", "ric", "daf", "hallucination")


#: the per-episode note when an episode recorded no model step: the step metrics and the cost are unknown
NO_STEPS_NOTE = (
    "no model steps recorded: the step metrics and the cost are unknown (record steps with ep.step(...) or an "
    "integration: ChaosCallbackHandler, ChaosMiddleware, instrument_graph; docs/metrics.md)"
)


def trajectory_record(
    traj: Trajectory,
    checks: Iterable[Any],
    passed: bool,
    prices: Prices | None = None,
    thresholds: Thresholds | None = None,
    plan: Any = None,
) -> dict[str, Any]:
    """One episode's ``metrics`` entry: the trajectory metrics, its failure modes and its cost, JSON-ready.
    ``plan`` (the episode's fault plan) tells an outage no retry could pass from a transient fault."""
    m = trajectory_metrics(traj)
    out = m.to_dict()
    persistent = persistent_tools(plan, {a.tool for a in traj.attempts}) if plan is not None else set()
    out["modes"] = failure_modes(
        checks, m, traj, passed=passed, thresholds=thresholds or Thresholds(), persistent=persistent, prices=prices
    )
    out["cost"] = episode_cost(traj, prices).to_dict()
    if not traj.steps:
        out["note"] = NO_STEPS_NOTE
    return out


def episode_metrics(
    spans: Sequence[Any],
    checks: Iterable[Any],
    passed: bool,
    prices: Prices | None = None,
    thresholds: Thresholds | None = None,
    *,
    plan: Any = None,
    trace: Trace | None = None,
    lines: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The ``metrics`` entry of an episode graded in-process, from its SDK spans; None when they hold no episode.

    A command-line agent's spans are OTLP-JSON ``lines`` written by the child: then ``trace`` is the episode
    record the runner rebuilt from them, and the steps are read from the lines (a line that is not JSON, cut
    short by a killed process, is skipped)."""
    if lines is not None and trace is not None:
        docs = []
        for line in lines:
            try:
                docs.append(json.loads(line))
            except ValueError:
                continue
        try:
            steps = read_steps(docs)
        except TraceReadError:
            steps = []
        found = trajectories(trace, steps)
    else:
        found = trajectories(Trace.from_spans(spans), steps_from_spans(spans))
    return trajectory_record(found[0], checks, passed, prices, thresholds, plan) if found else None


def run_metrics(
    config: Any,
    plan_for: Callable[[Any], Any],
    ep: Any,
    spans: Sequence[Any],
    trace: Trace | None,
    lines: Sequence[str] | None,
    checks: Iterable[Any],
    passed: bool,
) -> dict[str, Any] | None:
    """The runner's call: :func:`episode_metrics` when the run config asks for metrics (``--metrics``), else
    None. ``plan_for(ep)`` gives the episode's fault plan (built only then); ``lines`` are a command-line agent's
    OTLP-JSON lines (None in process)."""
    if not getattr(config, "metrics", False):
        return None
    return episode_metrics(spans, checks, passed, config.prices, plan=plan_for(ep), trace=trace, lines=lines)


def metrics_by_episode(trace: Trace, steps: Sequence[StepRecord]) -> dict[str | None, Trajectory]:
    """The trajectories of a trace by episode id."""
    return {t.episode.id if t.episode is not None else None: t for t in trajectories(trace, steps)}


def attach_from_traces(
    episodes: Iterable[Any], traces: str, prices: Prices | None = None, thresholds: Thresholds | None = None
) -> int:
    """Set ``metrics`` on each episode result (an ``EpisodeResult``, or its dict) from the battery's traces file
    (``chaoskit run --traces``), matched by episode id; returns how many got metrics."""
    by_id = metrics_by_episode(Trace.load(traces), read_steps(traces))
    n = 0
    for e in episodes:
        get = e.get if isinstance(e, Mapping) else (lambda k, e=e: getattr(e, k, None))
        traj = by_id.get(get("episode_id"))
        if traj is None:
            continue
        record = trajectory_record(traj, get("checks") or (), bool(get("passed")), prices, thresholds)
        if isinstance(e, dict):
            e["metrics"] = record
        else:
            e.metrics = record
        n += 1
    return n


def _as_dict(e: Any) -> Mapping[str, Any]:
    if isinstance(e, Mapping):
        return e
    return {
        "scenario": e.scenario,
        "agent": e.agent,
        "epsilon": e.epsilon,
        "intensity": e.intensity,
        "passed": e.passed,
        "duration_s": e.duration_s,
        "metrics": getattr(e, "metrics", None),
        "tags": getattr(e, "tags", None) or [],
        "model": getattr(e, "model", None),
        "architecture": getattr(e, "architecture", None),
    }


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 4) if known else None


def _group(episodes: Sequence[Mapping[str, Any]], k: int | None) -> dict[str, Any]:
    ms = [e["metrics"] for e in episodes if e.get("metrics")]
    costs = [m["cost"] for m in ms]
    # pass^k as the main summary computes it: per grid point (scenario, epsilon, intensity), then averaged
    by_point: dict[tuple[Any, Any, Any], list[bool]] = {}
    for e in episodes:
        by_point.setdefault((e["scenario"], e.get("epsilon"), e.get("intensity")), []).append(bool(e["passed"]))
    kk = k or min((len(v) for v in by_point.values()), default=1)
    pass_k = _mean(pass_hat_k(sum(v), len(v), min(kk, len(v))) for v in by_point.values())
    # an episode that recorded no step (or no metrics at all) says nothing about cost: it is left out of the
    # means, and counted (without_steps, with_metrics) so the reports say so; any other unknown cost (an unpriced
    # model, a step without usage) makes the mean unknown, since leaving it out could hide the dearest episodes
    stepped = [m["cost"] for m in ms if m.get("steps")]
    priced = [c["cost"] for c in stepped if c.get("cost") is not None]
    cost = round(statistics.fmean(priced), 8) if priced and len(priced) == len(stepped) else None
    usage = [c for c in stepped if not c.get("missing_usage")]
    tokens = _mean(c["input_tokens"] + c["output_tokens"] for c in usage) if len(usage) == len(stepped) else None
    modes: dict[str, int] = {}
    for m in ms:
        for mode in m.get("modes", ()):
            modes[mode] = modes.get(mode, 0) + 1
    return {
        "episodes": len(episodes),
        "with_metrics": len(ms),
        "without_steps": sum(1 for m in ms if not m.get("steps")),
        "pass_rate": _mean(1.0 if e["passed"] else 0.0 for e in episodes),
        "pass_k": pass_k,
        "k": kk,
        **{name: _mean(m.get(name) for m in ms) for name in METRIC_NAMES},
        "steps": _mean(m.get("steps") for m in ms),
        # each mean's n, sample SD and 95% t interval (chaoskit.metrics.mean_summary), to compare agents by
        "spread": {name: mean_summary(m.get(name) for m in ms).to_dict() for name in (*METRIC_NAMES, "steps")},
        "tokens": tokens,
        "cost": cost,
        "currency": next((c.get("currency") for c in costs if c.get("currency")), None),
        "wall_s": _mean(e.get("duration_s") for e in episodes),
        "tool_s": _mean(c.get("tool_s") for c in costs),
        "pass_k_per_cost": round(pass_k / cost, 6) if pass_k is not None and cost else None,
        "pass_k_per_ktoken": round(pass_k / (tokens / 1000), 6) if pass_k is not None and tokens else None,
        "modes": dict(sorted(modes.items(), key=lambda kv: [m.name for m in MODES].index(kv[0]))),
    }


#: the tags that place a scenario at a horizon (the long-horizon battery's): then they split the episodes
HORIZON_TAGS = {"horizon:short": "short", "horizon:long": "long"}


def _horizon(e: Mapping[str, Any], median: float) -> str:
    for tag in e.get("tags") or ():
        if tag in HORIZON_TAGS:
            return HORIZON_TAGS[tag]
    return "short" if e["metrics"]["steps"] <= median else "long"


def degradation(episodes: Iterable[Any]) -> dict[str, Any]:
    """Metrics against trajectory length, per agent: short tasks against long ones, and the drop of the pass
    rate between them (short minus long: positive when long tasks pass less). When the scenarios are tagged
    ``horizon:short`` / ``horizon:long`` the tags split them (``split``: ``horizon tags``; an untagged one goes by
    the median); else episodes with at most the median number of steps are short (``split``: ``median steps``)."""
    rows = [_as_dict(e) for e in episodes]
    rows = [e for e in rows if e.get("metrics")]
    if not rows:
        return {"median_steps": None, "split": None, "agents": {}}
    median = statistics.median(e["metrics"]["steps"] for e in rows)
    tagged = any(t in HORIZON_TAGS for e in rows for t in e.get("tags") or ())
    out: dict[str, Any] = {}
    for agent in sorted({agent_label(e["agent"]) for e in rows}):
        mine = [e for e in rows if agent_label(e["agent"]) == agent]
        parts: dict[str, Any] = {
            length: {
                "episodes": len(group),
                "pass_rate": _mean(1.0 if e["passed"] else 0.0 for e in group),
                "steps": _mean(e["metrics"].get("steps") for e in group),
                **{name: _mean(e["metrics"].get(name) for e in group) for name in METRIC_NAMES},
            }
            for length, group in ((h, [e for e in mine if _horizon(e, median) == h]) for h in ("short", "long"))
        }
        short, long = parts["short"]["pass_rate"], parts["long"]["pass_rate"]
        parts["pass_drop"] = round(short - long, 4) if short is not None and long is not None else None
        out[agent] = parts
    return {"median_steps": median, "split": "horizon tags" if tagged else "median steps", "agents": out}


def metrics_summary(episodes: Iterable[Any], k: int | None = None) -> dict[str, Any] | None:
    """The battery's metrics: per agent, per model and architecture label, and per (agent, scenario) the mean
    metrics, failure-mode counts, tokens, cost, wall time, pass^k and pass^k per unit cost; each agent's cost
    relative to the cheapest; and the degradation against trajectory length. None when no episode has metrics."""
    rows = [_as_dict(e) for e in episodes]
    if not any(e.get("metrics") for e in rows):
        return None
    agents: dict[str, list[Mapping[str, Any]]] = {}
    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for e in rows:
        label = agent_label(e["agent"])
        agents.setdefault(label, []).append(e)
        cells.setdefault((label, e["scenario"]), []).append(e)
    per_agent = {a: _group(es, k) for a, es in sorted(agents.items())}
    axes: dict[str, dict[str, list[Mapping[str, Any]]]] = {"model": {}, "architecture": {}}
    for e in rows:
        for axis, groups in axes.items():
            if e.get(axis):
                groups.setdefault(str(e[axis]), []).append(e)
    cheapest_cost = min((g["cost"] for g in per_agent.values() if g["cost"]), default=None)
    cheapest_tokens = min((g["tokens"] for g in per_agent.values() if g["tokens"]), default=None)
    for g in per_agent.values():
        g["relative_cost"] = round(g["cost"] / cheapest_cost, 3) if g["cost"] and cheapest_cost else None
        g["relative_tokens"] = round(g["tokens"] / cheapest_tokens, 3) if g["tokens"] and cheapest_tokens else None
    return {
        "agents": per_agent,
        # the same figures per model and per architecture label (empty when no agent is labelled)
        "models": {m: _group(es, k) for m, es in sorted(axes["model"].items())},
        "architectures": {a: _group(es, k) for a, es in sorted(axes["architecture"].items())},
        "cells": [{"agent": a, "scenario": s, **_group(es, k)} for (a, s), es in sorted(cells.items())],
        "degradation": degradation(rows),
        "modes": [
            {"name": m.name, "code": m.code, "category": m.category, "meaning": m.meaning, "rule": m.rule}
            for m in MODES
        ],
    }
