"""What the reports show of a run, read from a results dict or derived from its episodes (older files too).

An older results file lacks some summary keys (breakdowns, matrix, surface); they are computed here the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chaoskit.runner._breakdowns import stats_of_rows
from chaoskit.runner._expect import expected_pairs
from chaoskit.runner._pass_rates import Rate, pass_hat_k
from chaoskit.runner._results import agent_label

__all__ = [
    "SCORE_EDGES",
    "attempts_per_tool",
    "breakdown",
    "episodes_of",
    "expected_of",
    "failing_checks",
    "k_of",
    "label_of",
    "matrix",
    "metrics_notes",
    "pass_k_curves",
    "pick_episodes",
    "readiness_to_show",
    "score_histograms",
    "split_expected_writes",
    "stats_of",
    "surface_points",
]

#: the bins of the score histograms
SCORE_EDGES = tuple(float(x) for x in range(0, 101, 10))


def _num(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def label_of(episode: Mapping[str, Any]) -> str:
    """The label of an episode's agent ("(default)" when the episode names none)."""
    ref = episode.get("agent")
    return agent_label(ref) if isinstance(ref, str) and ref else "(default)"


def _attempts(episode: Mapping[str, Any]) -> Mapping[str, Any]:
    a = episode.get("attempts")
    return a if isinstance(a, Mapping) else {}


def stats_of(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The STATS of a group of episodes, as in ``summary["breakdowns"]``: n, passes, pass@1, means."""
    return stats_of_rows(
        [(bool(e.get("passed")), _num(e.get("score")), _num(_attempts(e).get("total"))) for e in episodes]
    )


def _summary(results: Mapping[str, Any]) -> Mapping[str, Any]:
    s = results.get("summary")
    return s if isinstance(s, Mapping) else {}


def episodes_of(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The results' episodes that are objects (an empty list when there are none)."""
    eps = results.get("episodes")
    return [e for e in eps if isinstance(e, Mapping)] if isinstance(eps, list) else []


def matrix(results: Mapping[str, Any]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """{scenario: {agent label: STATS}}: ``summary["matrix"]``, else grouped from the episodes."""
    given = _summary(results).get("matrix")
    if isinstance(given, Mapping) and given:
        return {str(s): dict(row) for s, row in given.items() if isinstance(row, Mapping)}
    groups: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for e in episodes_of(results):
        groups.setdefault(str(e.get("scenario", "?")), {}).setdefault(label_of(e), []).append(e)
    return {s: {a: stats_of(eps) for a, eps in row.items()} for s, row in groups.items()}


def breakdown(results: Mapping[str, Any], by: str) -> dict[str, Mapping[str, Any]] | None:
    """{name: STATS} of ``summary["breakdowns"][by]`` (agent, model, architecture, domain, fault or tag), else
    derived from the episodes' own keys; None when neither the summary nor the episodes carry what it needs."""
    given = _summary(results).get("breakdowns")
    if isinstance(given, Mapping) and isinstance(given.get(by), Mapping) and given[by]:
        return {str(k): v for k, v in given[by].items() if isinstance(v, Mapping)}
    eps = episodes_of(results)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for e in eps:
        names: Iterable[str]
        if by == "agent":
            names = [label_of(e)]
        elif by == "domain":
            if "domain" not in e:
                return None
            names = [str(e["domain"]) if e["domain"] else "(none)"]
        elif by in ("fault", "tag"):
            key = "faults" if by == "fault" else "tags"
            if not isinstance(e.get(key), list):
                return None
            names = [str(x) for x in e[key]] or (["none"] if by == "fault" else [])
        elif by in ("model", "architecture"):
            names = [str(e[by])] if e.get(by) else []
        else:
            raise ValueError(f"no breakdown by {by!r}: agent, model, architecture, domain, fault or tag")
        for name in names:
            groups.setdefault(name, []).append(e)
    return {name: stats_of(g) for name, g in sorted(groups.items())} if groups else None


def _cells(eps: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, float, float], list[bool]]:
    cells: dict[tuple[str, str, float, float], list[bool]] = {}
    for e in eps:
        key = (str(e.get("scenario")), str(e.get("agent")), _num(e.get("epsilon")), _num(e.get("intensity")))
        cells.setdefault(key, []).append(bool(e.get("passed")))
    return cells


def _mean_pass_k(cells: Iterable[list[bool]], j: int) -> tuple[float, int] | None:
    vals = [(pass_hat_k(sum(c), len(c), j), len(c) // j) for c in cells if len(c) >= j]
    if not vals:
        return None
    return sum(v for v, _ in vals) / len(vals), sum(g for _, g in vals)


def k_of(results: Mapping[str, Any]) -> int:
    """The k of pass^k: ``summary["k"]``, else the config's k or repeat, else 1."""
    raw = results.get("config")
    cfg: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    for v in (_summary(results).get("k"), cfg.get("k"), cfg.get("repeat")):
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            return v
    return 1


def surface_points(
    results: Mapping[str, Any], j: int, *, agent: str | None = None
) -> dict[tuple[float, float], dict[str, Any]]:
    """{(epsilon, lambda): {"value","low","high","n","episodes"}}: R(j, eps, lambda), the mean over scenarios of
    pass^j. For every agent together it is ``summary["surface"]`` when given; for one agent label (or an older
    file without a surface) it is computed from the episodes the same way."""
    given = _summary(results).get("surface")
    if agent is None and isinstance(given, list) and given:
        return {
            (_num(p.get("epsilon")), _num(p.get("intensity"))): dict(p)
            for p in given
            if isinstance(p, Mapping) and p.get("k") == j
        }
    eps = [e for e in episodes_of(results) if agent is None or label_of(e) == agent]
    by_point: dict[tuple[float, float], list[list[bool]]] = {}
    for (_s, _a, x, y), outcomes in _cells(eps).items():
        by_point.setdefault((x, y), []).append(outcomes)
    out: dict[tuple[float, float], dict[str, Any]] = {}
    for point, cells in sorted(by_point.items()):
        got = _mean_pass_k(cells, j)
        if got is not None:
            r = Rate.estimate(got[0], max(1, got[1]))
            out[point] = {**r.to_dict(), "episodes": sum(len(c) for c in cells)}
    return out


def pass_k_curves(results: Mapping[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """{series: [(k, pass^k)]} for k = 1 .. the most repetitions of a cell: "all agents" (mean over every
    (scenario, agent, eps, lambda) cell with at least k runs) and, with several agents, one series each."""
    eps = episodes_of(results)
    labels = list(dict.fromkeys(label_of(e) for e in eps))
    groups: dict[str, list[Mapping[str, Any]]] = {"all agents": eps}
    if len(labels) > 1:
        groups.update({a: [e for e in eps if label_of(e) == a] for a in labels})
    out: dict[str, list[tuple[int, float]]] = {}
    for name, mine in groups.items():
        cells = list(_cells(mine).values())
        most = max((len(c) for c in cells), default=0)
        pts = []
        for j in range(1, most + 1):
            got = _mean_pass_k(cells, j)
            if got is not None:
                pts.append((j, round(got[0], 6)))
        if pts:
            out[name] = pts
    return out


def score_histograms(results: Mapping[str, Any]) -> dict[str, list[int]]:
    """{agent label: counts per score bin of :data:`SCORE_EDGES`} (100 falls in the last bin)."""
    nbins = len(SCORE_EDGES) - 1
    out: dict[str, list[int]] = {}
    for e in episodes_of(results):
        score = min(max(_num(e.get("score")), 0.0), 100.0)
        b = min(int(score // 10), nbins - 1)
        out.setdefault(label_of(e), [0] * nbins)[b] += 1
    return out


def attempts_per_tool(results: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """[(tool, attempts without an injected fault, attempts with one)], most attempts first. Totals come from
    ``attempts.by_tool``; the faulted share from the timelines (0 where an episode has none)."""
    totals: dict[str, int] = {}
    faulted: dict[str, int] = {}
    for e in episodes_of(results):
        a = _attempts(e)
        by_tool = a.get("by_tool")
        if isinstance(by_tool, Mapping):
            for tool, n in by_tool.items():
                totals[str(tool)] = totals.get(str(tool), 0) + int(_num(n))
        tl = a.get("timeline")
        for item in tl if isinstance(tl, list) else []:
            if isinstance(item, Mapping) and item.get("fault"):
                tool = str(item.get("tool", "?"))
                faulted[tool] = faulted.get(tool, 0) + 1
    rows = [(t, max(totals.get(t, 0) - faulted.get(t, 0), 0), faulted.get(t, 0)) for t in {*totals, *faulted}]
    return sorted(rows, key=lambda r: (-(r[1] + r[2]), r[0]))


def failing_checks(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (scenario, agent label, failing check): how many episodes it failed in, out of how many,
    its first message, the replay command of the first episode it failed in, and whether the expected-outcome
    table expected it; unexpected rows first."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    runs: dict[tuple[str, str], int] = {}
    expected = expected_of(results)
    for e in episodes_of(results):
        sc, ag = str(e.get("scenario", "?")), label_of(e)
        runs[(sc, ag)] = runs.get((sc, ag), 0) + 1
        checks = e.get("checks")
        for c in checks if isinstance(checks, list) else []:
            if not isinstance(c, Mapping) or c.get("passed") or c.get("severity", "fail") != "fail":
                continue
            key = (sc, ag, str(c.get("name", "?")))
            row = rows.setdefault(
                key,
                {
                    "scenario": sc,
                    "agent": ag,
                    "check": key[2],
                    "failed": 0,
                    "message": str(c.get("message", "")),
                    "replay": str(e.get("replay", "")),
                    "expected": (sc, str(e.get("agent", ""))) in expected,
                },
            )
            row["failed"] += 1
    for row in rows.values():
        row["runs"] = runs[(row["scenario"], row["agent"])]
    # the unexpected ones first: they are what the verdict rests on
    return sorted(rows.values(), key=lambda row: bool(row["expected"]))


def expected_of(results: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (scenario, agent) pairs whose failures the run's expected-outcome table expected."""
    v = results.get("verdict")
    return expected_pairs(v.get("expectations") if isinstance(v, Mapping) else None)


def pick_episodes(results: Mapping[str, Any], limit: int) -> tuple[list[Mapping[str, Any]], int, int]:
    """The episodes to list in full: failing ones first, then passing, each taken in turns over the
    (scenario, agent) pairs so one pair cannot fill the list; at most ``limit``. Also returns how many were
    left out, and how many of those failed."""
    eps = episodes_of(results)
    chosen: list[Mapping[str, Any]] = []
    for passed in (False, True):
        queues: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for e in eps:
            if bool(e.get("passed")) is passed:
                queues.setdefault((str(e.get("scenario")), label_of(e)), []).append(e)
        while queues and len(chosen) < limit:
            for key in list(queues):
                if len(chosen) >= limit:
                    break
                chosen.append(queues[key].pop(0))
                if not queues[key]:
                    del queues[key]
    picked = {id(e) for e in chosen}
    left = [e for e in eps if id(e) not in picked]
    return chosen, len(left), sum(not e.get("passed") for e in left)


def split_expected_writes(items: Sequence[str], expected_replays: Iterable[str]) -> tuple[list[str], list[str]]:
    """The verdict's repeated irreversible writes split into (unexpected, expected): an item is expected when the
    episode it names (by the ``(replay: ...)`` the gate ends it with) is one whose failure the expected-outcome
    table expected. An item that names no such episode stays unexpected: a write is never hidden by a guess."""
    replays = set(expected_replays)
    unexpected: list[str] = []
    expected: list[str] = []
    for item in items:
        _, sep, tail = str(item).rpartition("(replay: ")
        (expected if sep and tail.removesuffix(")") in replays else unexpected).append(item)
    return unexpected, expected


def readiness_to_show(rows: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The readiness rows with something to say: a fault the tool's callers survived or failed, or a contract
    finding; a row with none of these (a tool no fault reached) is left out of the reports."""
    return [x for x in rows if isinstance(x, Mapping) and (x.get("survived") or x.get("failed") or x.get("findings"))]


def metrics_notes(agents: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The notes under the trajectory metrics: episodes left out of the means, and why."""
    out = []
    missing = sum(g.get("without_steps") or 0 for g in agents.values())
    if missing:
        out.append(
            f"{missing} episode(s) recorded no model step: their step metrics, tokens and cost are unknown and left "
            "out of the means (not counted as 0)"
        )
    absent = sum((g.get("episodes") or 0) - (g.get("with_metrics") or 0) for g in agents.values())
    if absent:
        out.append(f"{absent} episode(s) have no metrics at all (no episode span was found): left out")
    return out
