from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit import Plan, PlanError
from chaoskit.runner._intensity import KINDS, PROFILES, background_faults, load_profile, with_background


@pytest.mark.parametrize("name", ["light", "medium", "heavy"])
@pytest.mark.parametrize("lam", [0.05, 0.3, 0.9, 1.0])
def test_total_probability_is_lambda(name: str, lam: float) -> None:
    profile = PROFILES[name]
    faults = background_faults(lam, profile, seed=3)
    weights = profile.mix(lam)
    # the core fires the first fault whose draw succeeds: P(kind i) = p_i * prod_{j<i} (1 - p_j); an outage
    # window (drawn per episode) covers a call with probability lambda * w_outage over seeds
    miss = 1.0
    shares = {}
    for f, kind in zip(faults, profile.kinds(), strict=True):
        p = lam * weights.get(kind, 0.0) if kind == "outage" else f["probability"]
        shares[kind] = miss * p
        miss *= 1 - p
    assert 1 - miss == pytest.approx(lam)
    for kind in profile.kinds():
        assert shares[kind] == pytest.approx(lam * weights.get(kind, 0.0))


def test_profiles_cover_documented_kinds_and_sum_to_one() -> None:
    for profile in PROFILES.values():
        for level in profile.levels:
            assert set(level.weights) <= set(KINDS)
            assert sum(level.weights.values()) == pytest.approx(1.0)


def test_zero_intensity_adds_nothing() -> None:
    assert background_faults(0.0, PROFILES["heavy"], seed=1) == []


def test_empirical_rate_and_determinism() -> None:
    plan = with_background(Plan(), 0.3, PROFILES["medium"], seed=11)
    decisions = [plan.decide("search", n, {}, {}) for n in range(1, 4001)]
    fired = [d for d in decisions if d is not None]
    assert 0.27 < len(fired) / 4000 < 0.33
    again = with_background(Plan(), 0.3, PROFILES["medium"], seed=11)
    assert [again.decide("search", n, {}, {}) for n in range(1, 4001)] == decisions
    other = with_background(Plan(), 0.3, PROFILES["medium"], seed=12)
    assert [other.decide("search", n, {}, {}) for n in range(1, 4001)] != decisions


def test_scenario_faults_come_first() -> None:
    own = Plan(faults=[{"type": "error", "tool": "pay", "on_call": 1}])
    plan = with_background(own, 1.0, PROFILES["heavy"], seed=1)
    decided = plan.decide("pay", 1, {}, {})
    assert decided is not None and decided[0] == 0 and decided[1].type == "error"


def test_custom_profile_file(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("name: mine\nweights: {timeout: 1, latency: 3}\nparams: {latency: {delay_s: 0.5}}\n")
    prof = load_profile(str(f))
    assert prof.name == "mine"
    assert prof.weights == {"timeout": 0.25, "latency": 0.75}
    faults = background_faults(0.5, prof, seed=1)
    assert faults[1]["delay_s"] == 0.5 and faults[1]["tool"] == "*"


def test_bad_profiles() -> None:
    with pytest.raises(PlanError, match=r"unknown fault profile 'medum'.*did you mean 'medium'"):
        load_profile("medum")
    with pytest.raises(PlanError, match="unknown fault kind 'timeot'"):
        load_profile({"timeot": 1})
    with pytest.raises(PlanError, match="at least one positive weight"):
        load_profile({"timeout": 0})
    with pytest.raises(ValueError, match="from 0 to 1"):
        background_faults(1.5, PROFILES["light"], seed=1)
