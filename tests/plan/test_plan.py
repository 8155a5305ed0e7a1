"""Fault plans: loading, validation errors that name file/line/field, and the pure decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit import FAULT_TYPES, Plan, PlanError, faults

ISSUE_PLAN = """\
seed: 7
faults:
  - type: error            # alias: tool_error
    tool: search
    on_call: 1
    error: "ECONNRESET"
  - type: garbage          # alias: hallucination
    tool: read_file
    every: 3
    garbage: "stale-cache"
  - type: http
    tool: issue_refund
    on_call: 1
    status: 500
    after_write: true
  - type: rate_limit
    tool: search
    probability: 0.3
    retry_after: 2
"""


def write(tmp_path: Path, text: str, name: str = "plan.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_issue_example_loads(tmp_path: Path) -> None:
    plan = Plan.from_yaml(write(tmp_path, ISSUE_PLAN))
    assert plan.seed == 7
    assert [f.type for f in plan.faults] == ["error", "garbage", "http", "rate_limit"]
    assert isinstance(plan.faults[2], faults.HTTP) and plan.faults[2].after_write is True
    assert plan.faults[3].retry_after == 2
    assert plan.source == str(tmp_path / "plan.yaml")


def test_aliases_normalise() -> None:
    plan = Plan(faults=[{"type": "tool_error", "tool": "a"}, {"type": "hallucination", "tool": "b"}])
    assert [f.type for f in plan.faults] == ["error", "garbage"]


def test_python_objects_and_dicts_build_the_same_plan() -> None:
    a = Plan(seed=1, faults=[faults.HTTP(tool="refund", on_call=1, status=503, retry_after=1)])
    b = Plan(seed=1, faults=[{"type": "http", "tool": "refund", "on_call": 1, "status": 503, "retry_after": 1}])
    assert a.to_dict() == b.to_dict()
    assert Plan.from_dict(a.to_dict()).to_dict() == a.to_dict()


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (
            "seed: 1\nfaults:\n  - type: explode\n    tool: a\n",
            3,
            "faults[0]",
            ["unknown fault type 'explode'", "error"],
        ),
        ("faults:\n  - type: eror\n", 2, "faults[0]", ["did you mean 'error'"]),
        ("faults:\n  - type: error\n    tool: a\n    on_call: x\n", 4, "faults[0].on_call", ["call number", "'x'"]),
        ("faults:\n  - type: rate_limit\n    probability: 1.5\n", 3, "faults[0].probability", ["from 0 to 1"]),
        ("faults:\n  - type: http\n    status: 200\n", 3, "faults[0].status", ["400 to 599"]),
        (
            "faults:\n  - type: error\n    colour: red\n",
            3,
            "faults[0].colour",
            ["unknown key 'colour'", "allowed here", "on_call"],
        ),
        ("faults:\n  - type: latency\n    calls: 5-2\n", 3, "faults[0].calls", ['"2-5"']),
        ("faults:\n  - type: error\n    every: 0\n", 3, "faults[0].every", [">= 1"]),
        ("faults:\n  - type: error\n    exception: SystemExit\n", 3, "faults[0].exception", ["ConnectionResetError"]),
        ("faults:\n  - type: garbage\n    stale: true\n    off_by_one: true\n", 2, "faults[0]", ["only one of"]),
        ("sed: 3\n", 1, "sed", ["unknown key 'sed'", "did you mean 'seed'"]),
        ("faults:\n  - type: error\n    tool: [a, 3]\n", 3, "faults[0].tool", ["tool name"]),
    ],
)
def test_bad_plans_name_file_line_field_and_allowed(
    tmp_path: Path, text: str, line: int, field: str, words: list[str]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PlanError) as info:
        Plan.from_yaml(path)
    err = info.value
    assert err.source == str(path)
    assert err.line == line
    assert err.field == field
    message = str(err)
    assert message.startswith(f"{path}:{line}: {field}: ")
    for word in words:
        assert word in message


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "seed: 1\nfaults:\n  - type: error\n    tool: [a, b\n")
    with pytest.raises(PlanError, match=r"plan\.yaml:\d+: malformed YAML"):
        Plan.from_yaml(path)


def test_missing_file_and_wrong_top_level(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"nope\.yaml: file not found"):
        Plan.from_yaml(tmp_path / "nope.yaml")
    with pytest.raises(PlanError, match="must be a mapping"):
        Plan.from_yaml(write(tmp_path, "- 1\n- 2\n"))


def test_python_construction_errors_are_plan_errors() -> None:
    with pytest.raises(PlanError, match=r"faults\[0\]\.on_call"):
        Plan(faults=[{"type": "error", "on_call": "x"}])
    with pytest.raises(PlanError, match="unknown fault type"):
        Plan(faults=[{"type": "nope"}])
    assert set(FAULT_TYPES) >= {"error", "tool_error", "hallucination", "prompt_injection"}


def test_check_tools_names_the_unknown_tool() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "serch"}])
    with pytest.raises(PlanError, match=r"faults\[0\]\.tool: names tool 'serch'.*did you mean 'search'"):
        plan.check_tools(["search", "read_file"])
    plan.check_tools(["serch"])


def _fires(plan: Plan, tool: str, calls: int, args: dict[str, object] | None = None) -> list[int]:
    fired: dict[tuple[int, str], int] = {}
    out = []
    for n in range(1, calls + 1):
        d = plan.decide(tool, n, args or {}, fired)
        if d is not None:
            fired[(d[0], tool)] = fired.get((d[0], tool), 0) + 1
            out.append(n)
    return out


def test_triggers() -> None:
    assert _fires(Plan(faults=[{"type": "error", "on_call": [2, 4]}]), "t", 6) == [2, 4]
    assert _fires(Plan(faults=[{"type": "error", "every": 3}]), "t", 10) == [3, 6, 9]
    assert _fires(Plan(faults=[{"type": "error", "calls": "2-4"}]), "t", 6) == [2, 3, 4]
    assert _fires(Plan(faults=[{"type": "error", "calls": "5-"}]), "t", 7) == [5, 6, 7]
    assert _fires(Plan(faults=[{"type": "error", "calls": 3}]), "t", 5) == [3]
    assert _fires(Plan(faults=[{"type": "error", "times": 2}]), "t", 5) == [1, 2]
    assert _fires(Plan(faults=[{"type": "error"}]), "t", 3) == [1, 2, 3]
    # AND: every 2nd call, inside the window, at most twice
    assert _fires(Plan(faults=[{"type": "error", "every": 2, "calls": "3-10", "times": 2}]), "t", 10) == [4, 6]
    # tool selection
    assert _fires(Plan(faults=[{"type": "error", "tool": "other"}]), "t", 3) == []
    assert _fires(Plan(faults=[{"type": "error", "tool": ["a", "t"]}]), "t", 1) == [1]
    assert _fires(Plan(faults=[{"type": "error", "tool": "read_*"}]), "read_file", 1) == [1]
    # match: only calls whose arguments equal the given values
    m = Plan(faults=[{"type": "error", "match": {"order_id": "4832"}}])
    assert _fires(m, "t", 2, {"order_id": "4832", "x": 1}) == [1, 2]
    assert _fires(m, "t", 2, {"order_id": "1"}) == []


def test_first_matching_fault_wins() -> None:
    plan = Plan(faults=[{"type": "timeout", "on_call": 1}, {"type": "error"}])
    assert plan.decide("t", 1, {}, {}) == (0, plan.faults[0])
    assert plan.decide("t", 2, {}, {}) == (1, plan.faults[1])


def test_probability_is_seeded_per_tool_and_call() -> None:
    plan = Plan(seed=7, faults=[{"type": "error", "probability": 0.3}])
    first = _fires(plan, "search", 2000)
    assert first == _fires(Plan(seed=7, faults=[{"type": "error", "probability": 0.3}]), "search", 2000)
    assert first != _fires(Plan(seed=8, faults=[{"type": "error", "probability": 0.3}]), "search", 2000)
    assert 0.25 < len(first) / 2000 < 0.35
    # the draw for a call does not depend on which other calls were decided before it
    assert plan.decide("search", 1000, {}, {}) == (0, plan.faults[0]) if 1000 in first else True
    assert all(plan.decide("search", n, {}, {}) is not None for n in first[:50])
    assert _fires(Plan(seed=7, faults=[{"type": "error", "probability": 0}]), "t", 100) == []
    assert len(_fires(Plan(seed=7, faults=[{"type": "error", "probability": 1}]), "t", 100)) == 100


def test_times_is_a_budget_per_tool() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "*", "times": 1}])
    fired: dict[tuple[int, str], int] = {}
    seen = []
    for tool in ["a", "b", "a", "b"]:
        d = plan.decide(tool, 1 + seen.count(tool), {}, fired)
        if d is not None:
            fired[(d[0], tool)] = fired.get((d[0], tool), 0) + 1
        seen.append(tool)
        assert (d is not None) == (seen.count(tool) == 1)


# --- pydantic's own constructors and other Python inputs (issue 10) -------------------------------------


def test_model_validate_keeps_working_for_a_valid_dict() -> None:
    plan = Plan.model_validate(
        {"seed": 3, "faults": [{"type": "tool_error", "tool": "search", "on_call": 1, "error": "ECONNRESET"}]}
    )
    assert plan.seed == 3
    assert (plan.faults[0].type, plan.faults[0].error) == ("error", "ECONNRESET")
    assert Plan.model_validate_json('{"seed": 4, "faults": []}').seed == 4


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"seed": "x"}, "<python>: seed: must be a whole number, got 'x'"),
        ({"faults": [{"type": "nope"}]}, "<python>: faults[0]: unknown fault type 'nope'; allowed: error"),
        ({"faults": [{"type": "http", "status": 200}]}, "<python>: faults[0].status: must be an HTTP error status"),
        ({"sed": 1}, "<python>: sed: unknown key 'sed' (did you mean 'seed'?)"),
        ({1: 2}, "<python>: keys must be names, got 1; allowed: seed, name, faults"),
        (123, "<python>: Input should be a valid dictionary or instance of Plan (got 123)"),
    ],
)
def test_model_validate_raises_plan_error_not_pydantics(bad: object, says: str) -> None:
    with pytest.raises(PlanError) as err:
        Plan.model_validate(bad)
    assert str(err.value).startswith(says)


def test_model_validate_json_and_fault_classes_raise_plan_error() -> None:
    with pytest.raises(PlanError, match=r"<python>: .*Invalid JSON"):
        Plan.model_validate_json("{seed: 1")
    with pytest.raises(PlanError, match=r"<python>: retry_after: must be a finite number of seconds >= 0"):
        faults.RateLimit.model_validate({"tool": "search", "retry_after": -1})


def test_from_yaml_takes_bytes_as_yaml_text() -> None:
    plan = Plan.from_yaml(b"seed: 5\nfaults:\n  - {type: timeout, tool: search}\n")
    assert (plan.seed, plan.faults[0].type) == (5, "timeout")


@pytest.mark.parametrize("value", [None, 123, 1.5, ["seed: 1"], object()])
def test_from_yaml_rejects_what_is_neither_path_nor_text(value: object) -> None:
    with pytest.raises(PlanError) as err:
        Plan.from_yaml(value)  # type: ignore[arg-type]
    msg = str(err.value)
    assert "expected a YAML file path (str or os.PathLike) or YAML text (str or UTF-8 bytes)" in msg
    assert f"got {type(value).__name__}" in msg
    assert "file not found" not in msg


def test_an_empty_plan_file_is_an_error_but_an_empty_fault_list_is_not(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# the faults go here\n", encoding="utf-8")
    with pytest.raises(PlanError, match=r"empty\.yaml:1: holds no plan .*'faults: \[\]' for none"):
        Plan.from_yaml(empty)
    none = tmp_path / "none.yaml"
    none.write_text("faults: []\n", encoding="utf-8")
    assert Plan.from_yaml(none).faults == []
