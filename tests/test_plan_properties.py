"""Properties of the pure fault decision, over generated plans and call sequences (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskit import Plan
from chaoskit._context import Scope

TOOLS = ["search", "read_file", "issue_refund"]

triggers = st.fixed_dictionaries(
    {},
    optional={
        "tool": st.sampled_from([*TOOLS, "*", "read_*"]),
        "on_call": st.one_of(st.integers(1, 12), st.lists(st.integers(1, 12), min_size=1, max_size=4)),
        "every": st.integers(1, 5),
        "calls": st.sampled_from(["1-3", "2-5", "4-", "6"]),
        "probability": st.floats(0, 1),
        "times": st.integers(1, 4),
        "match": st.sampled_from([{"q": 1}, {"q": 2}]),
    },
)
faults = st.lists(
    st.builds(lambda kind, trig: {"type": kind, **trig},
              st.sampled_from(["error", "timeout", "rate_limit", "latency", "empty"]), triggers),
    max_size=5,
)
plans = st.builds(lambda seed, fs: Plan(seed=seed, faults=fs), st.integers(0, 2**31), faults)
calls = st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from([{"q": 1}, {"q": 2}])), max_size=40)


def run(plan: Plan, sequence: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int, int | None]]:
    scope = Scope()
    out = []
    for tool, args in sequence:
        n, decision = scope.next_call(plan, tool, args)
        out.append((tool, n, decision[0] if decision else None))
    return out


@settings(max_examples=200, deadline=None)
@given(plans, calls)
def test_same_plan_and_calls_give_the_same_faults(plan: Plan, sequence: list[tuple[str, dict[str, Any]]]) -> None:
    assert run(plan, sequence) == run(Plan.from_dict(plan.to_dict()), sequence)


@settings(max_examples=200, deadline=None)
@given(plans, calls, st.randoms(use_true_random=False))
def test_other_tools_interleaving_never_changes_a_tools_faults(
    plan: Plan, sequence: list[tuple[str, dict[str, Any]]], rnd: Any
) -> None:
    # what parallel calls to other tools do: change the global order, never one tool's own order
    shuffled = list(sequence)
    rnd.shuffle(shuffled)
    by_tool: dict[str, list[tuple[str, dict[str, Any]]]] = {t: [] for t in TOOLS}
    for tool, args in sequence:
        by_tool[tool].append((tool, args))
    queues = {t: list(v) for t, v in by_tool.items()}
    interleaved = [queues[tool].pop(0) for tool, _ in shuffled]

    def per_tool(result: list[tuple[str, int, int | None]]) -> set[tuple[str, int, int | None]]:
        return set(result)

    assert per_tool(run(plan, sequence)) == per_tool(run(plan, interleaved))


@settings(max_examples=200, deadline=None)
@given(plans, calls)
def test_a_fault_fires_only_where_all_its_triggers_hold(plan: Plan, sequence: list[tuple[str, dict[str, Any]]]) -> None:
    fired_count: dict[tuple[int, str], int] = {}
    for tool, n, index in run(plan, sequence):
        if index is None:
            continue
        fault = plan.faults[index]
        fired_count[(index, tool)] = fired_count.get((index, tool), 0) + 1
        assert fault.targets(tool)
        assert fault.on_call is None or n in fault.on_call
        assert fault.every is None or n % fault.every == 0
        assert fault.times is None or fired_count[(index, tool)] <= fault.times
        if fault.probability is not None:
            assert fault.probability > 0


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 12))
def test_on_call_alone_fires_exactly_there(seed: int, k: int) -> None:
    plan = Plan(seed=seed, faults=[{"type": "error", "tool": "search", "on_call": k}])
    got = [n for tool, n, index in run(plan, [("search", {})] * 15) if index is not None]
    assert got == [k]
