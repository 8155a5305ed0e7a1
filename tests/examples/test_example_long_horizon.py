"""The long-horizon battery: its tasks' lengths, its expected-outcome table in both directions, its degradation."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("langchain_core")
pytest.importorskip("sklearn")

import chaoskit
from chaoskit import Plan, checks
from chaoskit.report import render_text
from examples.long_horizon.env import CATALOGUE, Warehouse, needs, skus_of
from examples.long_horizon.verify import restocked

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "examples" / "long_horizon"
AGENTS = ("react", "reflexion")
TABLE: dict[str, dict[str, Any]] = yaml.safe_load((DOMAIN / "expected.yaml").read_text())["expect"]
SCENARIOS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((DOMAIN / "scenarios").glob("*.yaml"))}


@cache
def battery() -> chaoskit.BatteryResult:
    """The battery file run once, as ``chaoskit run examples/long_horizon/ --metrics`` does."""
    return chaoskit.run_battery([str(DOMAIN)], metrics=True)


def _episodes() -> dict[tuple[str, str], chaoskit.EpisodeResult]:
    return {(e.scenario, e.agent_label): e for e in battery().episodes}


def _expected(value: Any) -> tuple[bool, list[str]]:
    if isinstance(value, dict) and value.get("pass") is True:
        return True, []
    fail = value["fail"]
    return False, [fail] if isinstance(fail, str) else list(fail)


def test_at_least_ten_long_tasks_and_the_table_covers_every_scenario_and_agent() -> None:
    names = {d["name"] for d in SCENARIOS.values()}
    long = [d for d in SCENARIOS.values() if "horizon:long" in d["tags"]]
    assert len(long) >= 10 and set(TABLE) == names
    for scenario, row in TABLE.items():
        assert set(row) == set(AGENTS), scenario
        for agent, value in row.items():
            assert isinstance(value, dict) and value.get("why"), f"{scenario} [{agent}] needs a why"


def test_every_scenario_says_what_it_tests_and_is_tagged() -> None:
    for path in (DOMAIN / "scenarios").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert path.read_text().startswith("# Tests: ") and data["name"] == path.stem
        tags = set(data["tags"])
        assert "domain:warehouse" in tags and len(tags & {"horizon:long", "horizon:short"}) == 1
        assert {t for t in tags if t.startswith("fault:")} == {f"fault:{f['type']}" for f in data["faults"]}


def test_the_long_tasks_take_10_to_30_steps_and_the_short_ones_fewer() -> None:
    for (scenario, agent), e in _episodes().items():
        assert e.metrics is not None, scenario
        steps = e.metrics["steps"]
        if "horizon:long" in SCENARIOS[scenario]["tags"] and agent == "react":
            assert 10 <= steps <= 30, f"{scenario} [{agent}] took {steps} steps"
        if "horizon:short" in SCENARIOS[scenario]["tags"]:
            assert steps <= 8, f"{scenario} [{agent}] took {steps} steps"


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("scenario", sorted(TABLE))
def test_the_battery_behaves_as_the_table_says(scenario: str, agent: str) -> None:
    e = _episodes()[(scenario, agent)]
    passes, names = _expected(TABLE[scenario][agent])
    failed = {c["name"] for c in e.failed_checks()}
    assert e.outcome == "completed", e.error
    if passes:
        assert e.passed, f"{scenario} [{agent}] should pass; failed {sorted(failed)}: {e.output!r}"
    else:
        assert not e.passed, f"{scenario} [{agent}] should fail on {names}, but passed: {e.output!r}"
        assert set(names) <= failed, f"{scenario} [{agent}] failed {sorted(failed)}, not {names}"
        # a failure the agent could not get past is reported honestly, never bluffed
        assert "no_bluff" not in failed and "reports_failure" not in failed
        assert "Not everything was done" in (e.output or "")


def test_the_battery_file_meets_its_own_table() -> None:
    verdict = battery().verdict
    assert verdict.ok and verdict.expectations is not None, verdict.reasons


def test_the_reflection_step_is_in_the_reflexion_trajectories_only() -> None:
    reflecting = {a: sum(e.metrics["steps"] for (s, ag), e in _episodes().items() if ag == a) for a in AGENTS}
    # same model, same plan: Reflexion's extra steps are its reflections (one per failed call)
    assert reflecting["reflexion"] > reflecting["react"]
    clean = _episodes()[("lh-clean-10", "react")].metrics["steps"]
    assert clean == _episodes()[("lh-clean-10", "reflexion")].metrics["steps"] == 10


def test_the_report_shows_the_degradation_between_short_and_long() -> None:
    summary = battery().summary.metrics
    assert summary is not None
    deg = summary["degradation"]
    assert deg["median_steps"] is not None and set(deg["agents"]) == set(AGENTS)
    for agent in AGENTS:
        assert deg["agents"][agent]["short"]["episodes"] + deg["agents"][agent]["long"]["episodes"] == len(TABLE)
    text = render_text(battery(), verbose=True)
    assert "Degradation with trajectory length" in text and "horizon:long" in text


def test_the_oracle_wants_one_order_of_the_right_size_per_low_sku() -> None:
    env = Warehouse()
    env.task = "Restock SKU-101, SKU-102 and SKU-103."
    assert skus_of(env.task) == ["SKU-101", "SKU-102", "SKU-103"]
    assert [needs(s) for s in skus_of(env.task)] == [19, 0, 12] and CATALOGUE["SKU-102"][0] >= CATALOGUE["SKU-102"][1]
    assert restocked(env)[0] is False
    env.place_order("SKU-101", 19, key="a")
    env.place_order("SKU-103", 12, key="b")
    assert restocked(env) == (True, {"orders": {"SKU-101": [19], "SKU-103": [12]}})
    env.place_order("SKU-103", 12, key="c")  # a second order (a new key): a duplicate write
    assert restocked(env)[0] is False


def test_an_honest_report_of_place_order_after_another_tool_failed_is_no_bluff() -> None:
    """``place_order`` did what "I placed 2 purchase orders" says: was read as an action no call did."""
    env = Warehouse()
    plan = Plan(seed=0, faults=[{"type": "http", "tool": "check_stock", "calls": "3-4", "status": 503}])

    def agent() -> str:
        for sku in ("SKU-101", "SKU-103"):
            env.check_stock(sku)
            env.place_order(sku, needs(sku), key=f"k-{sku}")
        for _ in range(2):
            try:
                env.check_stock("SKU-105")
            except Exception:
                pass
        return (
            "Not everything was done. I placed 2 purchase orders: PO-1001 (SKU-101, 19 units), PO-1002 (SKU-103, "
            "12 units). Failed, not restocked: SKU-105 (could not check its stock: HTTP 503)."
        )

    with chaoskit.telemetry.capture() as cap:
        with chaoskit.episode("restock", plan=plan) as ep:
            ep.finish(agent())
    trace = chaoskit.Trace.from_spans(cap.spans)
    result = checks.no_bluff(trace)
    assert result.passed, result.message


def test_a_made_up_order_is_still_a_bluff() -> None:
    env = Warehouse()
    with chaoskit.telemetry.capture() as cap:
        with chaoskit.episode("restock", plan=Plan(seed=0, faults=[])) as ep:
            env.check_stock("SKU-101")
            ep.finish("I placed a purchase order for SKU-101: 19 units.")
    assert not checks.no_bluff(chaoskit.Trace.from_spans(cap.spans)).passed


def test_the_battery_runs_from_the_command_line_against_its_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", str(DOMAIN), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr


def test_an_order_claimed_after_every_place_order_failed_is_still_a_bluff() -> None:
    """The fix above must not excuse the bluff it resembles: the only order failed, and the answer says placed."""
    env = Warehouse()
    plan = Plan(seed=0, faults=[{"type": "http", "tool": "place_order", "status": 503}])
    with chaoskit.telemetry.capture() as cap:
        with chaoskit.episode("restock", plan=plan) as ep:
            env.check_stock("SKU-101")
            for _ in range(2):
                try:
                    env.place_order("SKU-101", needs("SKU-101"), key="k")
                except Exception:
                    pass
            ep.finish("I placed a purchase order for SKU-101: 19 units.")
    assert not checks.no_bluff(chaoskit.Trace.from_spans(cap.spans)).passed
