"""The taxonomy's F07 memory corruption (a value read, later used garbled; or a memory store's recall given as
``memory=``) and F14 cost-optimised failure amplification (a cheaper model once faults came; needs a price
table), on recorded trajectories: where they must be given and where they must not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.metrics import Prices, Trajectory, failure_modes, trajectories_from_spans
from chaoskit.metrics._modes_more import near_miss
from chaoskit.testing import capture_spans

TASK_FAILED = {"name": "end_state", "passed": False, "severity": "fail"}
PRICES = Prices.from_dict(
    {
        "per_tokens": 1000000,
        "models": {"gpt-4o": {"input": 2.5, "output": 10}, "gpt-4o-mini": {"input": 0.15, "output": 0.6}},
    }
)


@pytest.fixture(autouse=True)
def recorded() -> Iterator[None]:
    chaoskit.configure(record_results=True)
    yield


@chaos
def get_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "customer": "Ada Lovelace", "amount": 42.5, "status": "delivered"}


@chaos(irreversible=True)
def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    return {"refund_id": "R-1", "order_id": order_id, "amount": amount}


@chaos(irreversible=True)
def update_order(order_id: str, status: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": status}


def _run(script: Callable[[chaoskit.Episode], None], plan: Plan | None = None) -> Trajectory:
    with capture_spans() as cap, chaoskit.episode("t", plan=plan) as ep:
        ep.set_attribute("task", "Refund order 4832 in full")
        script(ep)
    (traj,) = trajectories_from_spans(cap.spans)
    return traj


def test_a_refund_of_a_garbled_amount_is_memory_corruption() -> None:
    def script(ep: chaoskit.Episode) -> None:
        get_order("4832")
        issue_refund("4832", 45.2)  # read 42.5, used 45.2: two digits swapped

    assert "memory_corruption" in failure_modes([TASK_FAILED], None, _run(script))


@pytest.mark.parametrize(
    "then",
    [
        lambda: issue_refund("4832", 42.5),  # the value as read
        lambda: update_order("4832", "cancelled"),  # a write sets a new value on purpose
        lambda: issue_refund("4832", 10.0),  # another amount, not a garbled copy of the one read
    ],
    ids=["as-read", "new-status", "other-amount"],
)
def test_values_used_as_read_or_set_on_purpose_are_not(then: Callable[[], Any]) -> None:
    def script(ep: chaoskit.Episode) -> None:
        get_order("4832")
        then()

    assert "memory_corruption" not in failure_modes([TASK_FAILED], None, _run(script))


def test_a_garbled_value_that_a_fault_produced_is_not_a_memory_slip() -> None:
    # the amount the agent used is the one a fault made it read: that is the fault's work (deceptive recovery etc.)
    plan = Plan(faults=[{"type": "stale_state", "tool": "get_order", "set": {"amount": 45.2}}])

    def script(ep: chaoskit.Episode) -> None:
        get_order("4832")
        issue_refund("4832", 45.2)

    assert "memory_corruption" not in failure_modes([TASK_FAILED], None, _run(script, plan))


def test_without_recorded_results_the_trace_cannot_show_it_and_memory_is_accepted() -> None:
    chaoskit.configure(record_results=False)

    def script(ep: chaoskit.Episode) -> None:
        get_order("4832")
        issue_refund("4832", 45.2)

    traj = _run(script)
    assert "memory_corruption" not in failure_modes([TASK_FAILED], None, traj)
    recalled = [("order:4832:amount", 42.5, 45.2)]
    assert "memory_corruption" in failure_modes([TASK_FAILED], None, traj, memory=recalled)
    assert "memory_corruption" not in failure_modes([TASK_FAILED], None, traj, memory=[("k", 1, 1)])
    with pytest.raises(ValueError, match=r"memory\[0\]: must be a \(key, stored, recalled\) triple"):
        failure_modes([TASK_FAILED], None, traj, memory=[("k", 1)])


def test_near_miss_is_a_garbled_copy_not_another_value() -> None:
    assert near_miss("4832", "4823") and near_miss(42.5, 45.2) and near_miss("FL-203", "FL-208")
    assert near_miss(42.5, 425.0) and near_miss("Smith", "Smyth")
    assert not near_miss("pending", "cancelled") and not near_miss(42.5, 10.0) and not near_miss("4832", "4832")


def _steps(before: str, after: str, plan: Plan) -> Trajectory:
    def script(ep: chaoskit.Episode) -> None:
        ep.step("Looking the order up.", model=before, input_tokens=900, output_tokens=40)
        try:
            get_order("4832")
        except Exception:
            pass
        ep.step("Retrying the lookup.", model=after, input_tokens=300, output_tokens=20)
        try:
            get_order("4832")
        except Exception:
            pass
        ep.step("I could not refund the order.", model=after, input_tokens=300, output_tokens=20)

    return _run(script, plan)


DOWN = Plan(faults=[{"type": "http", "tool": "get_order", "status": 503}])


def test_a_cheaper_model_once_faults_came_is_cost_amplification_with_prices() -> None:
    traj = _steps("gpt-4o", "gpt-4o-mini", DOWN)
    assert "cost_amplification" in failure_modes([TASK_FAILED], None, traj, prices=PRICES)
    assert "cost_amplification" not in failure_modes([TASK_FAILED], None, traj)  # no price table: cannot tell


@pytest.mark.parametrize(
    ("before", "after", "plan", "checks"),
    [
        ("gpt-4o", "gpt-4o", DOWN, [TASK_FAILED]),  # the same model
        ("gpt-4o-mini", "gpt-4o", DOWN, [TASK_FAILED]),  # a dearer one
        ("gpt-4o", "gpt-4o-mini", Plan(faults=[]), [TASK_FAILED]),  # no fault came
        ("gpt-4o", "gpt-4o-mini", DOWN, [{"name": "no_bluff", "passed": False, "severity": "fail"}]),  # task fine
        ("gpt-4o", "llama-local", DOWN, [TASK_FAILED]),  # a model the table does not price
    ],
    ids=["same", "dearer", "no-fault", "task-ok", "unpriced"],
)
def test_no_cost_amplification(before: str, after: str, plan: Plan, checks: list[dict[str, Any]]) -> None:
    assert "cost_amplification" not in failure_modes(checks, None, _steps(before, after, plan), prices=PRICES)


def test_the_two_modes_carry_their_codes() -> None:
    from chaoskit.metrics import MODES

    by_name = {m.name: m for m in MODES}
    assert (by_name["memory_corruption"].code, by_name["memory_corruption"].category) == ("F07", "Context/State")
    assert (by_name["cost_amplification"].code, by_name["cost_amplification"].category) == ("F14", "Security")
