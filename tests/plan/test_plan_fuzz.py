"""Fuzzing the plan and scenario readers (hypothesis): any text, bytes or data either loads or raises PlanError."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskit import Plan, PlanError, Scenario, load_scenario

VALID_PLAN = """\
seed: 7
faults:
  - type: tool_error
    tool: search
    on_call: 1
    error: "ECONNRESET"
  - type: http
    tool: issue_refund
    on_call: [1, 3]
    status: 500
    after_write: true
  - type: partial
    tool: search_orders
    path: "results[*].lines"
    items: 1
  - type: schema_drift
    tool: search_orders
    path: "results[*]"
    retype: {status: int}
  - type: rate_limit
    tool: "read_*"
    calls: "2-5"
    probability: 0.3
    retry_after: 2
    match: {order_id: "4832"}
    times: 2
"""

VALID_SCENARIO = """\
name: refund-after-500
task: "Refund order 4832 for the damaged item"
seed: 3
timeout: 30
faults:
  - {type: http, tool: issue_refund, on_call: 1, status: 500, after_write: true}
  - {type: hallucination, tool: lookup_order, every: 2, garbage: "stale-cache"}
success:
  - output_contains: "refund"
  - max_retries: 4
  - no_bluff
  - no_retry_storm: {n: 2}
tags: [write, http]
"""

# the pieces YAML is made of, so that generated text reaches the parser's corners rather than one scalar
YAML_ATOMS = st.sampled_from(
    [
        "\n",
        " ",
        "  ",
        "- ",
        ": ",
        ":",
        "{",
        "}",
        "[",
        "]",
        ",",
        "&a ",
        "*a",
        "&b ",
        "*b",
        "!!str ",
        "!!int ",
        "!!python/object:os.system ",
        "? ",
        "|",
        ">",
        "#",
        "'",
        '"',
        "---\n",
        "...\n",
        "\t",
        "\x00",
        "%YAML 1.1\n",
        "seed",
        "faults",
        "type",
        "error",
        "tool",
        "on_call",
        "every",
        "calls",
        "probability",
        "match",
        "times",
        "path",
        "results[*]",
        "name",
        "task",
        "success",
        "timeout",
        "max_retries",
        "output_contains",
        "checks",
        "0",
        "1",
        "-1",
        "1.5",
        ".inf",
        ".nan",
        "true",
        "null",
        "~",
        "2-5",
        "tool_error",
        "hallucination",
    ]
)
yamlish = st.one_of(st.lists(YAML_ATOMS, max_size=60).map("".join), st.text(max_size=200))


def _mutations(doc: str) -> st.SearchStrategy[str]:
    """A valid document with a slice deleted, duplicated, or replaced by generated YAML pieces."""
    return st.tuples(st.integers(0, len(doc)), st.integers(0, 40), yamlish, st.sampled_from(["del", "dup", "put"])).map(
        lambda t: _mutate(doc, *t)
    )


def _mutate(doc: str, at: int, width: int, piece: str, how: str) -> str:
    end = min(len(doc), at + width)
    if how == "del":
        return doc[:at] + doc[end:]
    if how == "dup":
        return doc[:end] + doc[at:end] + doc[end:]
    return doc[:at] + piece + doc[end:]


def _loads_or_plan_error(load: Any, text: Any) -> None:
    try:
        load(text)
    except PlanError as exc:
        assert str(exc).strip()
        assert "Traceback" not in str(exc)


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_seed_documents_are_valid() -> None:
    assert len(Plan.from_yaml(VALID_PLAN).faults) == 5
    assert load_scenario(VALID_SCENARIO, resolve=False).success.max_attempts == {"*": 5}


@FUZZ
@given(yamlish)
def test_plan_reader_on_yamlish_text(text: str) -> None:
    _loads_or_plan_error(Plan.from_yaml, text + "\n")


@FUZZ
@given(yamlish)
def test_scenario_reader_on_yamlish_text(text: str) -> None:
    _loads_or_plan_error(lambda t: load_scenario(t, resolve=False), text + "\n")


@FUZZ
@given(_mutations(VALID_PLAN))
def test_plan_reader_on_mutated_plans(text: str) -> None:
    _loads_or_plan_error(Plan.from_yaml, text)


@FUZZ
@given(_mutations(VALID_SCENARIO))
def test_scenario_reader_on_mutated_scenarios(text: str) -> None:
    _loads_or_plan_error(lambda t: load_scenario(t, resolve=False), text)


@FUZZ
@given(st.binary(max_size=300))
def test_both_readers_on_bytes(data: bytes) -> None:
    _loads_or_plan_error(Plan.from_yaml, data)
    _loads_or_plan_error(lambda t: load_scenario(t, resolve=False), data)


# data as pydantic would get it from Python: any JSON-like value, at the places the readers look
json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
fault_like = st.dictionaries(
    st.sampled_from(
        [
            "type",
            "tool",
            "on_call",
            "every",
            "calls",
            "probability",
            "match",
            "times",
            "status",
            "path",
            "keep",
            "items",
            "drop",
            "retype",
            "garbage",
            "stale",
            "error",
            "exception",
        ]
    ),
    json_like,
    max_size=6,
).map(lambda d: {"type": "partial", **d} if "type" not in d else d)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["seed", "name", "faults", "extra"]),
        st.one_of(json_like, st.lists(fault_like, max_size=3)),
        max_size=3,
    )
)
def test_python_constructors_raise_only_plan_error(data: dict[str, Any]) -> None:
    for build in (
        lambda d: Plan(**d),
        Plan.model_validate,
        Plan.from_dict,
        lambda d: Plan.from_yaml(yaml.safe_dump(d) + "\n"),
    ):
        _loads_or_plan_error(build, data)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["name", "task", "seed", "timeout", "faults", "success", "tags"]),
        st.one_of(
            json_like,
            st.lists(fault_like, max_size=2),
            st.lists(
                st.dictionaries(
                    st.sampled_from(["output_contains", "max_retries", "no_bluff", "bogus"]),
                    json_like,
                    min_size=1,
                    max_size=1,
                ),
                max_size=3,
            ),
        ),
        max_size=6,
    )
)
def test_scenario_constructors_raise_only_plan_error(data: dict[str, Any]) -> None:
    _loads_or_plan_error(Scenario.model_validate, data)
    _loads_or_plan_error(lambda d: Scenario(**d), data)
