"""Merging the results files of one battery's shards into one result, summary and verdict."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.runner._expect import Expectations
from chaoskit.runner._results import BatteryResult, EpisodeResult
from chaoskit.runner._summary import apply_contracts, summarize

__all__ = ["merge_results"]

#: config fields that must agree for results to come from one battery (its shards)
_SAME_BATTERY = (
    "seed",
    "repeat",
    "k",
    "intensities",
    "perturbations",
    "profile",
    "agent",
    "agents",
    "tags",
    "battery",
    "paths",
    "episode_seed",
)


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


def _declared(datas: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for d in datas:
        summary = d.get("summary")
        found = summary.get("contracts") if isinstance(summary, Mapping) else None
        out.extend(
            f for f in found or () if isinstance(f, Mapping) and f.get("origin") == "declaration" and "tool" in f
        )
    return out


def merge_results(
    datas: Sequence[Mapping[str, Any]],
    *,
    overrides: Mapping[str, Any] | None = None,
    baseline: Mapping[str, Any] | None = None,
    sources: Sequence[str | os.PathLike[str]] | None = None,
    expectations: Expectations | None = None,
) -> BatteryResult:
    """Combine shard results into one: episodes are concatenated (a repeated episode key is an error).

    Results must come from one battery: the same seed, grid, k, profile, agent and scenario paths; sharded
    results must be every shard of the same split (otherwise the verdict would not be the unsharded run's).
    ``sources`` names the files in error messages. With ``expectations`` (an expected-outcome table) the
    verdict is whether every agent behaved as the table says."""
    if not datas:
        raise ChaoskitError("nothing to merge")
    names = [str(x) for x in sources] if sources is not None else [f"results #{i + 1}" for i in range(len(datas))]
    config = dict(datas[0]["config"])
    for name, d in zip(names[1:], datas[1:], strict=False):
        for key in _SAME_BATTERY:
            if d["config"].get(key) != config.get(key):
                raise ChaoskitError(
                    f"{name}: cannot merge with {names[0]}: different {key} "
                    f"({_brief(d['config'].get(key))} here, {_brief(config.get(key))} there); "
                    "merge only the shards of one battery"
                )
    shards = [_shard_of(d["config"]) for d in datas]
    if any(sh is not None for sh in shards):
        if any(sh is None for sh in shards) or len({sh[1] for sh in shards if sh is not None}) != 1:
            raise ChaoskitError(
                "cannot merge: give the results of every shard of one --shard i/n split, and "
                "nothing else (got "
                + ", ".join(
                    f"{n}: {d['config'].get('shard') or 'unsharded'}" for n, d in zip(names, datas, strict=False)
                )
                + ")"
            )
        given = [sh[0] for sh in shards if sh is not None]
        total = next(sh[1] for sh in shards if sh is not None)
        twice = sorted({i for i in given if given.count(i) > 1})
        if twice:
            raise ChaoskitError(
                f"cannot merge: shard(s) {', '.join(f'{i}/{total}' for i in twice)} given more than once"
            )
        missing = sorted(set(range(1, total + 1)) - {sh[0] for sh in shards if sh is not None})
        if missing:
            raise ChaoskitError(
                f"cannot merge: shard(s) {', '.join(f'{i}/{total}' for i in missing)} missing, so "
                "the verdict would not be the whole battery's"
            )
    config["shard"] = None
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    episodes: list[EpisodeResult] = []
    seen: set[tuple[str, str, int, float, float]] = set()
    for d in datas:
        for raw in d["episodes"]:
            e = EpisodeResult.from_dict(raw)
            if e.key in seen:
                raise ChaoskitError(f"episode {e.key} appears in more than one file (a shard given twice?)")
            seen.add(e.key)
            episodes.append(e)
    scen_order = {n: i for i, n in enumerate(dict.fromkeys(e.scenario for e in episodes))}
    agent_order = {a: i for i, a in enumerate(dict.fromkeys(e.agent for e in episodes))}
    episodes.sort(key=lambda e: (scen_order[e.scenario], agent_order[e.agent], e.repetition, e.intensity, e.epsilon))
    if expectations is not None:
        config["expect"] = expectations.source
    summary, v = summarize(episodes, config, baseline=baseline, expectations=expectations)
    # the tools' declaration findings came from each shard's agents, not from its episodes: keep them
    apply_contracts(summary, episodes, _declared(datas))
    cut = [n for n, d in zip(names, datas, strict=False) if d.get("partial")]
    if cut:
        # a shard stopped by Ctrl-C: the merged figures cover only what ran, and the verdict says so
        v.ok = False
        v.reasons.insert(0, f"partial run: {', '.join(cut)} {'was' if len(cut) == 1 else 'were'} interrupted (Ctrl-C)")
    elapsed = sum(float(d.get("elapsed_s", 0)) for d in datas)
    return BatteryResult(config, episodes, summary, v, elapsed, partial=bool(cut))
