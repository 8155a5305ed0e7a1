"""What a battery produces: graded episodes, aggregate cells, the CI verdict, and their JSON form."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from chaoskit._version import __version__
from chaoskit.runner._pass_rates import Rate

__all__ = ["RESULTS_KIND", "BatteryResult", "Cell", "EpisodeResult", "Summary", "Verdict", "agent_label"]

#: the ``kind`` of a results file (``chaoskit run --json``), which ``chaoskit merge`` and ``--baseline`` read
RESULTS_KIND = "chaoskit-run-results"

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def agent_label(ref: str) -> str:
    """How tables name an agent: the factory name of a ``module:factory`` reference, else the whole command."""
    return ref.rpartition(":")[2] if _REF.match(ref) else ref


@dataclass
class EpisodeResult:
    """One graded episode, as written to ``--json`` (``to_dict``) and read back by ``chaoskit merge``."""

    scenario: str
    source: str | None
    repetition: int
    epsilon: float
    intensity: float
    seed: int
    task: str
    edits: list[str]
    agent: str
    outcome: str
    error: str | None
    output: str | None
    duration_s: float
    attempts: dict[str, Any]
    checks: list[dict[str, Any]]
    score: float
    oracle: dict[str, Any] | None
    base_passed: bool
    passed: bool
    replay: str
    trace_id: str | None = None
    episode_id: str | None = None
    #: the scenario's tags, the value of its ``domain:X`` tag, and its own fault types (sorted)
    tags: list[str] = field(default_factory=list)
    domain: str | None = None
    faults: list[str] = field(default_factory=list)
    #: the worker running it was lost (a killed process, a lost Ray node) and it ran again, once
    retried: bool = False
    #: trajectory metrics, failure modes and cost (``chaoskit run --metrics``; see chaoskit.runner._metrics)
    metrics: dict[str, Any] | None = None
    #: the rubric grader's judgment beside the checks (``chaoskit run --judge``; see chaoskit.judge.entry)
    judge: dict[str, Any] | None = None
    #: the model and architecture axes of the agent (a battery file's labels, else what the agent declares)
    model: str | None = None
    architecture: str | None = None

    @property
    def key(self) -> tuple[str, str, int, float, float]:
        """(scenario, agent, repetition, epsilon, lambda): unique within one battery, shards included."""
        return (self.scenario, self.agent, self.repetition, self.epsilon, self.intensity)

    @property
    def agent_label(self) -> str:
        """The agent as tables name it (see :func:`agent_label`)."""
        return agent_label(self.agent)

    def failed_checks(self) -> list[dict[str, Any]]:
        """The checks and criteria that failed (warnings are not failures)."""
        return [c for c in self.checks if not c["passed"] and c.get("severity", "fail") == "fail"]

    def to_dict(self) -> dict[str, Any]:
        """The episode as a JSON-ready dict (one entry of a results file's ``episodes``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        """The episode from :meth:`to_dict`'s form; fields it does not know are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Cell:
    """One scenario run by one agent at one grid point (epsilon, lambda), over its repetitions."""

    scenario: str
    agent: str
    epsilon: float
    intensity: float
    n: int
    passes: int
    pass1: Rate
    pass_k: Rate
    mean_score: float
    mean_attempts: float
    failed_checks: dict[str, tuple[int, str]]
    failing: list[EpisodeResult]

    def to_dict(self) -> dict[str, Any]:
        """The cell as a JSON-ready dict, with the replay commands of its first three failing episodes."""
        return {
            "scenario": self.scenario,
            "agent": self.agent,
            "epsilon": self.epsilon,
            "intensity": self.intensity,
            "n": self.n,
            "passes": self.passes,
            "pass_at_1": self.pass1.to_dict(),
            "pass_hat_k": self.pass_k.to_dict(),
            "mean_score": self.mean_score,
            "mean_attempts": self.mean_attempts,
            "failed_checks": {k: {"count": c, "message": m} for k, (c, m) in self.failed_checks.items()},
            "failing_replays": [e.replay for e in self.failing[:3]],
        }


@dataclass
class Summary:
    """The aggregate figures of a battery: per cell, per scenario, overall, and the reliability surface."""

    k: int
    theta: float
    cells: list[Cell]
    overall: dict[str, Any]
    scenarios: dict[str, dict[str, Any]]
    surface: list[dict[str, Any]]
    breaks: dict[str, dict[str, float | None]]
    #: per agent label, domain, fault type and tag: {name: stats} (see ``chaoskit.runner._breakdowns``)
    breakdowns: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: {scenario: {agent label: stats}}
    matrix: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: the surface's volume and slopes with intervals, or None when not computed
    surface_stats: dict[str, Any] | None = None
    #: with several agents: per agent label its own surface, breaks and surface_stats (else None)
    surface_by_agent: dict[str, Any] | None = None
    #: tool-contract findings ("fix in the tool"), one per (tool, kind); apart from the agents' verdicts
    contracts: list[dict[str, Any]] = field(default_factory=list)
    #: one row per tool: the faults the agents survived and failed on it, and the contract findings in the way
    readiness: list[dict[str, Any]] = field(default_factory=list)
    #: trajectory metrics, failure modes and cost per agent and scenario (``--metrics``), or None
    metrics: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict."""
        return {
            "k": self.k,
            "theta": self.theta,
            "overall": self.overall,
            "scenarios": self.scenarios,
            "cells": [c.to_dict() for c in self.cells],
            "surface": self.surface,
            "breaks": self.breaks,
            "breakdowns": self.breakdowns,
            "matrix": self.matrix,
            "surface_stats": self.surface_stats,
            "surface_by_agent": self.surface_by_agent,
            "contracts": self.contracts,
            "readiness": self.readiness,
            "metrics": self.metrics,
        }


@dataclass
class Verdict:
    """The CI gate's answer: ok, or the reasons it failed (with the episodes behind the absolute rules)."""

    ok: bool
    reasons: list[str] = field(default_factory=list)
    duplicate_writes: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    #: with ``--expect``: the expected-outcome table's judgement (then it alone decides ``ok``)
    expectations: dict[str, Any] | None = None
    #: one sentence on what the verdict rests on (``runner._gate.explain``), shown beside it in every report
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict (``expectations`` only when an expected-outcome table was used)."""
        out: dict[str, Any] = {
            "ok": self.ok,
            "reasons": self.reasons,
            "duplicate_writes": self.duplicate_writes,
            "regressions": self.regressions,
            "why": self.why,
        }
        if self.expectations is not None:
            out["expectations"] = self.expectations
        return out


@dataclass
class BatteryResult:
    """What ``run_battery`` returns: the config, every episode, the aggregate figures and the CI verdict."""

    config: dict[str, Any]
    episodes: list[EpisodeResult]
    summary: Summary
    verdict: Verdict
    elapsed_s: float = 0.0
    #: interrupted (Ctrl-C): only the episodes that finished are in, and the verdict says so
    partial: bool = False

    @property
    def ok(self) -> bool:
        """Whether the CI gate passed."""
        return bool(self.verdict.ok)

    def to_dict(self) -> dict[str, Any]:
        """The whole result as a results file holds it (``chaoskit run --json``)."""
        return {
            "kind": RESULTS_KIND,
            "version": 1,
            "chaoskit": __version__,
            "config": self.config,
            "elapsed_s": round(self.elapsed_s, 3),
            "partial": self.partial,
            "verdict": self.verdict.to_dict(),
            "summary": self.summary.to_dict(),
            "episodes": [e.to_dict() for e in self.episodes],
        }
