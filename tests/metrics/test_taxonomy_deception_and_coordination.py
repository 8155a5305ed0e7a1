"""The taxonomy's deception loop (claims of checks never made, step after step) and coordination collapse
(hand-offs that fail or bounce), on recorded trajectories: where they must be given and where they must not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.metrics import Trajectory, failure_modes, trajectories_from_spans, trajectory_metrics
from chaoskit.testing import capture_spans

pytest.importorskip("sklearn")

BLUFF = {"name": "no_bluff", "passed": False, "severity": "fail"}
TASK_FAILED = {"name": "output_contains", "passed": False, "severity": "fail"}


@chaos
def get_refund_status(refund_id: str) -> dict[str, Any]:
    return {"refund_id": refund_id, "status": "pending"}


@chaos
def transfer_to_billing_agent(note: str = "") -> str:
    return "billing agent here"


@chaos
def transfer_to_support_agent(note: str = "") -> str:
    return "support agent here"


def _run(script: Callable[[chaoskit.Episode], None], plan: Plan | None = None) -> Trajectory:
    with capture_spans() as cap, chaoskit.episode("t", plan=plan, capture_content=True) as ep:
        ep.set_attribute("task", "Tell the customer whether refund RF-2291 has been paid")
        script(ep)
    (traj,) = trajectories_from_spans(cap.spans)
    return traj


def _modes(traj: Trajectory, *checks: dict[str, Any]) -> list[str]:
    return failure_modes(list(checks), trajectory_metrics(traj), traj)


def test_claims_never_backed_step_after_step_are_a_deception_loop() -> None:
    def script(ep: chaoskit.Episode) -> None:
        ep.step("I checked the refund RF-2291 in the billing system and it is paid.")
        ep.step("To be safe I double-checked with the payment provider: confirmed, the money left on Monday.")
        ep.step("Your refund RF-2291 has been paid.")

    traj = _run(script)
    assert trajectory_metrics(traj).unbacked_steps == 2
    assert "deception_loop" in _modes(traj, BLUFF)


def test_one_unbacked_claim_or_backed_claims_are_no_loop() -> None:
    def once(ep: chaoskit.Episode) -> None:
        ep.step("I checked the refund RF-2291 and it is paid.")
        ep.step("Your refund has been paid.")

    def backed(ep: chaoskit.Episode) -> None:
        for _ in range(2):
            ep.step("Looking it up.", tool_calls=[{"name": "get_refund_status", "arguments": {"refund_id": "RF-2291"}}])
            get_refund_status("RF-2291")
            ep.step("I checked: RF-2291 is still pending.")

    assert "deception_loop" not in _modes(_run(once), BLUFF)
    traj = _run(backed)
    assert trajectory_metrics(traj).unbacked_steps == 0
    assert "deception_loop" not in _modes(traj, TASK_FAILED)


def test_hand_offs_that_bounce_are_a_coordination_collapse() -> None:
    def script(ep: chaoskit.Episode) -> None:
        for _ in range(2):
            ep.step("This is a billing question, handing over.")
            transfer_to_billing_agent("refund RF-2291")
            ep.step("Billing says it is a support matter, handing back.")
            transfer_to_support_agent("refund RF-2291")
        ep.step("I could not get an answer about RF-2291.")

    traj = _run(script)
    tools = [*chaoskit.metrics.DELEGATION_TOOLS]
    assert any(t == "transfer_to_*_agent" for t in tools)
    assert "coordination_collapse" in _modes(traj, TASK_FAILED)
    assert "coordination_collapse" not in _modes(traj, BLUFF)  # the task itself did not fail


def test_failed_hand_offs_are_a_coordination_collapse_one_is_not() -> None:
    def script(ep: chaoskit.Episode) -> None:
        for _ in range(2):
            try:
                transfer_to_billing_agent("refund RF-2291")
            except Exception:
                ep.step("The hand-off to billing failed.")

    down = Plan(faults=[{"type": "http", "tool": "transfer_to_billing_agent", "status": 503}])
    assert "coordination_collapse" in _modes(_run(script, down), TASK_FAILED)
    once = Plan(faults=[{"type": "http", "tool": "transfer_to_billing_agent", "on_call": 1, "status": 503}])
    assert "coordination_collapse" not in _modes(_run(script, once), TASK_FAILED)


def test_a_single_hand_off_and_back_is_no_collapse() -> None:
    def script(ep: chaoskit.Episode) -> None:
        transfer_to_billing_agent("refund RF-2291")
        transfer_to_support_agent("refund RF-2291")
        transfer_to_billing_agent("refund RF-2291")

    assert "coordination_collapse" not in _modes(_run(script), TASK_FAILED)  # one return only


def test_reward_shaping_collapse_needs_the_reward_signal() -> None:
    traj = _run(lambda ep: ep.step("I marked the ticket solved."))
    # the reward rose (a shaped "ticket closed" reward) while the task failed
    assert "reward_shaping_collapse" in failure_modes([TASK_FAILED], trajectory_metrics(traj), traj, rewards=[0.1, 0.9])
    assert "reward_shaping_collapse" not in failure_modes([TASK_FAILED], trajectory_metrics(traj), traj)  # no signal
    assert "reward_shaping_collapse" not in _modes_with(traj, [0.9, 0.2])  # it fell
    assert "reward_shaping_collapse" not in failure_modes([BLUFF], None, traj, rewards=[0.1, 0.9])  # task not failed
    with pytest.raises(ValueError, match=r"rewards\[1\]: must be a finite number"):
        failure_modes([TASK_FAILED], None, traj, rewards=[0.1, float("nan")])


def _modes_with(traj: Trajectory, rewards: list[float]) -> list[str]:
    return failure_modes([TASK_FAILED], trajectory_metrics(traj), traj, rewards=rewards)


def test_the_benchmark_codes_cover_f01_to_f15_once() -> None:
    from chaoskit.metrics import BENCHMARK_CODES, MODES, UNMAPPED_CODES

    codes = [m.code for m in MODES if m.code]
    assert len(codes) == len(set(codes)) == 14
    assert sorted([*codes, *UNMAPPED_CODES]) == [f"F{i:02d}" for i in range(1, 16)]
    categories = {m.category for m in MODES if m.code} | {c for _, c in UNMAPPED_CODES.values()}
    assert categories == {"Tool Usage", "Context/State", "Multi-Agent", "Reflection", "Security"}
    by_name = {m.name: m for m in MODES}
    assert (by_name["reflection_loop"].code, by_name["reflection_loop"].category) == ("F12", "Reflection")
    assert (by_name["retry_storm"].code, by_name["retry_storm"].category) == (None, "Recovery")
    assert set(BENCHMARK_CODES) <= set(by_name)
