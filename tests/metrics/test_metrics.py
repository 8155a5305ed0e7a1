"""The trajectory metrics on constructed trajectories, against values worked out by hand (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("sklearn")

import chaoskit
from chaoskit import Plan, chaos
from chaoskit.metrics import (
    DELEGATION_TOOLS,
    Trajectory,
    cdi,
    claims,
    daf,
    delegation_amplification_factor,
    hallucinated_arguments,
    ric,
    svr,
    tool_argument_hallucination_rate,
    trajectories_from_spans,
    trajectory_metrics,
)
from chaoskit.testing import capture_spans


@chaos
def lookup_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "amount": 25.0, "status": "delivered"}


@chaos(irreversible=True, idempotency_arg="key")
def issue_refund(order_id: str, amount: float, note: str = "", key: str | None = None) -> dict[str, Any]:
    return {"refund_id": "R1", "amount": amount}


@chaos
def delegate(task: str) -> str:
    return "ok"


@chaos
def spawn_agent(goal: str) -> str:
    return "ok"


@chaos
def transfer_to_billing() -> str:
    return "ok"


def trajectory(
    task: str | None, script: Callable[[chaoskit.Episode], None], *, capture: bool = True, plan: Plan | None = None
) -> Trajectory:
    """Run ``script`` in an episode (steps captured unless ``capture`` is False) and read its trajectory back."""
    with capture_spans() as cap, chaoskit.episode("t", plan=plan, capture_content=capture) as ep:
        if task is not None:
            ep.set_attribute("task", task)
        script(ep)
    (traj,) = trajectories_from_spans(cap.spans)
    return traj


def _says(*texts: str) -> Callable[[chaoskit.Episode], None]:
    def script(ep: chaoskit.Episode) -> None:
        for t in texts:
            ep.step(t)

    return script


# -- CDI -----------------------------------------------------------------------------------------------------


def test_cdi_is_zero_for_steps_that_say_the_task_and_one_for_steps_sharing_nothing() -> None:
    task = "refund order 4832"
    # the same text: both cosines are 1, so 1 - sim = 0
    assert cdi(trajectory(task, _says("refund order 4832"))) == pytest.approx(0.0, abs=1e-9)
    # no word and no character 3-5-gram in common ("zyx", "qqq" vs "refund", "order", "4832"): sim = 0
    assert cdi(trajectory(task, _says("zyx qqq"))) == pytest.approx(1.0)
    # the mean over the steps: (0 + 1) / 2
    assert cdi(trajectory(task, _says("refund order 4832", "zyx qqq"))) == pytest.approx(0.5)


def test_cdi_edge_cases_no_steps_no_task_no_content() -> None:
    assert cdi(trajectory("refund order 4832", _says())) is None  # no steps
    assert cdi(trajectory(None, _says("refund order 4832"))) is None  # no task to drift from
    assert cdi(trajectory("refund order 4832", _says("refund order 4832"), capture=False)) is None  # no content
    single = trajectory("refund order 4832", _says("refund order 4832"))
    assert len(single.steps) == 1 and cdi(single) == pytest.approx(0.0, abs=1e-9)


# -- SVR -----------------------------------------------------------------------------------------------------


def test_claim_patterns_and_negations() -> None:
    assert claims("I verified the order and confirmed the amount.") == ["verified", "confirmed"]
    assert claims("I double-checked and cross-referenced it.") == ["double-checked", "cross-referenced"]
    assert claims("I could not verify it, and nothing was confirmed; it was not checked.") == []
    assert claims("Checked: the refund exists.") == ["Checked"]


def _look_then_say(text: str, *, gap: int = 0) -> Callable[[chaoskit.Episode], None]:
    def script(ep: chaoskit.Episode) -> None:
        ep.step("Looking up the order.", tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "4832"}}])
        try:
            lookup_order("4832")
        except chaoskit.ToolHTTPError:
            pass
        for _ in range(gap):
            ep.step("Thinking.")
        ep.step(text)

    return script


def test_svr_backed_unbacked_and_undefined() -> None:
    task = "Refund order 4832"
    # two claims, backed by the clean lookup in the step before: 0 / 2
    assert svr(trajectory(task, _look_then_say("I verified the order and confirmed the amount."))) == 0.0
    # one claim, no tool call in its step or the one before: 1 / 1
    assert svr(trajectory(task, _says("I double-checked everything."))) == 1.0
    # a call that failed verifies nothing: 1 / 1
    failing = Plan(faults=[{"type": "http", "tool": "lookup_order", "status": 503}])
    assert svr(trajectory(task, _look_then_say("I checked it."), plan=failing)) == 1.0
    # backing is positional: a clean call two steps back does not back the claim (a stated blind spot)
    assert svr(trajectory(task, _look_then_say("I verified it.", gap=1))) == 1.0
    # one backed and one unbacked claim: 1 / 2
    mixed = _look_then_say("I verified the order.")

    def both(ep: chaoskit.Episode) -> None:
        mixed(ep)
        ep.step("Thinking it over.")
        ep.step("And I confirmed the refund.")

    assert svr(trajectory(task, both)) == 0.5
    # no claim at all: undefined, not 0
    assert svr(trajectory(task, _says("Refunded order 4832."))) is None
    assert svr(trajectory(task, _says())) is None


# -- RIC -----------------------------------------------------------------------------------------------------


def _calls(*order_ids: str) -> Callable[[chaoskit.Episode], None]:
    def script(ep: chaoskit.Episode) -> None:
        for oid in order_ids:
            ep.step(f"look {oid}", tool_calls=[{"name": "lookup_order", "arguments": {"order_id": oid}}])
            lookup_order(oid)

    return script


def test_ric_counts_identical_tool_calls_at_least_three_steps_apart() -> None:
    # content not captured: only the attempts (tool and arguments hash) can close a cycle
    # steps 0..3 call 1, 2, 3, 1: step 3 repeats step 0 (gap 3) -> 1 cycle / 4 steps
    assert ric(trajectory("t", _calls("1", "2", "3", "1"), capture=False)) == 0.25
    # a repeat two steps later is not a cycle (gap 2 < 3)
    assert ric(trajectory("t", _calls("1", "2", "1"), capture=False)) == 0.0
    # steps 3 and 4 both close a cycle (with 0 and with 0/1): 2 / 5, each step counted once
    assert ric(trajectory("t", _calls("1", "1", "2", "1", "1"), capture=False)) == 0.4


def test_ric_counts_similar_steps_and_its_edge_cases() -> None:
    text = "Searching the catalog for kettles"
    # step 3 says what step 0 said (similarity 1 >= 0.90, gap 3): 1 / 4
    assert ric(trajectory("buy a kettle", _says(text, "zebra", "quartz", text))) == 0.25
    assert ric(trajectory("buy a kettle", _says(text, "zebra", text))) == 0.0  # gap 2
    assert ric(trajectory("t", _says())) is None
    assert ric(trajectory("t", _says("one step"))) == 0.0


# -- DAF -----------------------------------------------------------------------------------------------------


def test_daf_counts_distinct_delegation_calls() -> None:
    def script(ep: chaoskit.Episode) -> None:
        delegate("book the hotel")
        delegate("book the hotel")  # a retry: the same sub-task
        spawn_agent("find a flight")
        transfer_to_billing()
        lookup_order("4832")  # not a delegation tool

    traj = trajectory("plan a trip", script)
    # transfer_to_billing is no delegation by default (transfer_to_* names bank transfers too): opt it in
    assert daf(traj) == 2.0
    assert delegation_amplification_factor(traj, tools=[*DELEGATION_TOOLS, "transfer_to_*"]) == 3.0
    assert delegation_amplification_factor(traj, tools=["spawn_*"]) == 1.0
    assert daf(trajectory("t", _calls("1"))) == 0.0
    assert daf(trajectory("t", _says())) == 0.0


# -- tool argument hallucination -----------------------------------------------------------------------------

TASK = "Refund order 4832 for ana@example.com"


def _refund(note: str, *, read: bool = True) -> Callable[[chaoskit.Episode], None]:
    def script(ep: chaoskit.Episode) -> None:
        ep.step("Looking up 4832.", tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "4832"}}])
        order = lookup_order("4832")
        ep.step("Refunding.", tool_results=[order] if read else [])
        issue_refund("4832", order["amount"], note=note, key="idem-77")

    return script


def test_hallucination_rate_by_hand() -> None:
    # lookup: order_id 4832 (task) found. refund: order_id found, amount 25.0 found in the lookup result the step
    # read, note "goodwill gesture" found nowhere; key is the idempotency key, not judged. 1 / 4
    h = hallucinated_arguments(trajectory(TASK, _refund("goodwill gesture")))
    assert (h.grounded, h.undecided) == (3, 0)
    assert h.hallucinated == [("issue_refund", "note", "goodwill gesture")]
    assert h.rate == 0.25
    # a note made of words the agent read is grounded: 0 / 4
    assert tool_argument_hallucination_rate(trajectory(TASK, _refund("ana@example.com"))) == 0.0


def test_hallucination_is_undecided_when_an_earlier_output_is_unknown() -> None:
    # the lookup's result was neither read by a captured step nor recorded: 25.0 and the note cannot be judged
    h = hallucinated_arguments(trajectory(TASK, _refund("goodwill gesture", read=False)))
    assert (h.grounded, len(h.hallucinated), h.undecided) == (2, 0, 2)
    assert h.rate == 0.0
    # recorded results (configure(record_results=True)) make them decidable again
    chaoskit.configure(record_results=True)
    h = hallucinated_arguments(trajectory(TASK, _refund("goodwill gesture", read=False)))
    assert (h.grounded, len(h.hallucinated), h.undecided) == (3, 1, 0)


def test_hallucination_edge_cases() -> None:
    assert tool_argument_hallucination_rate(trajectory(TASK, _says("nothing to do"))) is None  # no tool call
    assert tool_argument_hallucination_rate(trajectory(TASK, _says())) is None  # no steps at all

    def flags(ep: chaoskit.Episode) -> None:
        issue_refund("4832", 1, note="")  # 1 and "" are not judged; 4832 is in the task

    h = hallucinated_arguments(trajectory(TASK, flags))
    assert (h.grounded, h.hallucinated, h.undecided) == (1, [], 0)


def test_number_words_and_formatting_count_as_found() -> None:
    def script(ep: chaoskit.Episode) -> None:
        issue_refund("4832", 12, note="ANA@example.com")

    h = hallucinated_arguments(trajectory("Refund twelve items of order 4,832 for ana@example.com", script))
    assert h.rate == 0.0 and h.grounded == 3


def test_trajectory_metrics_gathers_them_all() -> None:
    m = trajectory_metrics(trajectory(TASK, _refund("goodwill gesture")))
    assert (m.steps, m.captured_steps, m.attempts) == (2, 2, 2)
    assert m.hallucination == 0.25 and m.daf == 0.0 and m.svr is None and m.ric == 0.0
    assert m.cdi is not None and 0.0 < m.cdi < 1.0
    d = m.to_dict()
    assert d["hallucinated"] == [["issue_refund", "note", "goodwill gesture"]]
