"""Aggregates, the CI verdict, and the report formats of a battery: terminal text, JSON, JUnit XML, baselines."""

from __future__ import annotations

import json
import math
import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__
from chaoskit.runner._stats import Rate, pass_hat_k

if TYPE_CHECKING:
    from chaoskit.runner._battery import BatteryResult, EpisodeResult

__all__ = [
    "Cell", "Summary", "Verdict", "load_baseline", "load_results", "make_baseline", "merge_results",
    "render_text", "result_to_dict", "summarize", "write_json", "write_junit",
]

RESULTS_KIND = "chaoskit-run-results"
BASELINE_KIND = "chaoskit-baseline"
METAMORPHIC = "metamorphic_end_state"


@dataclass
class Cell:
    """One scenario at one grid point (epsilon, lambda), over its repetitions."""

    scenario: str
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
        return {"scenario": self.scenario, "epsilon": self.epsilon, "intensity": self.intensity, "n": self.n,
                "passes": self.passes, "pass_at_1": self.pass1.to_dict(), "pass_hat_k": self.pass_k.to_dict(),
                "mean_score": self.mean_score, "mean_attempts": self.mean_attempts,
                "failed_checks": {k: {"count": c, "message": m} for k, (c, m) in self.failed_checks.items()},
                "failing_replays": [e.replay for e in self.failing[:3]]}


@dataclass
class Summary:
    k: int
    theta: float
    cells: list[Cell]
    overall: dict[str, Any]
    scenarios: dict[str, dict[str, Any]]
    surface: list[dict[str, Any]]
    breaks: dict[str, dict[str, float | None]]

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "theta": self.theta, "overall": self.overall, "scenarios": self.scenarios,
                "cells": [c.to_dict() for c in self.cells], "surface": self.surface, "breaks": self.breaks}


@dataclass
class Verdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    duplicate_writes: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reasons": self.reasons, "duplicate_writes": self.duplicate_writes,
                "regressions": self.regressions}


def _cell_key(eps: float, lam: float) -> str:
    return f"eps={eps:g},lam={lam:g}"


# --- metamorphic relation --------------------------------------------------------------------------------

def metamorphic_check(e: EpisodeResult, ref: EpisodeResult | None) -> dict[str, Any] | None:
    """The metamorphic relation for one perturbed episode against its unperturbed reference ``ref`` (same
    scenario, repetition and intensity); None when it does not apply (no perturbation, no oracle state)."""
    if e.epsilon == 0.0 or not e.oracle or ref is None or not ref.oracle:
        return None
    same = e.oracle.get("state") == ref.oracle.get("state")
    msg = ("the perturbed task reached the same end state as the original" if same else
           f"end state {e.oracle.get('state')} differs from the original task's {ref.oracle.get('state')}")
    return {"name": METAMORPHIC, "passed": same, "severity": "pass" if same else "fail", "message": msg,
            "evidence": []}


def apply_metamorphic(episodes: Sequence[EpisodeResult]) -> None:
    """A perturbed episode must reach the same verified end state as the unperturbed one of the same
    scenario, repetition and intensity. Recomputed from scratch, so merging shards gives the same answer."""
    base = {(e.scenario, e.repetition, e.intensity): e for e in episodes if e.epsilon == 0.0}
    for e in episodes:
        e.checks = [c for c in e.checks if c["name"] != METAMORPHIC]
        e.passed = e.base_passed
        chk = metamorphic_check(e, base.get((e.scenario, e.repetition, e.intensity)))
        if chk is not None:
            e.checks.append(chk)
            e.passed = e.base_passed and chk["passed"]


# --- aggregation -----------------------------------------------------------------------------------------------

def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return round(sum(xs) / len(xs), 3) if xs else 0.0


def summarize(
    episodes: Sequence[EpisodeResult], config: Mapping[str, Any], *, baseline: Mapping[str, Any] | None = None,
) -> tuple[Summary, Verdict]:
    apply_metamorphic(episodes)
    k = int(config.get("k") or config.get("repeat") or 1)
    theta = float(config.get("theta", 0.9))
    groups: dict[tuple[str, float, float], list[EpisodeResult]] = {}
    for e in episodes:
        groups.setdefault((e.scenario, e.epsilon, e.intensity), []).append(e)
    cells: list[Cell] = []
    for (sc, eps, lam), eps_list in groups.items():
        n = len(eps_list)
        c = sum(e.passed for e in eps_list)
        kk = min(k, n)
        failed: dict[str, tuple[int, str]] = {}
        for e in eps_list:
            for chk in e.checks:
                if not chk["passed"] and chk.get("severity", "fail") == "fail":
                    count, msg = failed.get(chk["name"], (0, chk["message"]))
                    failed[chk["name"]] = (count + 1, msg)
        cells.append(Cell(
            scenario=sc, epsilon=eps, intensity=lam, n=n, passes=c, pass1=Rate.of(c, n),
            pass_k=Rate.estimate(pass_hat_k(c, n, kk), max(1, n // kk)),
            mean_score=_mean(e.score for e in eps_list),
            mean_attempts=_mean(e.attempts.get("total", 0) for e in eps_list),
            failed_checks=failed, failing=[e for e in eps_list if not e.passed],
        ))
    n_all = len(episodes)
    c_all = sum(e.passed for e in episodes)
    groups_k = [c.pass_k.value for c in cells]
    n_groups = sum(c.pass_k.n for c in cells)
    overall = {
        "episodes": n_all, "passes": c_all, "pass_at_1": Rate.of(c_all, n_all).to_dict(),
        "pass_hat_k": Rate.estimate(_mean(groups_k) if groups_k else 0.0, max(1, n_groups)).to_dict(),
        "mean_score": _mean(e.score for e in episodes),
        "mean_attempts": _mean(e.attempts.get("total", 0) for e in episodes),
        "outcomes": {o: sum(e.outcome == o for e in episodes) for o in sorted({e.outcome for e in episodes})},
    }
    scenarios: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(e.scenario for e in episodes):
        mine = [e for e in episodes if e.scenario == name]
        mc = [c for c in cells if c.scenario == name]
        scenarios[name] = {
            "episodes": len(mine), "pass_at_1": Rate.of(sum(e.passed for e in mine), len(mine)).to_dict(),
            "pass_hat_k": Rate.estimate(_mean(c.pass_k.value for c in mc), sum(c.pass_k.n for c in mc)).to_dict(),
            "mean_score": _mean(e.score for e in mine),
            "mean_attempts": _mean(e.attempts.get("total", 0) for e in mine),
        }
    surface, breaks = _surface(cells, k, theta)
    summary = Summary(k, theta, cells, overall, scenarios, surface, breaks)
    return summary, verdict(episodes, summary, config, baseline)


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
            surface.append({"k": j, "epsilon": eps, "intensity": lam, **r.to_dict(),
                            "episodes": sum(c.n for c in cs)})
            if j == min(k, min(c.n for c in cs)):
                rk[(eps, lam)] = r.value
    epsilons = sorted({e for e, _ in rk})
    lambdas = sorted({lam for _, lam in rk})
    by_eps = {f"{e:g}": next((lam for lam in lambdas if (e, lam) in rk and rk[(e, lam)] < theta), None)
              for e in epsilons}
    by_lam = {f"{lam:g}": next((e for e in epsilons if (e, lam) in rk and rk[(e, lam)] < theta), None)
              for lam in lambdas}
    return surface, {"intensity_at_epsilon": by_eps, "epsilon_at_intensity": by_lam}


# --- CI gate -------------------------------------------------------------------------------------------------

def verdict(episodes: Sequence[EpisodeResult], summary: Summary, config: Mapping[str, Any],
            baseline: Mapping[str, Any] | None) -> Verdict:
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
    for e in episodes:
        # the no_duplicate_writes check is the one judge of a repeated write (no second count here)
        dup = [c for c in e.checks if c["name"] == "no_duplicate_writes" and not c["passed"]]
        if dup:
            msg = dup[0]["message"]
            short = msg if len(msg) <= 160 else msg[:157] + "..."
            v.duplicate_writes.append(f"{e.scenario} rep {e.repetition} eps {e.epsilon:g} lam {e.intensity:g}: "
                                      f"{short}  (replay: {e.replay})")
    if v.duplicate_writes:
        v.reasons.append(f"{len(v.duplicate_writes)} episode(s) repeated an irreversible write (absolute rule)")
    if baseline:
        tol = float(config.get("attempt_tolerance") or 0.0)
        base_attempts: Mapping[str, Mapping[str, float]] = baseline.get("attempts", {})
        for c in summary.cells:
            old = base_attempts.get(c.scenario, {}).get(_cell_key(c.epsilon, c.intensity))
            if old is not None and c.mean_attempts > float(old) * (1 + tol) + 1e-9:
                v.regressions.append(f"{c.scenario} ({_cell_key(c.epsilon, c.intensity)}): mean attempts "
                                     f"{c.mean_attempts:g}, baseline {float(old):g}")
        if v.regressions:
            v.reasons.append(f"attempt counts rose against the baseline in {len(v.regressions)} scenario cell(s)")
    v.ok = not v.reasons
    return v


def make_baseline(summary: Summary) -> dict[str, Any]:
    attempts: dict[str, dict[str, float]] = {}
    for c in summary.cells:
        attempts.setdefault(c.scenario, {})[_cell_key(c.epsilon, c.intensity)] = c.mean_attempts
    return {"kind": BASELINE_KIND, "version": 1, "chaoskit": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "mean_score": summary.overall["mean_score"], "attempts": attempts}


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
        attempts: dict[str, dict[str, float]] = {}
        for c in s.get("cells", []):
            attempts.setdefault(c["scenario"], {})[_cell_key(c["epsilon"], c["intensity"])] = c["mean_attempts"]
        return {"kind": BASELINE_KIND, "attempts": attempts, "mean_score": s.get("overall", {}).get("mean_score")}
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise ChaoskitError(f"{p}: not a chaoskit baseline (expected \"kind\": \"{BASELINE_KIND}\")")
    return data


# --- JSON ----------------------------------------------------------------------------------------------------

def result_to_dict(result: BatteryResult) -> dict[str, Any]:
    return {"kind": RESULTS_KIND, "version": 1, "chaoskit": __version__, "config": result.config,
            "elapsed_s": round(result.elapsed_s, 3), "verdict": result.verdict.to_dict(),
            "summary": result.summary.to_dict(), "episodes": [e.to_dict() for e in result.episodes]}


def write_json(result: BatteryResult, path: str | os.PathLike[str]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(result_to_dict(result), indent=1, default=str), encoding="utf-8")


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ChaoskitError(f"{p}: file not found") from None
    except (OSError, ValueError) as exc:
        raise ChaoskitError(f"{p}: cannot read the results: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND:
        raise ChaoskitError(f"{p}: not a chaoskit run result (write one with chaoskit run --json)")
    if not isinstance(data.get("config"), dict) or not isinstance(data.get("episodes"), list) or not all(
            isinstance(e, dict) for e in data["episodes"]):
        raise ChaoskitError(f"{p}: a chaoskit run result needs a \"config\" object and an \"episodes\" list of "
                            "objects; the file was changed or cut short")
    for i, raw in enumerate(data["episodes"]):
        problem = _episode_problem(raw)
        if problem is not None:
            raise ChaoskitError(f"{p}: episodes[{i}].{problem}; the file was changed or cut short (write it again "
                                "with chaoskit run --json)")
    return data


_NUMBER = (int, float)
#: what each episode field of a results file must hold (None allowed where the type tuple has type(None))
_EPISODE_FIELDS: dict[str, tuple[type, ...]] = {
    "scenario": (str,), "repetition": (int,), "epsilon": _NUMBER, "intensity": _NUMBER, "seed": (int,),
    "task": (str,), "agent": (str,), "outcome": (str,), "error": (str, type(None)), "output": (str, type(None)),
    "duration_s": _NUMBER, "attempts": (dict,), "checks": (list,), "score": _NUMBER,
    "oracle": (dict, type(None)), "base_passed": (bool,), "passed": (bool,), "replay": (str,),
}
_KINDS = {str: "a string", int: "a whole number", float: "a number", dict: "an object", list: "a list",
          bool: "true or false", type(None): "null"}


def _episode_problem(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with one episode of a results file (``field: ...``), or None."""
    for name, types in _EPISODE_FIELDS.items():
        if name not in raw:
            return f"{name}: missing"
        value = raw[name]
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types) or (
                isinstance(value, float) and not math.isfinite(value)):
            allowed = "a finite number" if types == _NUMBER else " or ".join(_KINDS[t] for t in types)
            return f"{name}: must be {allowed}, got {json.dumps(value)[:60]}"
    total = raw["attempts"].get("total", 0)
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        return f"attempts.total: must be a whole number >= 0, got {json.dumps(total)[:60]}"
    for j, chk in enumerate(raw["checks"]):
        if not isinstance(chk, dict):
            return f"checks[{j}]: must be an object with name, passed, severity and message"
        for key, types, what in (("name", (str,), "a string"), ("passed", (bool,), "true or false"),
                                 ("message", (str,), "a string")):
            if not isinstance(chk.get(key), types):
                return f"checks[{j}].{key}: must be {what}, got {json.dumps(chk.get(key))[:60]}"
        if chk.get("severity", "fail") not in ("fail", "warn", "pass"):
            return f"checks[{j}].severity: must be fail, warn or pass, got {json.dumps(chk.get('severity'))[:60]}"
    return None


#: config fields that must agree for results to come from one battery (its shards)
_SAME_BATTERY = ("seed", "repeat", "k", "intensities", "perturbations", "profile", "agent", "paths", "episode_seed")


def _brief(value: Any) -> str:
    if isinstance(value, Mapping) and "name" in value:
        return repr(value["name"])  # a profile: its name is enough to tell two apart
    return repr(value)


def _shard_of(config: Mapping[str, Any]) -> tuple[int, int] | None:
    text = config.get("shard")
    if not isinstance(text, str) or "/" not in text:
        return None
    i, _, n = text.partition("/")
    return (int(i), int(n)) if i.isdigit() and n.isdigit() else None


def merge_results(
    datas: Sequence[Mapping[str, Any]], *, overrides: Mapping[str, Any] | None = None,
    baseline: Mapping[str, Any] | None = None, sources: Sequence[str | os.PathLike[str]] | None = None,
) -> BatteryResult:
    """Combine shard results into one: episodes are concatenated (a repeated episode key is an error).

    Results must come from one battery: the same seed, grid, k, profile, agent and scenario paths; sharded
    results must be every shard of the same split (otherwise the verdict would not be the unsharded run's).
    ``sources`` names the files in error messages."""
    from chaoskit.runner._battery import BatteryResult, EpisodeResult

    if not datas:
        raise ChaoskitError("nothing to merge")
    names = [str(x) for x in sources] if sources is not None else [f"results #{i + 1}" for i in range(len(datas))]
    config = dict(datas[0]["config"])
    for name, d in zip(names[1:], datas[1:], strict=False):
        for key in _SAME_BATTERY:
            if d["config"].get(key) != config.get(key):
                raise ChaoskitError(f"{name}: cannot merge with {names[0]}: different {key} "
                                    f"({_brief(d['config'].get(key))} here, {_brief(config.get(key))} there); "
                                    "merge only the shards of one battery")
    shards = [_shard_of(d["config"]) for d in datas]
    if any(sh is not None for sh in shards):
        if any(sh is None for sh in shards) or len({sh[1] for sh in shards if sh is not None}) != 1:
            raise ChaoskitError("cannot merge: give the results of every shard of one --shard i/n split, and "
                                "nothing else (got " + ", ".join(
                                    f"{n}: {d['config'].get('shard') or 'unsharded'}" for n, d in zip(
                                        names, datas, strict=False)) + ")")
        given = [sh[0] for sh in shards if sh is not None]
        total = next(sh[1] for sh in shards if sh is not None)
        twice = sorted({i for i in given if given.count(i) > 1})
        if twice:
            raise ChaoskitError(f"cannot merge: shard(s) {', '.join(f'{i}/{total}' for i in twice)} given more "
                                "than once")
        missing = sorted(set(range(1, total + 1)) - {sh[0] for sh in shards if sh is not None})
        if missing:
            raise ChaoskitError(f"cannot merge: shard(s) {', '.join(f'{i}/{total}' for i in missing)} missing, so "
                                "the verdict would not be the whole battery's")
    config["shard"] = None
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    episodes: list[EpisodeResult] = []
    seen: set[tuple[str, int, float, float]] = set()
    for d in datas:
        for raw in d["episodes"]:
            e = EpisodeResult.from_dict(raw)
            if e.key in seen:
                raise ChaoskitError(f"episode {e.key} appears in more than one file (a shard given twice?)")
            seen.add(e.key)
            episodes.append(e)
    scen_order = {n: i for i, n in enumerate(dict.fromkeys(e.scenario for e in episodes))}
    episodes.sort(key=lambda e: (scen_order[e.scenario], e.repetition, e.intensity, e.epsilon))
    summary, v = summarize(episodes, config, baseline=baseline)
    return BatteryResult(config, episodes, summary, v, sum(float(d.get("elapsed_s", 0)) for d in datas))


# --- JUnit ---------------------------------------------------------------------------------------------------

def write_junit(result: BatteryResult, path: str | os.PathLike[str]) -> None:
    """One test case per scenario x repetition (x grid point when the grid has more than one)."""
    eps_set = {e.epsilon for e in result.episodes}
    lam_set = {e.intensity for e in result.episodes}
    failures = sum(1 for e in result.episodes if not e.passed and e.outcome == "completed")
    errors = sum(1 for e in result.episodes if not e.passed and e.outcome != "completed")
    total_time = sum(e.duration_s for e in result.episodes)
    suites = ET.Element("testsuites", name="chaoskit", tests=str(len(result.episodes)), failures=str(failures),
                        errors=str(errors), time=f"{total_time:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="chaoskit run", tests=str(len(result.episodes)),
                          failures=str(failures), errors=str(errors), time=f"{total_time:.3f}")
    props = ET.SubElement(suite, "properties")
    for key in ("seed", "repeat", "k", "theta"):
        ET.SubElement(props, "property", name=key, value=str(result.config.get(key)))
    ET.SubElement(props, "property", name="verdict", value="pass" if result.ok else "fail")
    for e in result.episodes:
        name = f"{e.scenario} [rep {e.repetition}"
        if len(eps_set) > 1 or len(lam_set) > 1:
            name += f", eps {e.epsilon:g}, lam {e.intensity:g}"
        name += "]"
        case = ET.SubElement(suite, "testcase", classname=f"chaoskit.{e.scenario}", name=name,
                             time=f"{e.duration_s:.3f}")
        if not e.passed:
            bad = e.failed_checks()
            first = bad[0]["message"] if bad else e.outcome
            text = "\n".join([*(f"{c['name']}: {c['message']}" for c in bad), f"output: {e.output!r}",
                              f"seed: {e.seed}", f"replay: {e.replay}"])
            tag = "failure" if e.outcome == "completed" else "error"
            el = ET.SubElement(case, tag, message=first[:500], type=bad[0]["name"] if bad else e.outcome)
            el.text = text
        out = ET.SubElement(case, "system-out")
        out.text = f"task: {e.task}\nscore: {e.score}\nreplay: {e.replay}\n"
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(p, encoding="utf-8", xml_declaration=True)


# --- terminal ----------------------------------------------------------------------------------------------------

def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _pct(d: Mapping[str, Any]) -> str:
    return f"{d['value'] * 100:.0f}% [{d['low'] * 100:.0f}-{d['high'] * 100:.0f}]"


def render_text(result: BatteryResult, *, max_failures: int = 10) -> str:
    s: Summary = result.summary
    cfg = result.config
    lines: list[str] = []
    prof = cfg.get("profile") or {}
    lines.append(f"chaoskit run: {s.overall['episodes']} episodes, seed {cfg.get('seed')}, repeat {cfg.get('repeat')}, "
                 f"k={s.k}, profile {prof.get('name', '?')}, {result.elapsed_s:.1f}s")
    if prof.get("weights"):
        lines.append("background fault profile: " + ", ".join(f"{k} {v:.0%}" for k, v in prof["weights"].items()))
    multi = len({(c.epsilon, c.intensity) for c in s.cells}) > 1
    header = ["scenario", *(["eps", "lam"] if multi else []), "n", "pass@1 [95% CI]", f"pass^{s.k}", "score",
              "attempts", "failed checks"]
    rows = [header]
    for c in s.cells:
        failed = "; ".join(f"{k} x{n}" for k, (n, _m) in sorted(c.failed_checks.items())) or "-"
        rows.append([c.scenario, *([f"{c.epsilon:g}", f"{c.intensity:g}"] if multi else []), str(c.n),
                     _pct(c.pass1.to_dict()), f"{c.pass_k.value:.2f}", f"{c.mean_score:.1f}",
                     f"{c.mean_attempts:g}", failed])
    lines.append("")
    lines.extend(_table(rows))
    o = s.overall
    lines.append("")
    lines.append(f"overall: pass@1 {_pct(o['pass_at_1'])} over {o['episodes']} episodes; pass^{s.k} "
                 f"{o['pass_hat_k']['value']:.2f} [{o['pass_hat_k']['low']:.2f}-{o['pass_hat_k']['high']:.2f}] over "
                 f"{o['pass_hat_k']['n']} groups of {s.k}; mean score {o['mean_score']:.1f}; outcomes "
                 + ", ".join(f"{k} {v}" for k, v in o["outcomes"].items()))
    if multi:
        lines.append("")
        lines.append(f"reliability surface R(k, eps, lam) (rows: lambda; columns: eps; cell: pass@1 / pass^{s.k}; "
                     f"theta = {s.theta:g}):")
        epsilons = sorted({c.epsilon for c in s.cells})
        lambdas = sorted({c.intensity for c in s.cells})
        pts = {(p["epsilon"], p["intensity"], p["k"]): p for p in s.surface}
        srows = [["lambda", *(f"eps={e:g}" for e in epsilons)]]
        for lam in lambdas:
            row = [f"{lam:g}"]
            for e in epsilons:
                p1 = pts.get((e, lam, 1))
                pk = pts.get((e, lam, s.k)) or p1
                row.append(f"{p1['value']:.2f} / {pk['value']:.2f} (n={p1['episodes']})" if p1 and pk else "-")
            srows.append(row)
        lines.extend("  " + ln for ln in _table(srows))
        for eps_s, lam_b in s.breaks["intensity_at_epsilon"].items():
            lines.append(f"  eps={eps_s}: R_{s.k} " + (
                f"falls below {s.theta:g} at lambda={lam_b:g}" if lam_b is not None
                else f"stays >= {s.theta:g} at every lambda tried"))
        if len(epsilons) > 1:
            for lam_s, e2 in s.breaks["epsilon_at_intensity"].items():
                lines.append(f"  lambda={lam_s}: R_{s.k} " + (
                    f"falls below {s.theta:g} at eps={e2:g}" if e2 is not None
                    else f"stays >= {s.theta:g} at every eps tried"))
    failing = [e for e in result.episodes if not e.passed]
    if failing:
        lines.append("")
        lines.append(f"failing episodes ({len(failing)}; first {min(len(failing), max_failures)}):")
        for ep in failing[:max_failures]:
            bad = ep.failed_checks()
            lines.append(f"  {ep.scenario} rep {ep.repetition} eps {ep.epsilon:g} lam {ep.intensity:g} "
                         f"seed {ep.seed}: {ep.outcome}" + (f" ({ep.error})" if ep.error else ""))
            if ep.edits:
                lines.append(f"    task: {ep.task!r}  ({'; '.join(ep.edits)})")
            for chk in bad[:4]:
                lines.append(f"    x {chk['name']}: {chk['message']}")
            lines.append(f"    replay: {ep.replay}")
    v: Verdict = result.verdict
    lines.append("")
    if v.ok:
        lines.append("verdict: PASS")
    else:
        lines.append("verdict: FAIL")
        for r in v.reasons:
            lines.append(f"  - {r}")
        for d in v.duplicate_writes[:5]:
            lines.append(f"    {d}")
        for d in v.regressions[:10]:
            lines.append(f"    {d}")
    return "\n".join(lines)
