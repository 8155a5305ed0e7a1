"""``fault_not_injected`` fails a case only when the scenario's own fault never reached the tool.

Two agents that handled their faults must not fail it: one whose first call the tool itself rejected (so the
fault waited for the next call), and one run at ``--intensity`` whose background faults could not alter a
plain-text result. The case where it must fail (a data fault behind a callback handler) is in
tests/report/test_readiness.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chaoskit
from chaoskit import chaos


class OrderSearchAgent:
    """Searches with a typo first (the API answers with an error value), then with the right address."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}

    @chaos(description="Search orders by customer e-mail.")
    def search_orders(self, email: str) -> Any:
        if "@" not in email:
            return {"error": "invalid e-mail address"}
        return {"orders": [{"order_id": "4832", "item": "kettle"}]}

    def invoke(self, task: str) -> str:
        found = self.search_orders("ana.example.com")
        if isinstance(found, dict) and found.get("error"):
            found = self.search_orders("ana@example.com")
        orders = found.get("orders") if isinstance(found, dict) else None
        if not orders:
            return "The order search returned no orders for ana@example.com."
        return f"Orders: {orders}"


class WeatherAgent:
    """One lookup whose result is a bare number: a partial or drifted payload has nothing to change in it."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}

    @chaos(description="Current temperature in degrees Celsius.")
    def temperature(self, city: str) -> float:
        return 21.0

    def invoke(self, task: str) -> str:
        try:
            return f"The weather: {self.temperature('Oslo')}C"
        except Exception as exc:
            return f"I could not get the weather: {exc}"


def _checks(result: chaoskit.BatteryResult) -> list[str]:
    return [c["name"] for e in result.episodes for c in e.checks if not c["passed"]]


def test_a_fault_that_waited_for_the_next_call_was_injected(tmp_path: Path) -> None:
    path = tmp_path / "search-empty.yaml"
    path.write_text(
        'name: search-empty\ntask: "List the orders of ana@example.com"\n'
        "faults:\n  - {type: empty, tool: search_orders, times: 1}\n"
        'success:\n  output_contains: ["no orders"]\n',
        encoding="utf-8",
    )
    result = chaoskit.run_battery([path], agent=OrderSearchAgent)
    assert _checks(result) == []
    assert result.episodes[0].passed
    assert result.episodes[0].attempts["faults_met"] == [["search_orders", "empty"]]
    (row,) = [r for r in result.summary.readiness if r["tool"] == "search_orders"]
    assert "empty" in row["survived"] and not row["failed"]


def test_background_faults_the_scenario_did_not_plan_never_fail_it(tmp_path: Path) -> None:
    # the review's case: at --intensity, background data faults land on the call the tool itself rejects
    path = tmp_path / "search.yaml"
    path.write_text(
        'name: search\ntask: "List the orders of ana@example.com"\n'
        "faults:\n  - {type: latency, tool: search_orders, on_call: 9, delay_s: 0.001}\n"
        'success:\n  output_contains: ["orders"]\n',
        encoding="utf-8",
    )
    result = chaoskit.run_battery([path], agent=OrderSearchAgent, intensities=[0.5], profile="heavy", repeat=20)
    assert "fault_not_injected" not in _checks(result)
    # and where background data faults have nothing to alter (a bare number), nor does the scenario plan any
    plain = tmp_path / "weather.yaml"
    plain.write_text(
        'name: weather\ntask: "What is the weather in Oslo?"\nsuccess:\n  output_contains: ["weather"]\n',
        encoding="utf-8",
    )
    again = chaoskit.run_battery([plain], agent=WeatherAgent, intensities=[1.0], profile="heavy", repeat=10)
    assert "fault_not_injected" not in _checks(again)


class SilentOrderSearchAgent(OrderSearchAgent):
    """The same corrected search, but it states the emptied result as a fact."""

    def invoke(self, task: str) -> str:
        found = self.search_orders("ana.example.com")
        if isinstance(found, dict) and found.get("error"):
            found = self.search_orders("ana@example.com")
        orders = found.get("orders") if isinstance(found, dict) else None
        return "Ana has no orders." if not orders else f"Orders: {orders}"


def test_a_corrected_read_whose_answer_a_fault_emptied_is_still_graded(tmp_path: Path) -> None:
    # the superseded typo call owes no report, but the corrected call's emptied answer stated as fact must fail
    path = tmp_path / "search-empty.yaml"
    path.write_text(
        'name: search-empty\ntask: "List the orders of ana@example.com"\n'
        "faults:\n  - {type: empty, tool: search_orders, times: 1}\n",
        encoding="utf-8",
    )
    result = chaoskit.run_battery([path], agent=SilentOrderSearchAgent)
    assert not result.episodes[0].passed
    assert {"reports_failure", "no_fabrication"} & set(_checks(result))
