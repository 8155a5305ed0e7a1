"""schema_drift and partial reach records nested in lists and dicts, and ``path:`` aims them."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit import Plan, PlanError, chaos
from chaoskit.testing import attempt_attributes, capture_spans

# what a ticket-search API returns: records in a list, each with a nested object
TICKETS: dict[str, Any] = {
    "results": [
        {"id": "T-1042", "status": "open", "assignee": {"user_id": 7, "display_name": "Ada"}},
        {"id": "T-1043", "status": "closed", "assignee": {"user_id": 9, "display_name": "Lin"}},
        {"id": "T-1044", "status": "open", "assignee": {"user_id": 7, "display_name": "Ada"}},
    ],
    "total": 3,
    "next_page": None,
}


@chaos
def search_tickets(query: str) -> dict[str, Any]:
    return copy.deepcopy(TICKETS)


@chaos
async def asearch_tickets(query: str) -> dict[str, Any]:
    await asyncio.sleep(0)
    return copy.deepcopy(TICKETS)


def call(fault: dict[str, Any], *, seed: int = 1) -> Any:
    with chaoskit.episode("nested", plan=Plan(seed=seed, faults=[{"tool": "search_tickets", **fault}])):
        return search_tickets("status:open assignee:ada")


def test_drop_reaches_every_nested_record() -> None:
    out = call({"type": "schema_drift", "drop": ["status"]})
    assert [r.get("status") for r in out["results"]] == [None, None, None]
    assert [r["id"] for r in out["results"]] == ["T-1042", "T-1043", "T-1044"]
    assert out["total"] == 3


def test_retype_and_rename_reach_records_two_levels_down() -> None:
    out = call({"type": "schema_drift", "retype": {"user_id": "str"}, "rename": {"display_name": "name"}})
    assert out["results"][0]["assignee"] == {"user_id": "7", "name": "Ada"}
    assert out["results"][1]["assignee"] == {"user_id": "9", "name": "Lin"}


def test_default_drift_turns_nested_keys_to_camel_case() -> None:
    out = call({"type": "schema_drift"})
    assert set(out) == {"results", "total", "nextPage"}
    assert out["results"][0]["assignee"] == {"userId": 7, "displayName": "Ada"}


def test_path_aims_drift_at_the_selected_records_only() -> None:
    out = call({"type": "schema_drift", "path": "results[*].assignee", "drop": ["user_id"]})
    assert [r["assignee"] for r in out["results"]] == [
        {"display_name": "Ada"},
        {"display_name": "Lin"},
        {"display_name": "Ada"},
    ]
    # the records around them keep their fields
    assert [r["status"] for r in out["results"]] == ["open", "closed", "open"]


def test_path_to_one_record_and_to_the_top_level() -> None:
    one = call({"type": "schema_drift", "path": "results[1]", "retype": {"status": "null"}})
    assert [r["status"] for r in one["results"]] == ["open", None, "open"]
    top = call({"type": "schema_drift", "path": "$", "drop": ["total", "id"]})
    assert "total" not in top
    assert [r["id"] for r in top["results"]] == ["T-1042", "T-1043", "T-1044"]  # aimed at the top: not nested


def test_partial_with_path_cuts_the_nested_list() -> None:
    out = call({"type": "partial", "path": "results", "items": 1})
    assert [r["id"] for r in out["results"]] == ["T-1042"]
    # the count still says 3: what a truncated page looks like, and what an agent must notice
    assert out["total"] == 3


def test_partial_without_path_still_cuts_the_top_level() -> None:
    out = call({"type": "partial", "keep": 0.4})
    assert out == {"results": TICKETS["results"]}


def test_partial_path_with_wildcards_cuts_each_record() -> None:
    out = call({"type": "partial", "path": "results.*.assignee", "keep": 0.5})
    assert [r["assignee"] for r in out["results"]] == [{"user_id": 7}, {"user_id": 9}, {"user_id": 7}]


def test_a_path_that_selects_nothing_changes_nothing() -> None:
    assert call({"type": "partial", "path": "items", "items": 1}) == TICKETS
    assert call({"type": "schema_drift", "path": "results[7]", "drop": ["id"]}) == TICKETS


def test_the_real_result_is_not_changed_in_place() -> None:
    kept: dict[str, Any] = copy.deepcopy(TICKETS)

    @chaos
    def cached_search(query: str) -> dict[str, Any]:
        return kept  # a tool that serves the same cached object every time

    plan = Plan(faults=[{"type": "schema_drift", "tool": "cached_search", "path": "results[*]", "drop": ["id"]}])
    with chaoskit.episode("cache", plan=plan):
        out = cached_search("x")
    assert "id" not in out["results"][0]
    assert kept == TICKETS


def test_nested_faults_are_the_same_under_any_seed_and_on_async_tools() -> None:
    fault = {"type": "schema_drift", "path": "results[*]", "retype": {"status": "int"}}
    outs = [call(fault, seed=s) for s in (0, 1, 99)]
    assert outs[0] == outs[1] == outs[2]
    plan = Plan(seed=5, faults=[{"tool": "asearch_tickets", **fault}])

    async def go() -> Any:
        with chaoskit.episode("async", plan=plan):
            return await asearch_tickets("x")

    assert asyncio.run(go()) == outs[0]
    assert [r["status"] for r in outs[0]["results"]] == [0, 0, 0]


def test_the_span_records_the_path() -> None:
    with capture_spans() as spans:
        call({"type": "partial", "path": "results", "items": 2})
    attrs = [a for a in attempt_attributes(spans) if a.get("chaoskit.fault.type") == "partial"]
    assert len(attrs) == 1
    assert attrs[0]["chaoskit.fault.path"] == "results"
    assert json.loads(attrs[0]["chaoskit.fault.value"]) == {**TICKETS, "results": TICKETS["results"][:2]}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("results[", "a bracket holds * or a whole number"),
        ("results[x]", "a bracket holds * or a whole number"),
        ("results..status", "an empty step"),
        ("results.", "ends with '.'"),
        ("results*", '"*" must be a step of its own'),
        ("", "must not be empty"),
    ],
)
def test_a_bad_path_is_rejected_when_the_plan_loads(tmp_path: Path, path: str, problem: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"seed: 1\nfaults:\n  - type: partial\n    tool: search\n    path: {path!r}\n", encoding="utf-8")
    with pytest.raises(PlanError) as err:
        Plan.from_yaml(plan)
    msg = str(err.value)
    assert msg.startswith(f"{plan}:5: faults[0].path: ")
    assert problem in msg
    assert '"[*]" for every item' in msg  # says what is allowed


def test_path_is_only_a_key_of_the_data_faults_that_reach_into_results() -> None:
    with pytest.raises(PlanError, match=r"faults\[0\]\.path: unknown key 'path'"):
        Plan(faults=[{"type": "timeout", "path": "results"}])
