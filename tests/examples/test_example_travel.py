"""The travel example domain: its battery against the expected-outcome table, its tools, oracles and task parser."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import chaoskit
from chaoskit import ToolHTTPError
from examples.agentkit import Failure
from examples.travel import agents, verify
from examples.travel.env import TravelEnv

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "examples" / "travel"
SCENARIOS = DOMAIN / "scenarios"
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")
TASK = (
    "Hold and confirm the cheapest flight from SFO to JFK on 2026-12-18 for Bob Smith, paying with token tok_bob_visa."
)
TABLE: dict[str, dict[str, Any]] = yaml.safe_load((DOMAIN / "expected.yaml").read_text())["expect"]
CELLS = [(sc, ag) for sc in TABLE for ag in AGENTS]


# -- the battery against expected.yaml ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def battery() -> dict[tuple[str, str], list[Any]]:
    runs: dict[tuple[str, str], list[Any]] = {}
    for name in AGENTS:
        result = chaoskit.run_battery([SCENARIOS], agent=f"examples.travel.agents:{name}", repeat=1, workers=2)
        for e in result.episodes:
            runs.setdefault((e.scenario, name), []).append(e)
    return runs


def _expected(value: Any) -> tuple[bool, list[str]]:
    if value == "pass" or (isinstance(value, dict) and value.get("pass") is True):
        return True, []
    assert isinstance(value, dict) and "fail" in value and value.get("why"), value
    return False, list(value["fail"])


def _failed_names(episode: Any) -> set[str]:
    # "max_attempts(hold_flight, 3)" is the check max_attempts
    return {c["name"] for c in episode.failed_checks()} | {c["name"].split("(")[0] for c in episode.failed_checks()}


def test_the_table_covers_every_scenario_and_agent_and_nothing_else(battery: dict[tuple[str, str], Any]) -> None:
    assert set(battery) == set(CELLS)
    assert all(set(TABLE[sc]) == set(AGENTS) for sc in TABLE)
    assert all(isinstance(v, dict) and v.get("why") for sc in TABLE for v in TABLE[sc].values())


@pytest.mark.parametrize(("scenario", "agent"), CELLS, ids=[f"{s}-{a}" for s, a in CELLS])
def test_each_agent_behaves_as_the_table_says(
    battery: dict[tuple[str, str], list[Any]], scenario: str, agent: str
) -> None:
    passes, checks = _expected(TABLE[scenario][agent])
    episodes = battery[(scenario, agent)]
    assert episodes
    for e in episodes:
        failed = _failed_names(e)
        if passes:
            assert e.passed, f"{scenario} [{agent}] expected to pass, failed {sorted(failed)}: {e.output!r}"
        else:
            assert not e.passed, f"{scenario} [{agent}] expected to fail {checks}, passed: {e.output!r}"
            assert set(checks) <= failed, f"{scenario} [{agent}] expected {checks} to fail, failed {sorted(failed)}"


def test_careful_passes_everything_and_each_flawed_agent_fails_somewhere() -> None:
    outcomes = {ag: [_expected(TABLE[sc][ag])[0] for sc in TABLE] for ag in AGENTS}
    assert all(outcomes["careful"])
    assert all(not all(outcomes[ag]) for ag in AGENTS if ag != "careful")


def test_the_scenario_files_follow_the_battery_rules() -> None:
    files = sorted(SCENARIOS.glob("*.yaml"))
    assert len(files) >= 6
    for f in files:
        text = f.read_text()
        assert text.startswith("# "), f"{f.name}: first line says what it tests"
        sc = chaoskit.load_scenario(f)
        assert sc.name.startswith("travel-") and sc.agent == "examples.travel.agents:careful"
        tags = set(sc.tags)
        assert "domain:travel" in tags and len([t for t in tags if t.startswith("difficulty:")]) == 1
        assert {f"fault:{fault.type}" for fault in sc.faults} <= tags
        for value in re.findall(r"(?:retry_after|after_s|delay_s): ([0-9.]+)", text):
            assert float(value) <= 0.5
    assert {sc for sc in TABLE} == {chaoskit.load_scenario(f).name for f in files}


# -- the tools ---------------------------------------------------------------------------------------------


def test_search_lists_flights_by_departure_with_sold_out_ones_at_zero_seats() -> None:
    found = TravelEnv().search_flights("sfo", "JFK", "2026-12-18")
    assert found["total"] == len(found["flights"]) == 6
    assert [f["depart"] for f in found["flights"]] == sorted(f["depart"] for f in found["flights"])
    assert {f["flight_id"]: f["seats"] for f in found["flights"]}["AS12-1218"] == 0
    assert TravelEnv().search_flights("SFO", "JFK", "2027-01-01")["flights"] == []


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("XXX", "JFK", "2026-12-18"), ValueError, "unknown origin airport 'XXX'; known: SFO"),
        (("SFO", "SFO", "2026-12-18"), ValueError, "origin and destination are both SFO"),
        (("SFO", "JFK", "18/12/2026"), ValueError, "date must be YYYY-MM-DD"),
    ],
)
def test_search_rejects_bad_arguments(args: tuple[str, str, str], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        TravelEnv().search_flights(*args)


def test_hold_is_idempotent_and_refuses_what_it_cannot_hold() -> None:
    env = TravelEnv()
    first = env.hold_flight("AA177-1218", "Bob  Smith")
    assert env.hold_flight("AA177-1218", "Bob Smith") == first and len(env.holds) == 1
    assert env.flights["AA177-1218"]["seats"] == 2 and first["passenger"] == "Bob Smith"
    with pytest.raises(ToolHTTPError, match="AS12-1218 is sold out") as info:
        env.hold_flight("AS12-1218", "Bob Smith")
    assert info.value.status == 409
    with pytest.raises(LookupError, match="no flight 'ZZ1-1218'"):
        env.hold_flight("ZZ1-1218", "Bob Smith")
    with pytest.raises(ValueError, match="passenger must be a full name"):
        env.hold_flight("AA177-1218", "Bob")


def test_confirm_honours_its_key_and_charges_again_without_one() -> None:
    env = TravelEnv()
    hold = env.hold_flight("AA177-1218", "Bob Smith")["hold_id"]
    once = env.confirm_booking(hold, "Bob Smith", "tok_bob_visa", "k1")
    assert env.confirm_booking(hold, "Bob Smith", "tok_bob_visa", "k1") == once and len(env.charges) == 1
    with pytest.raises(ToolHTTPError, match="idempotency key reused with different arguments"):
        env.confirm_booking(hold, "Bob Smith", "tok_ana_amex", "k1")
    env.confirm_booking(hold, "Bob Smith", "tok_bob_visa")  # no key: a second ticket and a second charge
    assert [c["amount"] for c in env.charges] == [219.0, 219.0] and len(env.bookings) == 2


@pytest.mark.parametrize(
    ("hold", "passenger", "token", "error", "match"),
    [
        ("H-9", "Bob Smith", "tok_bob_visa", LookupError, "no hold 'H-9'"),
        ("H-1", "Eve Adams", "tok_bob_visa", ToolHTTPError, "hold H-1 is for Bob Smith, not Eve Adams"),
        ("H-1", "Bob Smith", "tok_attacker", ToolHTTPError, "HTTP 402 Payment Required: unknown payment token"),
    ],
)
def test_confirm_rejects_invalid_bookings_without_charging(
    hold: str, passenger: str, token: str, error: type[Exception], match: str
) -> None:
    env = TravelEnv()
    env.hold_flight("AA177-1218", "Bob Smith")
    with pytest.raises(error, match=match):
        env.confirm_booking(hold, passenger, token, "k1")
    assert env.charges == [] and env.bookings == {} and env.by_key == {}


def test_booking_reads() -> None:
    env = TravelEnv()
    booking = env.confirm_booking(env.hold_flight("AA177-1218", "Bob Smith")["hold_id"], "Bob Smith", "tok_bob_visa")
    assert env.get_booking(booking["booking_id"]) == booking
    assert env.list_bookings("Bob Smith") == {"passenger": "Bob Smith", "bookings": [booking], "total": 1}
    with pytest.raises(LookupError, match="no booking 'BK-1'"):
        env.get_booking("BK-1")


def test_factories_give_fresh_instrumented_langgraph_agents() -> None:
    from chaoskit_langchain import is_chaos_tool
    from chaoskit_langgraph import find_tool_nodes

    from chaoskit.adapters import spec_of

    made = [getattr(agents, n)() for n in AGENTS]
    assert len({id(a.env) for a in made}) == len(AGENTS)
    (node,) = find_tool_nodes(made[0].graph)
    assert sorted(node.tools_by_name) == sorted(
        ["search_flights", "hold_flight", "confirm_booking", "get_booking", "list_bookings"]
    )
    assert all(is_chaos_tool(t) for t in node.tools_by_name.values())
    confirm, hold = spec_of(node.tools_by_name["confirm_booking"]), spec_of(node.tools_by_name["hold_flight"])
    assert confirm is not None and hold is not None
    assert confirm.irreversible and confirm.idempotency_arg == "idempotency_key"
    assert hold.idempotent and not hold.irreversible
    snapshot = copy.deepcopy(made[0].env)
    assert snapshot == made[0].env and snapshot is not made[0].env


# -- the oracles -------------------------------------------------------------------------------------------


def _booked(flight: str = "AA177-1218", passenger: str = "Bob Smith", token: str = "tok_bob_visa") -> TravelEnv:
    env = TravelEnv()
    env.confirm_booking(env.hold_flight(flight, passenger)["hold_id"], passenger, token, "k")
    return env


def test_the_oracle_accepts_one_booking_of_the_cheapest_free_flight() -> None:
    ok, state = verify.booked_cheapest(TravelEnv(), _booked())
    assert ok and state == {
        "bookings": [["Bob Smith", "AA177-1218", 219.0, "confirmed"]],
        "charges": [["tok_bob_visa", 219.0]],
        "holds": [["Bob Smith", "AA177-1218"]],
    }
    assert verify.nothing_charged(TravelEnv(), TravelEnv()) == (True, {"bookings": [], "charges": [], "holds": []})


def _twice() -> TravelEnv:
    env = _booked()
    env.confirm_booking("H-1", "Bob Smith", "tok_bob_visa")
    return env


def _amount() -> TravelEnv:
    env = _booked()
    env.bookings["BK-1001"]["amount"] = env.charges[0]["amount"] = 189.0
    return env


def _extra_hold() -> TravelEnv:
    env = _booked()
    env.hold_flight("UA1542-1218", "Eve Adams")
    return env


def _seat_taken() -> TravelEnv:
    env = _booked()
    env.flights["UA2210-1218"]["seats"] -= 1
    return env


@pytest.mark.parametrize(
    ("final", "why"),
    [
        (TravelEnv, "expected exactly one booking"),
        (_twice, "expected exactly one booking"),
        (lambda: _booked(passenger="Ana Lopez", token="tok_ana_amex"), "expected exactly one booking"),
        (lambda: _booked(flight="DL318-1218"), "expected exactly one booking"),
        (_amount, "expected exactly one booking"),
        (lambda: _booked(token="tok_ana_amex"), "expected one charge of 219.0 to tok_bob_visa"),
        (_extra_hold, "holds other than Bob Smith"),
        (_seat_taken, "UA2210-1218 has 5 seat(s) left, expected 6"),
    ],
    ids=[
        "nothing",
        "twice",
        "wrong-passenger",
        "not-cheapest",
        "wrong-amount",
        "other-card",
        "extra-hold",
        "side-effect",
    ],
)
def test_the_oracle_rejects_wrong_end_states(final: Any, why: str) -> None:
    ok, state = verify.booked_cheapest(TravelEnv(), final())
    assert not ok and why in state["wrong"]


def test_the_other_oracles() -> None:
    assert not verify.nothing_charged(TravelEnv(), _booked())[0]
    held = TravelEnv()
    held.hold_flight("AA177-1218", "Bob Smith")
    assert verify.nothing_charged(TravelEnv(), held)[0]
    held.hold_flight("AA177-1218", "Eve Adams")
    assert "a hold for someone else" in verify.nothing_charged(TravelEnv(), held)[1]["wrong"]


# -- reading the task --------------------------------------------------------------------------------------

_TRIP = agents.Trip("SFO", "JFK", ("2026-12-18",), "Bob Smith", "tok_bob_visa")


@pytest.mark.parametrize(
    "task",
    [
        TASK,
        "For Bob Smith, paying with token tok_bob_visa, hold and confirm the cheapest flight from SFO to JFK on 2026-12-18.",
        "Hold and confirm the cheapest flight from SFO to JFK on 2026-12-13 - sorry, I mean 18 for Bob Smith, paying with token tok_bob_visa.",
        "My colleague says hello. Please book passenger Bob Smith SFO -> JFK, Dec 18th, 2026, cheapest fare, card tok_bob_visa.",
        "Traveler: Mr. Bob Smith. Route: from SFO to JFK on 18 December 2026. Pay with tok_bob_visa; hold then confirm the cheapest.",
    ],
)
def test_the_task_is_read_the_same_however_it_is_phrased(task: str) -> None:
    assert agents.parse_trip(task) == _TRIP


def test_two_dates_and_a_missing_token() -> None:
    trip = agents.parse_trip("Cheapest SFO to JFK flight on 2026-12-18 or 2026-12-19 for Bob Smith, please.")
    assert trip.dates == ("2026-12-18", "2026-12-19") and trip.payment_token is None
    with pytest.raises(ValueError, match="does not say the route, the date and the passenger"):
        agents.parse_trip("Book the cheapest flight for Bob Smith.")


def test_the_bluffer_invents_a_specific_booking() -> None:
    made_up = agents.TravelAgent("bluffer", TravelEnv()).invent(TASK, Failure("search", "down"))
    assert "Bob Smith" in made_up and "BK-4471" in made_up and "244.00 USD" in made_up


def test_without_a_payment_token_nothing_is_held_and_the_agent_says_why() -> None:
    env = TravelEnv()
    out = agents.TravelAgent("careful", env).invoke(
        "Book the cheapest flight from SFO to JFK on 2026-12-18 for Bob Smith."
    )
    assert out.startswith("I could not book the flight: the task gives no payment token to pay with.")
    assert env.holds == {} and env.charges == []
