"""The lambda fault profiles escalate their mix with intensity; outage windows; levelled profile files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chaoskit import Plan, PlanError
from chaoskit.runner._intensity import (
    OUTAGE_HORIZON,
    PROFILES,
    Level,
    Profile,
    background_faults,
    load_profile,
    outage_calls,
    with_background,
)

PER_CALL = {"timeout", "latency", "http_5xx", "rate_limit", "partial", "schema_drift"}
HARSH = {"rate_limit", "partial", "schema_drift", "outage"}


def kinds_at(name: str, lam: float) -> set[str]:
    return set(PROFILES[name].mix(lam))


@pytest.mark.parametrize(
    ("name", "low", "medium", "high"), [("light", 0.1, 0.3, 0.6), ("medium", 0.05, 0.2, 0.3), ("heavy", 0.02, 0.1, 0.5)]
)
def test_the_mix_escalates_with_intensity(name: str, low: float, medium: float, high: float) -> None:
    assert kinds_at(name, low) == {"timeout", "latency"}
    assert kinds_at(name, medium) == {"timeout", "latency", "http_5xx"}
    assert kinds_at(name, high) >= {"timeout", "latency", "http_5xx", *HARSH}
    assert kinds_at(name, 1.0) == kinds_at(name, high)


def test_heavy_escalates_sooner_than_light() -> None:
    assert kinds_at("heavy", 0.25) >= HARSH and not kinds_at("light", 0.25) & HARSH
    assert PROFILES["heavy"].mix(1.0)["outage"] > PROFILES["light"].mix(1.0)["outage"]


def fired_types(plan: Plan, tool: str, calls: range) -> list[str | None]:
    out: list[str | None] = []
    for n in calls:
        d = plan.decide(tool, n, {}, {})
        out.append(None if d is None else d[1].type)
    return out


def test_low_intensity_only_brings_transient_faults() -> None:
    seen: Counter[str | None] = Counter()
    for seed in range(200):
        plan = with_background(Plan(), 0.05, PROFILES["medium"], seed=seed)
        seen.update(fired_types(plan, "search", range(1, 11)))
    assert set(seen) == {None, "timeout", "latency"}


def test_high_intensity_brings_rate_limits_partials_drift_and_outages() -> None:
    seen: Counter[str | None] = Counter()
    statuses: Counter[int] = Counter()
    for seed in range(200):
        plan = with_background(Plan(), 0.6, PROFILES["medium"], seed=seed)
        for n in range(1, 11):
            d = plan.decide("search", n, {}, {})
            if d is not None:
                seen[d[1].type] += 1
                statuses[getattr(d[1], "status", 0)] += 1
    assert {"timeout", "latency", "http", "rate_limit", "partial", "schema_drift"} <= set(seen)
    assert statuses[429] > 0 and statuses[503] > 0


@pytest.mark.parametrize("lam", [0.3, 0.7])
def test_outage_covers_a_call_with_its_share_over_seeds(lam: float) -> None:
    profile = PROFILES["heavy"]
    share = lam * profile.mix(lam)["outage"]
    seeds = 3000
    for call in (1, 2, 5):
        hits = sum(call in outage_calls(share, profile.outage_length(), seed) for seed in range(seeds))
        assert abs(hits / seeds - share) < 0.03, (call, hits / seeds, share)


def test_outage_windows_are_runs_of_consecutive_calls() -> None:
    runs = []
    for seed in range(300):
        calls = outage_calls(0.15, 3, seed)
        assert all(1 <= c <= OUTAGE_HORIZON for c in calls)
        start = None
        for c in range(1, OUTAGE_HORIZON + 2):
            if c in calls and start is None:
                start = c
            elif c not in calls and start is not None:
                runs.append((start, c - start))
                start = None
    assert runs
    # a window that starts after call 1 and ends before the horizon is at least `length` calls long
    inner = [n for s, n in runs if s > 1 and s + n - 1 < OUTAGE_HORIZON]
    assert inner and min(inner) >= 3


def test_an_outage_fails_every_tool_on_its_calls_with_503() -> None:
    profile = Profile("only-outages", {"outage": 1}, {"outage": {"length": 4}})
    seed = next(s for s in range(500) if 2 in outage_calls(0.5, 4, s))
    plan = with_background(Plan(), 0.5, profile, seed=seed)
    calls = outage_calls(0.5, 4, seed)
    for tool in ("search", "book"):
        for n in range(1, 20):
            d = plan.decide(tool, n, {}, {})
            assert (d is not None) == (n in calls)
            if d is not None:
                assert d[1].type == "http" and getattr(d[1], "status", None) == 503


@pytest.mark.parametrize("name", ["light", "medium", "heavy"])
def test_empirical_total_rate_is_lambda_with_outages(name: str) -> None:
    lam = 0.6
    faulted = total = 0
    for seed in range(400):
        plan = with_background(Plan(), lam, PROFILES[name], seed=seed)
        got = fired_types(plan, "search", range(1, 6))
        faulted += sum(t is not None for t in got)
        total += len(got)
    assert abs(faulted / total - lam) < 0.04


def test_same_seed_same_faults_and_kinds_keep_their_place() -> None:
    a = with_background(Plan(), 0.4, PROFILES["heavy"], seed=7)
    b = with_background(Plan(), 0.4, PROFILES["heavy"], seed=7)
    assert fired_types(a, "t", range(1, 200)) == fired_types(b, "t", range(1, 200))
    # every kind the profile uses has an entry at every intensity, in the same order
    order = [f["type"] for f in background_faults(0.02, PROFILES["heavy"], seed=7)]
    assert order == [f["type"] for f in background_faults(0.9, PROFILES["heavy"], seed=7)]
    low = background_faults(0.02, PROFILES["heavy"], seed=7)
    assert {f["type"] for f in low if f.get("probability", 1) > 0} == {"timeout", "latency"}


def test_levelled_profile_file(tmp_path: Path) -> None:
    f = tmp_path / "esc.yaml"
    f.write_text(
        "name: escalating\n"
        "levels:\n"
        "  - {from: 0, weights: {latency: 1}}\n"
        "  - {from: 0.5, weights: {http_5xx: 1, outage: 1}}\n"
        "params: {outage: {length: 5, status: 502}}\n"
    )
    prof = load_profile(str(f))
    assert prof.name == "escalating" and prof.source == str(f)
    assert prof.mix(0.4) == {"latency": 1.0}
    assert prof.mix(0.5) == {"http_5xx": 0.5, "outage": 0.5}
    assert prof.outage_length() == 5
    outage = background_faults(1.0, prof, seed=0)[0]
    assert outage["status"] == 502 and "length" not in outage and outage["on_call"] == list(outage_calls(0.5, 5, 0))
    d = prof.to_dict()
    assert d["levels"][1] == {"from": 0.5, "weights": {"http_5xx": 0.5, "outage": 0.5}}
    assert d["params"]["outage"]["length"] == 5


def test_flat_profile_is_one_level() -> None:
    prof = load_profile({"timeout": 1, "latency": 1})
    assert prof.levels == (Level(0.0, {"timeout": 0.5, "latency": 0.5}),)
    assert prof.mix(0.0) == prof.mix(1.0) == prof.weights


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "levels:\n  - {from: 0.1, weights: {timeout: 1}}\n",
            r"esc.yaml:2: levels\[0\].from: must be 0 \(the first level\)",
        ),
        (
            "levels:\n  - {from: 0, weights: {timeout: 1}}\n  - {from: 0, weights: {latency: 1}}\n",
            r"esc.yaml:3: levels\[1\].from: must be above 0",
        ),
        (
            "levels:\n  - {from: 0, weights: {timeot: 1}}\n",
            r"levels\[0\].weights.timeot: unknown fault kind.*did you mean 'timeout'",
        ),
        (
            "levels:\n  - {from: 0, weights: {timeout: 0}}\n",
            r"levels\[0\].weights: a profile needs at least one positive",
        ),
        ("levels:\n  - {from: 0, mix: {timeout: 1}}\n", r"levels\[0\]: must be a mapping with exactly the keys from"),
        ("levels: []\n", "levels: must be a list of levels"),
        ("weights: {timeout: 1}\nlevels: []\n", "either weights .* or levels"),
        (
            "weights: {outage: 1}\nparams: {outage: {length: 0}}\n",
            r"esc.yaml:2: params.outage.length: must be a whole number of calls from 1",
        ),
        (
            "weights: {outage: 1}\nparams: {outage: {status: 200}}\n",
            r"params.outage.status: must be an HTTP error status",
        ),
    ],
)
def test_bad_levelled_profiles(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "esc.yaml"
    f.write_text(text)
    with pytest.raises(PlanError, match=message):
        load_profile(str(f))


def test_levels_from_python_are_checked() -> None:
    with pytest.raises(PlanError, match="first level must start at intensity 0"):
        Profile("p", (Level(0.2, {"timeout": 1}),))
    with pytest.raises(PlanError, match=r"levels\[1\].from: must be above the previous level's"):
        Profile("p", (Level(0.0, {"timeout": 1}), Level(0.0, {"latency": 1})))
    with pytest.raises(PlanError, match="unknown fault kind 'lag'"):
        Profile("p", {"lag": 1})
