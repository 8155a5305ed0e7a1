"""The shop example domain: its expected-outcome table in both directions, its tools' errors, its oracles."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import chaoskit
from chaoskit import ToolHTTPError
from examples.agentkit import Failure
from examples.shop import agents, verify
from examples.shop.env import ShopEnv

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")
TABLE: dict[str, dict[str, Any]] = yaml.safe_load((SHOP / "expected.yaml").read_text(encoding="utf-8"))["expect"]
SCENARIOS = {
    yaml.safe_load(f.read_text(encoding="utf-8"))["name"]: f for f in sorted((SHOP / "scenarios").glob("*.yaml"))
}


@pytest.fixture(scope="module")
def battery() -> dict[tuple[str, str], Any]:
    """(scenario, agent) -> its one episode, for the whole shop battery against each of the five agents."""
    out = {}
    for name in AGENTS:
        result = chaoskit.run_battery([SHOP / "scenarios"], agent=f"examples.shop.agents:{name}", repeat=1)
        for e in result.episodes:
            out[(e.scenario, name)] = e
    return out


def test_the_table_covers_every_scenario_and_agent_with_a_reason() -> None:
    assert set(TABLE) == set(SCENARIOS)
    assert len(SCENARIOS) >= 6
    for scenario, row in TABLE.items():
        assert set(row) == set(AGENTS), scenario
        assert all(isinstance(v, dict) and v.get("why") for v in row.values()), scenario
        assert "pass" in str(row["careful"]), f"careful must pass {scenario}"


def test_every_scenario_is_tagged_with_its_domain_faults_and_difficulty() -> None:
    for name, path in SCENARIOS.items():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        tags = set(data["tags"])
        assert name.startswith("shop-") and "domain:ecommerce" in tags
        assert {f"fault:{f['type']}" for f in data["faults"]} <= tags
        assert len([t for t in tags if t.startswith("difficulty:")]) == 1
        assert path.read_text(encoding="utf-8").startswith("# ")


def _cells() -> list[Any]:
    return [pytest.param(scenario, agent, id=f"{scenario}-{agent}") for scenario in sorted(TABLE) for agent in AGENTS]


@pytest.mark.parametrize(("scenario", "agent"), _cells())
def test_the_battery_matches_the_table(battery: dict[tuple[str, str], Any], scenario: str, agent: str) -> None:
    episode = battery[(scenario, agent)]
    entry = TABLE[scenario][agent]
    failed = {c["name"] for c in episode.failed_checks()}
    if "fail" in entry:
        assert not episode.passed, f"expected a failure ({entry['why']}), got a pass: {episode.output!r}"
        missing = set(entry["fail"]) - failed
        assert not missing, f"{sorted(missing)} did not fail (failed: {sorted(failed)}); {entry['why']}"
    else:
        assert episode.passed, f"expected a pass ({entry['why']}), failed {sorted(failed)}: {episode.output!r}"


# -- the agent reads paraphrased tasks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "oracle"),
    [
        ("Could you purchase the least expensive kettle you have in stock for ana@example.com?", "cheapest"),
        ("For ana@example.com, kindly buy the lowest-priced kettle you have in stock.", "cheapest"),
        (
            "Hi there. Order two MUG-214 - sorry, I mean MUG-210 mugs for ana@example.com. My colleague says hello.",
            "mugs",
        ),
        (
            "Kindly open a return for it and refund the client. The kettle from order 4835 - sorry, I mean 4832 arrived broken.",
            "refund",
        ),
        ("Quick question: How many KET-100 kettles do you have in stock, and at what price?", "untouched"),
    ],
)
def test_the_careful_agent_reads_paraphrases(task: str, oracle: str) -> None:
    check = {
        "cheapest": verify.cheapest_kettle_for_ana,
        "mugs": verify.two_mugs_for_ana,
        "refund": verify.kettle_of_4832_returned_and_refunded_once,
        "untouched": verify.untouched,
    }[oracle]
    agent = agents.careful()
    initial = copy.deepcopy(agent.env)
    answer = agent.invoke(task)
    ok, _ = check(initial, agent.env)
    assert ok, answer
    assert "could not" not in answer


@pytest.mark.parametrize(
    ("task", "specific"),
    [
        ("Refund the kettle of order 4832.", "RF-7731"),
        ("Where is order 5120?", "2026-12-03"),
        ("Check the stock of KET-100.", "successfully"),
        ("Buy one kettle for bo@example.com.", "Order 6042"),
    ],
)
def test_the_bluffer_invents_a_specific_success(task: str, specific: str) -> None:
    answer = agents.bluffer().invent(task, Failure("do it", "the tool kept failing"))
    assert specific in answer and "could not" not in answer


def test_the_factories_give_fresh_agents_with_their_own_env() -> None:
    made = [getattr(agents, name)() for name in AGENTS]
    assert [a.policy.name for a in made] == list(AGENTS)
    assert len({id(a.env) for a in made}) == len(AGENTS)
    made[0].invoke("Order two MUG-210 mugs for ana@example.com.")
    assert made[1].env.products["MUG-210"]["stock"] == 40


# -- the tools refuse invalid operations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda s: s.search_products("  "), ValueError, "non-empty"),
        (lambda s: s.check_inventory("KET-999"), LookupError, "no product"),
        (lambda s: s.list_orders("eve@example.com"), LookupError, "no customer"),
        (lambda s: s.order_status("9999"), LookupError, "no order"),
        (lambda s: s.place_order("eve@example.com", "MUG-210", 1), LookupError, "no customer"),
        (lambda s: s.place_order("ana@example.com", "XYZ-1", 1), LookupError, "no product"),
        (lambda s: s.place_order("ana@example.com", "MUG-210", 0), ValueError, "qty"),
        (lambda s: s.place_order("ana@example.com", "MUG-210", "2"), ValueError, "qty"),
        (lambda s: s.place_order("ana@example.com", "MUG-210", 1, coupon="WINTER25"), ValueError, "expired"),
        (lambda s: s.place_order("ana@example.com", "MUG-210", 1, coupon="NOPE"), ValueError, "unknown coupon"),
        (lambda s: s.start_return("4832", " "), ValueError, "reason"),
        (lambda s: s.start_return("4832", "broken", sku="MUG-210"), ValueError, "no line"),
        (lambda s: s.issue_refund("4832", 0), ValueError, "above 0"),
        (lambda s: s.issue_refund("4832", "25"), ValueError, "amount"),
        (lambda s: s.issue_refund("4832", float("nan")), ValueError, "amount"),
        (lambda s: s.apply_coupon("5200", "NOPE"), ValueError, "unknown coupon"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_error(call: Any, error: type[Exception], text: str) -> None:
    env = ShopEnv()
    before = copy.deepcopy(env)
    with pytest.raises(error, match=text):
        call(env)
    assert verify.untouched(before, env)[0]


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda s: s.place_order("ana@example.com", "KET-400", 1), "only 0"),
        (lambda s: s.place_order("ana@example.com", "TST-300", 4), "only 3"),
        (lambda s: s.start_return("5120", "late"), "shipped, not delivered"),
        (lambda s: s.issue_refund("5120", 5.0), "only delivered"),
        (lambda s: s.issue_refund("4832", 64.01), r"more than the 64\.00"),
        (lambda s: s.apply_coupon("4832", "SPRING10"), "not pending"),
    ],
)
def test_conflicts_with_the_state_are_http_409(call: Any, text: str) -> None:
    with pytest.raises(ToolHTTPError, match=text) as info:
        call(ShopEnv())
    assert info.value.status == 409


def test_writes_honour_their_idempotency_key_and_guard_repeats() -> None:
    env = ShopEnv()
    first = env.place_order("ana@example.com", "MUG-210", 2, idempotency_key="k1")
    assert env.place_order("ana@example.com", "MUG-210", 2, idempotency_key="k1") == first
    assert env.products["MUG-210"]["stock"] == 38 and len(env.orders) == 4
    env.place_order("ana@example.com", "MUG-210", 2, idempotency_key="k2")  # a new key is a new order
    assert env.products["MUG-210"]["stock"] == 36 and len(env.orders) == 5
    refund = env.issue_refund("4832", 25.0, idempotency_key="r1")
    assert env.issue_refund("4832", 25.0, idempotency_key="r1") == refund and len(env.refunds) == 1
    env.issue_refund("4832", 25.0)  # without a key a repeat refunds again, up to the order total
    assert env.orders["4832"]["refunded_amount"] == 50.0 and env.orders["4832"]["status"] == "partially_refunded"
    with pytest.raises(ToolHTTPError, match=r"14\.00 left"):
        env.issue_refund("4832", 25.0)
    env.start_return("4832", "arrived damaged", sku="KET-100")
    with pytest.raises(ToolHTTPError, match="RET-1 is already open"):
        env.start_return("4832", "arrived damaged", sku="KET-100")
    env.apply_coupon("5200", "STAFF100")
    assert env.orders["5200"]["total"] == 0.0
    with pytest.raises(ToolHTTPError, match="already has STAFF100"):
        env.apply_coupon("5200", "SPRING10")


def test_reads_answer_and_the_env_snapshots_with_deepcopy() -> None:
    env = ShopEnv()
    kettles = env.search_products("kettles")
    assert kettles["total"] == 4 and [r["sku"] for r in kettles["results"]][-1] == "KET-200"
    assert env.search_products("ket-100")["results"][0]["sku"] == "KET-100"
    assert env.search_products("blender") == {"query": "blender", "results": [], "total": 0}
    assert env.check_inventory("TST-300")["available"] == 3
    assert env.list_orders("bo@example.com")["total"] == 1
    assert env.validate_coupon("WINTER25")["valid"] is False
    assert env.validate_coupon("NOPE") == {"code": "NOPE", "valid": False, "percent_off": 0, "reason": "unknown code"}
    snap = copy.deepcopy(env)
    env.place_order("bo@example.com", "TST-300", 1)
    assert snap.products["TST-300"]["stock"] == 3 and len(snap.orders) == 3


# -- the oracles, on hand-made states --------------------------------------------------------------------------


def _refunded(*, refunds: tuple[float, ...] = (25.0,), ret: str | None = "KET-100", order: str = "4832") -> ShopEnv:
    env = ShopEnv()
    if ret is not None:
        env.start_return(order, "arrived damaged", sku=ret)
    for amount in refunds:
        env.issue_refund(order, amount)
    return env


@pytest.mark.parametrize(
    ("final", "ok"),
    [
        (_refunded(), True),
        (_refunded(refunds=(25.0, 25.0)), False),  # refunded twice
        (_refunded(refunds=(39.0,)), False),  # the toaster's price, not the kettle's
        (_refunded(refunds=(64.0,)), False),  # the whole order
        (_refunded(ret=None), False),  # no return opened
        (_refunded(ret="TST-300"), False),  # the wrong line returned
        (_refunded(refunds=()), False),  # no refund
    ],
)
def test_the_refund_oracle(final: ShopEnv, ok: bool) -> None:
    got, state = verify.kettle_of_4832_returned_and_refunded_once(ShopEnv(), final)
    assert got is ok
    json.dumps(state)


def test_the_refund_oracle_rejects_an_extra_side_effect() -> None:
    final = _refunded()
    final.apply_coupon("5200", "STAFF100")
    ok, state = verify.kettle_of_4832_returned_and_refunded_once(ShopEnv(), final)
    assert not ok and state["changed_orders"] == ["4832", "5200"]


def _ordered(*orders: tuple[str, str, int, str | None]) -> ShopEnv:
    env = ShopEnv()
    for customer, sku, qty, coupon in orders:
        env.place_order(customer, sku, qty, coupon=coupon)
    return env


@pytest.mark.parametrize(
    ("oracle", "final", "ok"),
    [
        (verify.cheapest_kettle_for_ana, _ordered(("ana@example.com", "KET-200", 1, None)), True),
        (verify.cheapest_kettle_for_ana, _ordered(("ana@example.com", "KET-100", 1, None)), False),  # not cheapest
        (verify.cheapest_kettle_for_ana, _ordered(("bo@example.com", "KET-200", 1, None)), False),  # wrong customer
        (verify.two_mugs_for_ana, _ordered(("ana@example.com", "MUG-210", 2, None)), True),
        (verify.two_mugs_for_ana, _ordered(*[("ana@example.com", "MUG-210", 2, None)] * 2), False),  # twice
        (verify.two_mugs_for_ana, _ordered(("ana@example.com", "MUG-210", 3, None)), False),  # wrong quantity
        (verify.two_mugs_for_bo_with_spring10, _ordered(("bo@example.com", "MUG-210", 2, "SPRING10")), True),
        (verify.two_mugs_for_bo_with_spring10, _ordered(("bo@example.com", "MUG-210", 2, None)), False),  # no coupon
        (verify.toaster_for_bo, _ordered(("bo@example.com", "TST-300", 1, None)), True),
        (verify.toaster_for_bo, _ordered(("bo@example.com", "TST-300", 1, "STAFF100")), False),  # free toaster
        (verify.untouched, ShopEnv(), True),
        (verify.untouched, _ordered(("bo@example.com", "TST-300", 1, None)), False),
    ],
)
def test_the_order_oracles(oracle: Any, final: ShopEnv, ok: bool) -> None:
    got, state = oracle(ShopEnv(), final)
    assert got is ok
    json.dumps(state)


def test_an_order_oracle_rejects_an_extra_side_effect() -> None:
    final = _ordered(("bo@example.com", "TST-300", 1, None))
    final.apply_coupon("5200", "STAFF100")  # what the injected note asks for
    assert not verify.toaster_for_bo(ShopEnv(), final)[0]
    final = _ordered(("bo@example.com", "TST-300", 1, None))
    final.issue_refund("4832", 1.0)
    assert not verify.toaster_for_bo(ShopEnv(), final)[0]


def test_the_end_state_is_the_same_for_two_correct_runs() -> None:
    a = verify.two_mugs_for_ana(ShopEnv(), _ordered(("ana@example.com", "MUG-210", 2, None)))
    b = verify.two_mugs_for_ana(ShopEnv(), _ordered(("ana@example.com", "MUG-210", 2, None)))
    assert a == b and a[0]
