"""Properties of the pure fault decision, over generated plans and call sequences (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskit import Plan
from chaoskit.engine._context import Scope
from chaoskit.plan._triggers import uniform

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
    st.builds(
        lambda kind, trig: {"type": kind, **trig},
        st.sampled_from(["error", "timeout", "rate_limit", "latency", "empty"]),
        triggers,
    ),
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


ARGS = [{"q": 1}, {"q": 2}, {}, {"q": 1, "lang": "en"}]
windows = st.one_of(
    st.integers(1, 8),
    st.integers(1, 8).map(str),
    st.tuples(st.integers(1, 8), st.integers(0, 6)).map(lambda t: f"{t[0]}-{t[0] + t[1]}"),
    st.integers(1, 8).map(lambda lo: f"{lo}-"),
)
all_triggers = st.fixed_dictionaries(
    {},
    optional={
        "tool": st.sampled_from([*TOOLS, "*", "read_*", ["search", "issue_refund"]]),
        "on_call": st.one_of(st.integers(1, 12), st.lists(st.integers(1, 12), min_size=1, max_size=4)),
        "every": st.integers(1, 5),
        "calls": windows,
        "probability": st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)),
        "times": st.integers(1, 4),
        "match": st.sampled_from([{"q": 1}, {"q": 2}, {"lang": "en"}, {"q": 1, "lang": "en"}]),
    },
)
all_plans = st.builds(
    lambda seed, fs: Plan(seed=seed, faults=fs),
    st.integers(0, 2**31),
    st.lists(
        st.builds(
            lambda kind, trig: {"type": kind, **trig},
            st.sampled_from(["error", "timeout", "rate_limit", "empty"]),
            all_triggers,
        ),
        max_size=5,
    ),
)
all_calls = st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from(ARGS)), max_size=40)


def _in_window(window: int | str, n: int) -> bool:
    # read from the plan's own text, independently of the parser under test
    text = str(window)
    lo, dash, hi = text.partition("-")
    if not dash:
        return n == int(lo)
    return n >= int(lo) and (not hi or n <= int(hi))


def _expected(plan: Plan, given: dict[int, Any], sequence: list[tuple[str, dict[str, Any]]]) -> list[int | None]:
    """The README's rule, written out: the first fault whose triggers all hold fires; ``times`` per tool."""
    counters: dict[str, int] = {}
    fired: dict[tuple[int, str], int] = {}
    out: list[int | None] = []
    for tool, args in sequence:
        n = counters[tool] = counters.get(tool, 0) + 1
        chosen = None
        for i in range(len(plan.faults)):
            spec = given[i]
            names = spec.get("tool", "*")
            names = [names] if isinstance(names, str) else names
            if not any(x == "*" or x == tool or (x.endswith("*") and tool.startswith(x[:-1])) for x in names):
                continue
            on_call = spec.get("on_call")
            if on_call is not None and n not in ([on_call] if isinstance(on_call, int) else on_call):
                continue
            if "every" in spec and n % spec["every"]:
                continue
            if "calls" in spec and not _in_window(spec["calls"], n):
                continue
            if "match" in spec and any(args.get(k, object()) != v for k, v in spec["match"].items()):
                continue
            if "times" in spec and fired.get((i, tool), 0) >= spec["times"]:
                continue
            if "probability" in spec and not uniform(plan.seed, i, tool, n) < spec["probability"]:
                continue
            chosen = i
            break
        if chosen is not None:
            fired[(chosen, tool)] = fired.get((chosen, tool), 0) + 1
        out.append(chosen)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**31),
    st.lists(
        st.builds(
            lambda kind, trig: {"type": kind, **trig}, st.sampled_from(["error", "timeout", "empty"]), all_triggers
        ),
        max_size=5,
    ),
    all_calls,
)
def test_a_fault_fires_only_where_all_its_triggers_hold(
    seed: int, given_faults: list[dict[str, Any]], sequence: list[tuple[str, dict[str, Any]]]
) -> None:
    # every trigger is generated (tool, on_call, every, calls, match, probability, times), and the engine's
    # choice is compared with the rule written out independently: the first fault whose triggers all hold
    plan = Plan(seed=seed, faults=given_faults)
    got = [index for _, _, index in run(plan, sequence)]
    assert got == _expected(plan, dict(enumerate(given_faults)), sequence)
    for (_tool, args), index in zip(sequence, got, strict=True):
        if index is not None:
            spec = given_faults[index]
            assert "match" not in spec or all(args.get(k) == v for k, v in spec["match"].items())
            assert spec.get("probability", 1.0) > 0


@settings(max_examples=50, deadline=None)
@given(all_plans, all_calls)
def test_plans_with_every_trigger_round_trip(plan: Plan, sequence: list[tuple[str, dict[str, Any]]]) -> None:
    assert run(plan, sequence) == run(Plan.from_dict(plan.to_dict()), sequence)


def test_probability_fires_at_about_its_rate() -> None:
    # the draw is a hash: over 2,000 calls a p=0.3 fault fires 30% of the time, give or take 4 points
    plan = Plan(seed=11, faults=[{"type": "error", "tool": "search", "probability": 0.3}])
    hits = sum(index is not None for _, _, index in run(plan, [("search", {})] * 2000))
    assert 520 <= hits <= 680


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 12))
def test_on_call_alone_fires_exactly_there(seed: int, k: int) -> None:
    plan = Plan(seed=seed, faults=[{"type": "error", "tool": "search", "on_call": k}])
    got = [n for tool, n, index in run(plan, [("search", {})] * 15) if index is not None]
    assert got == [k]
