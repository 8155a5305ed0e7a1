"""What λ means, measured: the share of tool calls that get a background fault is λ (within sampling error) for every
built-in profile, the share that raises is λ times the raising kinds' weights, and the cascade in the mix spills
onto the other tools only within its documented bound."""

from __future__ import annotations

import collections

import pytest

import chaoskit
from chaoskit import Plan, Trace, chaos, telemetry
from chaoskit.runner._intensity import KINDS, PROFILES, RAISING_KINDS, Profile, raising_share, with_background

#: the fault types of the raising kinds
RAISING_TYPES = {KINDS[k]["type"] for k in RAISING_KINDS}


def _decided(lam: float, profile: Profile, seeds: int = 300, calls: int = 40) -> tuple[float, float, int]:
    """The share of calls a background fault is drawn for, the share of them that raise, and the number of calls."""
    kinds: collections.Counter[str | None] = collections.Counter()
    for seed in range(seeds):
        plan = with_background(Plan(faults=[], seed=seed), lam, profile, seed=seed)
        for tool in ("search_flights", "hold_flight"):
            for n in range(1, calls + 1):
                d = plan.decide(tool, n, {}, {})
                kinds[None if d is None else d[1].type] += 1
    total = sum(kinds.values())
    raised = sum(v for t, v in kinds.items() if t in RAISING_TYPES)
    return 1 - kinds[None] / total, raised / total, total


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("lam", [0.1, 0.3, 0.6])
def test_lambda_is_the_share_of_calls_that_get_a_fault(name: str, lam: float) -> None:
    faulted, raised, n = _decided(lam, PROFILES[name])
    assert n == 24_000
    # the standard error at 24,000 calls is at most 0.0033; 0.012 is more than 3.5 of them
    assert abs(faulted - lam) <= 0.012, (name, lam, faulted)
    assert abs(raised - raising_share(lam, PROFILES[name])) <= 0.012, (name, lam, raised)
    assert raised < faulted  # latency and the data faults do not raise


def test_raising_share_of_the_default_profile() -> None:
    # medium's high level: timeout 15 %, 5xx 15 %, 429 20 %, outage 15 %, cascade 5 % raise; latency, partial, drift not
    assert raising_share(0.3, PROFILES["medium"]) == pytest.approx(0.3 * 0.70)
    assert raising_share(0.1, PROFILES["medium"]) == pytest.approx(0.1 * 0.70)  # timeout 30 %, 5xx 40 %
    assert raising_share(0.05, PROFILES["medium"]) == pytest.approx(0.05 * 0.5)  # timeout 50 %, latency 50 %


#: the default profile without waits, so that thousands of calls run in a second
FAST = Profile(
    "medium-fast",
    PROFILES["medium"].levels,
    {"timeout": {"after_s": 0}, "latency": {"delay_s": 0}, "rate_limit": {"retry_after": 0}},
)


@chaos
def search_flights(n: int) -> dict[str, int]:
    return {"n": n}


@chaos
def hold_flight(n: int) -> dict[str, int]:
    return {"n": n}


@chaos
def send_receipt(n: int) -> dict[str, int]:
    return {"n": n}


def _through_the_engine(tools: list, lam: float, seeds: int = 60, calls: int = 60) -> list:
    attempts = []
    for seed in range(seeds):
        plan = with_background(Plan(faults=[], seed=seed), lam, FAST, seed=seed)
        with telemetry.capture() as cap, chaoskit.episode("t", plan=plan):
            for n in range(calls):
                try:
                    tools[n % len(tools)](n)
                except Exception:
                    pass
        attempts += Trace.from_spans(cap.spans).attempts
    return attempts


def test_one_tool_through_the_engine_is_faulted_at_lambda() -> None:
    atts = _through_the_engine([search_flights], 0.3)
    share = sum(a.fault_type is not None for a in atts) / len(atts)
    assert len(atts) == 3600 and abs(share - 0.3) <= 0.03, share  # SE 0.0076 at 3,600 calls
    assert not any(a.fault_params.get("cascaded_from") for a in atts)  # no other tool: nothing to spill onto


def test_the_cascade_spills_onto_the_other_tools_within_its_bound() -> None:
    tools = [search_flights, hold_flight, send_receipt]
    atts = _through_the_engine(tools, 0.3)
    spilled = [a for a in atts if a.fault_params.get("cascaded_from") not in (None, a.tool)]
    assert spilled and all(a.fault_type == "cascading_failure" and a.outcome == "error" for a in spilled)
    share = sum(a.fault_type is not None for a in atts) / len(atts)
    w = FAST.mix(0.3)["cascade"]
    assert 0.3 - 0.03 <= share <= 0.3 + 0.3 * w * (len(tools) - 1) + 0.03, share


def test_a_cascade_on_every_tool_needs_for_calls_and_a_profile_may_weigh_it() -> None:
    from chaoskit import PlanError
    from chaoskit.runner._intensity import load_profile

    with pytest.raises(PlanError, match="needs for_calls"):
        Plan(faults=[{"type": "cascading_failure", "tool": "*", "dependents": "*"}])
    with pytest.raises(PlanError, match="give the upstream tool"):
        Plan(faults=[{"type": "cascading_failure", "tool": "*", "dependents": ["hold_flight"]}])
    prof = load_profile({"weights": {"cascade": 1, "timeout": 1}, "params": {"cascade": {"for_calls": 2}}})
    entry = next(f for f in with_background(Plan(faults=[]), 0.5, prof, seed=1).faults if f.type == "cascading_failure")
    assert entry.anywhere and entry.for_calls == 2
    assert "cascade" not in PROFILES["light"].kinds() and "cascade" in PROFILES["medium"].kinds()
