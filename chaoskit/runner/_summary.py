"""A battery's aggregates: pass@1 and pass^k per cell and scenario, the reliability surface, the metamorphic check.

Cells are per (scenario, agent, epsilon, lambda); breakdowns and the matrix come from ``_breakdowns``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from chaoskit.grading._contracts import ContractFinding, dedupe
from chaoskit.runner._breakdowns import breakdowns, matrix
from chaoskit.runner._expect import Expectations, judge
from chaoskit.runner._gate import explain, verdict
from chaoskit.runner._metrics import metrics_summary
from chaoskit.runner._pass_rates import Rate, pass_hat_k
from chaoskit.runner._results import Cell, EpisodeResult, Summary, Verdict, agent_label
from chaoskit.runner._surface import surface_stats

__all__ = ["METAMORPHIC", "apply_contracts", "apply_metamorphic", "metamorphic_check", "summarize"]

#: the name of the check that compares a perturbed episode's end state with the unperturbed one's
METAMORPHIC = "metamorphic_end_state"


def metamorphic_check(e: EpisodeResult, ref: EpisodeResult | None) -> dict[str, Any] | None:
    """The metamorphic relation for one perturbed episode against its unperturbed reference ``ref`` (same
    scenario, agent, repetition and intensity); None when it does not apply (no perturbation, no oracle state)."""
    if e.epsilon == 0.0 or not e.oracle or ref is None or not ref.oracle:
        return None
    same = e.oracle.get("state") == ref.oracle.get("state")
    msg = (
        "the perturbed task reached the same end state as the original"
        if same
        else f"end state {e.oracle.get('state')} differs from the original task's {ref.oracle.get('state')}"
    )
    return {"name": METAMORPHIC, "passed": same, "severity": "pass" if same else "fail", "message": msg, "evidence": []}


def apply_metamorphic(episodes: Sequence[EpisodeResult]) -> None:
    """A perturbed episode must reach the same verified end state as the unperturbed one of the same
    scenario, agent, repetition and intensity. Recomputed from scratch, so merging shards gives the same answer."""
    base = {(e.scenario, e.agent, e.repetition, e.intensity): e for e in episodes if e.epsilon == 0.0}
    for e in episodes:
        e.checks = [c for c in e.checks if c["name"] != METAMORPHIC]
        e.passed = e.base_passed
        chk = metamorphic_check(e, base.get((e.scenario, e.agent, e.repetition, e.intensity)))
        if chk is not None:
            e.checks.append(chk)
            e.passed = e.base_passed and chk["passed"]


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return round(sum(xs) / len(xs), 3) if xs else 0.0


def summarize(
    episodes: Sequence[EpisodeResult],
    config: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    expectations: Expectations | None = None,
) -> tuple[Summary, Verdict]:
    """Apply the metamorphic relation, aggregate the episodes, and judge them: (summary, CI verdict).

    ``config`` is a run config's dict (``k``, ``repeat``, ``theta`` and the gate options are read). With
    ``expectations`` (an expected-outcome table), the verdict is whether every agent behaved as it says."""
    apply_metamorphic(episodes)
    k = int(config.get("k") or config.get("repeat") or 1)
    theta = float(config.get("theta", 0.9))
    cells = _cells(episodes, k)
    overall = _overall(episodes, cells)
    scenarios = {name: _scenario(episodes, cells, name) for name in dict.fromkeys(e.scenario for e in episodes)}
    surface, breaks = _surface(cells, k, theta)
    summary = Summary(k, theta, cells, overall, scenarios, surface, breaks, breakdowns(episodes), matrix(episodes))
    summary.surface_stats, summary.surface_by_agent = surface_stats(surface, k), _surface_by_agent(cells, k, theta)
    apply_contracts(summary, episodes)
    summary.metrics = metrics_summary(episodes, k=k)
    v = verdict(episodes, summary, config, baseline)
    if expectations is not None:
        v.expectations = judge(expectations, episodes, agents_chosen=bool(config.get("agent") or config.get("agents")))
        # the table alone decides: an expected failure (a repeated write by a flawed agent) is no reason to fail
        v.reasons = [f"unexpected: {line}" for line in expectations.lines(v.expectations)]
        v.ok = not v.reasons
    v.why = explain(v, episodes, config, summary.overall["mean_score"])
    return summary, v


def _cells(episodes: Sequence[EpisodeResult], k: int) -> list[Cell]:
    """One cell per (scenario, agent, epsilon, intensity): pass@1, pass^k and the checks that failed there."""
    groups: dict[tuple[str, str, float, float], list[EpisodeResult]] = {}
    for e in episodes:
        groups.setdefault((e.scenario, e.agent, e.epsilon, e.intensity), []).append(e)
    cells: list[Cell] = []
    for (sc, agent, eps, lam), eps_list in groups.items():
        n = len(eps_list)
        c = sum(e.passed for e in eps_list)
        kk = min(k, n)
        failed: dict[str, tuple[int, str]] = {}
        for e in eps_list:
            for chk in e.checks:
                if not chk["passed"] and chk.get("severity", "fail") == "fail":
                    count, msg = failed.get(chk["name"], (0, chk["message"]))
                    failed[chk["name"]] = (count + 1, msg)
        cells.append(
            Cell(
                scenario=sc,
                agent=agent,
                epsilon=eps,
                intensity=lam,
                n=n,
                passes=c,
                pass1=Rate.of(c, n),
                pass_k=Rate.estimate(pass_hat_k(c, n, kk), max(1, n // kk)),
                mean_score=_mean(e.score for e in eps_list),
                mean_attempts=_mean(e.attempts.get("total", 0) for e in eps_list),
                failed_checks=failed,
                failing=[e for e in eps_list if not e.passed],
            )
        )
    return cells


def _overall(episodes: Sequence[EpisodeResult], cells: Sequence[Cell]) -> dict[str, Any]:
    """The whole battery's figures: pass@1 over episodes, pass^k as the mean over cells, the outcomes."""
    n_all = len(episodes)
    c_all = sum(e.passed for e in episodes)
    groups_k = [c.pass_k.value for c in cells]
    n_groups = sum(c.pass_k.n for c in cells)
    return {
        "episodes": n_all,
        "passes": c_all,
        "pass_at_1": Rate.of(c_all, n_all).to_dict(),
        "pass_hat_k": Rate.estimate(_mean(groups_k) if groups_k else 0.0, max(1, n_groups)).to_dict(),
        "mean_score": _mean(e.score for e in episodes),
        "mean_attempts": _mean(e.attempts.get("total", 0) for e in episodes),
        "outcomes": {o: sum(e.outcome == o for e in episodes) for o in sorted({e.outcome for e in episodes})},
    }


def _scenario(episodes: Sequence[EpisodeResult], cells: Sequence[Cell], name: str) -> dict[str, Any]:
    """One scenario's figures, over its episodes and its cells."""
    mine = [e for e in episodes if e.scenario == name]
    mc = [c for c in cells if c.scenario == name]
    return {
        "episodes": len(mine),
        "pass_at_1": Rate.of(sum(e.passed for e in mine), len(mine)).to_dict(),
        "pass_hat_k": Rate.estimate(_mean(c.pass_k.value for c in mc), sum(c.pass_k.n for c in mc)).to_dict(),
        "mean_score": _mean(e.score for e in mine),
        "mean_attempts": _mean(e.attempts.get("total", 0) for e in mine),
    }


def _surface(cells: Sequence[Cell], k: int, theta: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """R(j, eps, lambda) for j = 1..k: mean over scenarios of pass^j, and where R_k first drops below theta."""
    points: dict[tuple[float, float], list[Cell]] = {}
    for c in cells:
        points.setdefault((c.epsilon, c.intensity), []).append(c)
    surface: list[dict[str, Any]] = []
    rk: dict[tuple[float, float], float] = {}
    for (eps, lam), cs in sorted(points.items()):
        for j in range(1, k + 1):
            vals = [pass_hat_k(c.passes, c.n, j) for c in cs if c.n >= j]
            if not vals:
                continue
            groups = sum(c.n // j for c in cs if c.n >= j)
            r = Rate.estimate(sum(vals) / len(vals), max(1, groups))
            surface.append({"k": j, "epsilon": eps, "intensity": lam, **r.to_dict(), "episodes": sum(c.n for c in cs)})
            if j == min(k, min(c.n for c in cs)):
                rk[(eps, lam)] = r.value
    epsilons = sorted({e for e, _ in rk})
    lambdas = sorted({lam for _, lam in rk})
    by_eps = {
        f"{e:g}": next((lam for lam in lambdas if (e, lam) in rk and rk[(e, lam)] < theta), None) for e in epsilons
    }
    by_lam = {
        f"{lam:g}": next((e for e in epsilons if (e, lam) in rk and rk[(e, lam)] < theta), None) for lam in lambdas
    }
    return surface, {"intensity_at_epsilon": by_eps, "epsilon_at_intensity": by_lam}


def _surface_by_agent(cells: Sequence[Cell], k: int, theta: float) -> dict[str, Any] | None:
    """With several agents in one battery, each agent's own surface, breaks and volume and slopes (the pooled
    ones mix architectures); None with one agent."""
    agents = sorted({c.agent for c in cells})
    if len(agents) < 2:
        return None
    labels = {a: agent_label(a) for a in agents}
    if len(set(labels.values())) < len(agents):  # two agents both named "careful" in the tables: keep them apart
        labels = {a: a for a in agents}
    out: dict[str, Any] = {}
    for agent in agents:
        surface, breaks = _surface([c for c in cells if c.agent == agent], k, theta)
        out[labels[agent]] = {"surface": surface, "breaks": breaks, "stats": surface_stats(surface, k)}
    return out


# -- tool contracts and readiness ("fix in the tool" against "fix in the agent") ------------------------------


def apply_contracts(
    summary: Summary, episodes: Sequence[EpisodeResult], declared: Iterable[Mapping[str, Any]] = ()
) -> None:
    """Set the summary's contract findings (the episodes' own, plus ``declared`` ones from the tools'
    declarations, e.g. :func:`chaoskit.suggest.declared_for`'s, each naming its agents) and the readiness table:
    one row per tool and agent with the faults the agent survived and failed on it and the contract findings
    that stand in the way. A finding goes only to the rows of the agents whose tools show it; a fault counts as
    failed only when a failed check names a span of that tool (or the failure names no span at all).
    Recomputed from the episodes and ``declared``, so merged shards agree with one run."""
    found = [ContractFinding.from_dict(dict(f)) for f in declared if isinstance(f, Mapping) and _finding_like(f)]
    for e in episodes:
        # a results file written by hand or by an older chaoskit may hold anything here: keep what reads
        own = e.attempts.get("contract_findings") or ()
        found.extend(replace(ContractFinding.from_dict(f), agents=(e.agent,)) for f in own if _finding_like(f))
    contracts = sorted(dedupe(found), key=lambda f: (f.tool, f.kind, f.agents))
    labels = {e.agent: e.agent_label for e in episodes}
    rows: dict[tuple[str, str], dict[str, Any]] = {}

    def row(tool: str, agent: str) -> dict[str, Any]:
        return rows.setdefault(
            (tool, agent), {"tool": tool, "agent": agent, "survived": {}, "failed": {}, "findings": []}
        )

    for e in episodes:
        for tool in e.attempts.get("by_tool") or {}:
            row(tool, e.agent_label)
        for (tool, fault), failed in _fault_sides(e).items():
            side = row(tool, e.agent_label)["failed" if failed else "survived"]
            side[fault] = side.get(fault, 0) + 1
    every = sorted(set(labels.values())) or [""]
    for f in contracts:
        # a finding from an older file names no agent: it is shown for every agent, as it was then
        for agent in sorted({labels.get(a, agent_label(a)) for a in f.agents}) if f.agents else every:
            kinds = row(f.tool, agent)["findings"]
            if f.kind not in kinds:
                kinds.append(f.kind)
    summary.contracts = [f.to_dict() for f in contracts]
    summary.readiness = sorted(rows.values(), key=lambda r: (r["tool"], r["agent"]))


def _finding_like(f: Any) -> bool:
    return isinstance(f, Mapping) and "tool" in f and "kind" in f


def _pairs(raw: Any) -> set[tuple[str, str]]:
    return {(str(m[0]), str(m[1])) for m in raw or () if isinstance(m, list | tuple) and len(m) == 2}


def _fault_sides(e: EpisodeResult) -> dict[tuple[str, str], bool]:
    """Each (tool, fault) the episode met, and whether the episode failed *on* it."""
    met_raw = e.attempts.get("faults_met")
    if met_raw is None:  # a results file from before faults_met: the timeline has the raised faults
        met_raw = [(t["tool"], t["fault"]) for t in e.attempts.get("timeline") or () if t.get("fault")]
    met = _pairs(met_raw)
    if e.passed:
        return dict.fromkeys(met, False)
    blamed_raw = e.attempts.get("faults_failed")
    # no attribution (an older file), or a failure the grading did not see (the metamorphic relation): all share it
    blamed = met if blamed_raw is None or e.base_passed else _pairs(blamed_raw) & met
    return {pair: pair in blamed for pair in met}
