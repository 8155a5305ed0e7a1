"""A battery's results broken down by agent, domain, fault type and tag, and the scenario x agent matrix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chaoskit.runner._pass_rates import Rate
from chaoskit.runner._results import EpisodeResult

__all__ = ["NO_DOMAIN", "NO_FAULT", "breakdowns", "matrix", "stats", "stats_of_rows"]

#: the domain of episodes whose scenario has no ``domain:X`` tag
NO_DOMAIN = "(none)"
#: the fault type of episodes whose scenario declares no fault of its own
NO_FAULT = "none"


def stats(episodes: Sequence[EpisodeResult]) -> dict[str, Any]:
    """``n``, ``passes``, ``pass_at_1`` (with its Wilson 95% interval), ``mean_score`` and ``mean_attempts``."""
    return stats_of_rows([(e.passed, e.score, e.attempts.get("total", 0)) for e in episodes])


def stats_of_rows(rows: Sequence[tuple[bool, float, float]]) -> dict[str, Any]:
    """:func:`stats` of episodes given as ``(passed, score, total attempts)`` rows (a results file's too)."""
    n = len(rows)
    passes = sum(passed for passed, _, _ in rows)
    return {
        "n": n,
        "passes": passes,
        "pass_at_1": Rate.of(passes, n).to_dict(),
        "mean_score": round(sum(score for _, score, _ in rows) / n, 3) if n else 0.0,
        "mean_attempts": round(sum(total for _, _, total in rows) / n, 3) if n else 0.0,
    }


def _by(episodes: Sequence[EpisodeResult], names: Any) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[EpisodeResult]] = {}
    for e in episodes:
        keys: Iterable[str] = names(e)
        for k in dict.fromkeys(keys):
            groups.setdefault(k, []).append(e)
    return {k: stats(groups[k]) for k in sorted(groups)}


def breakdowns(episodes: Sequence[EpisodeResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """Stats per agent label, per domain (:data:`NO_DOMAIN` without a domain tag), per fault type (an episode
    counts once under each of its scenario's fault types, :data:`NO_FAULT` when it has none), per tag, and per
    model and architecture (only the episodes labelled with one: empty when none is)."""
    return {
        "agent": _by(episodes, lambda e: [e.agent_label]),
        "domain": _by(episodes, lambda e: [e.domain or NO_DOMAIN]),
        "fault": _by(episodes, lambda e: e.faults or [NO_FAULT]),
        "tag": _by(episodes, lambda e: e.tags),
        "model": _by(episodes, lambda e: [e.model] if getattr(e, "model", None) else []),
        "architecture": _by(episodes, lambda e: [e.architecture] if getattr(e, "architecture", None) else []),
    }


def matrix(episodes: Sequence[EpisodeResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{scenario: {agent label: stats}}`` over every repetition and grid point, in the episodes' order."""
    groups: dict[str, dict[str, list[EpisodeResult]]] = {}
    for e in episodes:
        groups.setdefault(e.scenario, {}).setdefault(e.agent_label, []).append(e)
    return {sc: {a: stats(eps) for a, eps in by_agent.items()} for sc, by_agent in groups.items()}
