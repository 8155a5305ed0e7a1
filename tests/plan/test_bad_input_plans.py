"""Corpus of malformed plan and scenario files: each is a clear error through ``chaoskit validate`` (exit 2) and
through the Python API (``PlanError``), naming the file, the line and the field, saying what is allowed, with no
traceback, and (for alias bombs and deep nesting) fast."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli

from chaoskit import Plan, PlanError, load_scenario


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "plan" or "scenario": which Python loader reads it
    body: str | bytes
    line: int | None  # None where a file has no line to name (binary, too large)
    field: str | None
    allowed: tuple[str, ...]


FAULT_TYPES = ("error", "timeout", "http", "rate_limit", "partial", "schema_drift", "garbage", "tool_error")

BOMB = "".join(
    ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n']
    + [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n" for i in range(1, 9)]
    + ["faults: *l8\n"]
)
DEEP_FLOW = "seed: 1\nfaults: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_BLOCK = "seed: 1\nfaults:\n" + "".join("  " * (i + 1) + f"- k{i}:\n" for i in range(150)) + "  " * 151 + "x\n"


def plan(faults_yaml: str, head: str = "seed: 7\n") -> str:
    return head + "faults:\n" + faults_yaml


def fault(body: str) -> str:
    """One fault entry at line 3 of the plan; its keys on the lines after."""
    return plan("  - " + body.replace("\n", "\n    ") + "\n")


SCENARIO = 'name: refund-after-500\ntask: "Refund order 4832"\n'


def scenario(rest: str, head: str = SCENARIO) -> str:
    return head + rest


PLAN_CASES = [
    # fault types
    Case("unknown-type", "plan", fault("type: explode\ntool: search"), 3, "faults[0]", ("allowed: error",)),
    Case(
        "misspelt-type", "plan", fault("type: tool_eror\ntool: search"), 3, "faults[0]", ("did you mean 'tool_error'",)
    ),
    Case("type-missing", "plan", fault("tool: search\non_call: 1"), 3, "faults[0]", ("missing 'type'", "timeout")),
    Case("type-not-a-name", "plan", fault("type: 5"), 3, "faults[0]", ("type must be a name", "rate_limit")),
    Case("fault-not-a-mapping", "plan", plan("  - error\n"), 3, "faults[0]", ("mapping with a 'type' key",)),
    Case("fault-null", "plan", plan("  - null\n"), 3, "faults[0]", ("mapping with a 'type' key",)),
    Case("faults-not-a-list", "plan", "seed: 1\nfaults: {type: error}\n", 2, "faults", ("valid list",)),
    # triggers
    Case("on-call-zero", "plan", fault("type: error\non_call: 0"), 4, "faults[0].on_call", ("1 is the first call",)),
    Case("on-call-negative", "plan", fault("type: error\non_call: -2"), 4, "faults[0].on_call", ("call number",)),
    Case("on-call-word", "plan", fault("type: error\non_call: first"), 4, "faults[0].on_call", ("call number",)),
    Case("on-call-empty-list", "plan", fault("type: error\non_call: []"), 4, "faults[0].on_call", ("a list of them",)),
    Case("on-call-float", "plan", fault("type: error\non_call: 1.5"), 4, "faults[0].on_call", ("call number",)),
    Case("every-zero", "plan", fault("type: error\nevery: 0"), 4, "faults[0].every", ("whole number >= 1",)),
    Case("every-string", "plan", fault('type: error\nevery: "2"'), 4, "faults[0].every", ("whole number >= 1",)),
    Case("calls-backwards", "plan", fault('type: error\ncalls: "5-2"'), 4, "faults[0].calls", ('"2-5"',)),
    Case("calls-word", "plan", fault("type: error\ncalls: always"), 4, "faults[0].calls", ('"3-" (3 onwards)',)),
    Case("calls-zero", "plan", fault("type: error\ncalls: 0"), 4, "faults[0].calls", ("window of call numbers",)),
    Case(
        "probability-above-1",
        "plan",
        fault("type: error\nprobability: 1.5"),
        4,
        "faults[0].probability",
        ("from 0 to 1",),
    ),
    Case(
        "probability-negative",
        "plan",
        fault("type: error\nprobability: -0.1"),
        4,
        "faults[0].probability",
        ("from 0 to 1",),
    ),
    Case(
        "probability-word",
        "plan",
        fault("type: error\nprobability: often"),
        4,
        "faults[0].probability",
        ("from 0 to 1",),
    ),
    Case(
        "probability-bool",
        "plan",
        fault("type: error\nprobability: true"),
        4,
        "faults[0].probability",
        ("from 0 to 1",),
    ),
    Case("times-zero", "plan", fault("type: error\ntimes: 0"), 4, "faults[0].times", ("whole number >= 1",)),
    Case(
        "match-not-a-mapping",
        "plan",
        fault("type: error\nmatch: order_id=4832"),
        4,
        "faults[0].match",
        ("valid dictionary",),
    ),
    Case("tool-empty", "plan", fault('type: error\ntool: ""'), 4, "faults[0].tool", ('"*" for every tool',)),
    Case("tool-empty-list", "plan", fault("type: error\ntool: []"), 4, "faults[0].tool", ("list of tool names",)),
    Case("tool-number", "plan", fault("type: error\ntool: 5"), 4, "faults[0].tool", ("a tool name",)),
    # keys
    Case(
        "unknown-fault-key",
        "plan",
        fault("type: error\nretries: 3"),
        4,
        "faults[0].retries",
        ("allowed here:", "on_call"),
    ),
    Case(
        "harness-word-for-error",
        "plan",
        fault("type: tool_error\nmessage: ECONNRESET"),
        4,
        "faults[0].message",
        ("did you mean 'error'",),
    ),
    Case(
        "harness-word-for-probability",
        "plan",
        fault("type: error\nrate: 0.2"),
        4,
        "faults[0].rate",
        ("did you mean 'probability'",),
    ),
    Case("unknown-top-key", "plan", "seeds: 3\nfaults: []\n", 1, "seeds", ("did you mean 'seed'",)),
    Case("non-string-top-key", "plan", "1: x\nfaults: []\n", 1, None, ("keys must be names",)),
    Case("seed-word", "plan", "seed: abc\nfaults: []\n", 1, "seed", ("whole number",)),
    Case("seed-float", "plan", "seed: 1.5\nfaults: []\n", 1, "seed", ("whole number",)),
    Case("seed-bool", "plan", "seed: true\nfaults: []\n", 1, "seed", ("whole number",)),
    Case("name-not-text", "plan", "name: [a, b]\nfaults: []\n", 1, "name", ("valid string",)),
    # fault parameters
    Case("http-status-200", "plan", fault("type: http\nstatus: 200"), 4, "faults[0].status", ("400 to 599",)),
    Case("http-status-text", "plan", fault('type: http\nstatus: "500"'), 4, "faults[0].status", ("400 to 599",)),
    Case(
        "after-write-maybe",
        "plan",
        fault("type: http\nafter_write: maybe"),
        4,
        "faults[0].after_write",
        ("valid boolean",),
    ),
    Case(
        "retry-after-negative",
        "plan",
        fault("type: rate_limit\nretry_after: -1"),
        4,
        "faults[0].retry_after",
        ("seconds >= 0",),
    ),
    Case("after-s-word", "plan", fault("type: timeout\nafter_s: soon"), 4, "faults[0].after_s", ("seconds >= 0",)),
    Case(
        "delay-infinite",
        "plan",
        fault("type: latency\ndelay_s: .inf"),
        4,
        "faults[0].delay_s",
        ("finite number of seconds",),
    ),
    Case(
        "exception-not-allowed",
        "plan",
        fault("type: error\nexception: SystemExit"),
        4,
        "faults[0].exception",
        ("ConnectionResetError",),
    ),
    Case("keep-above-1", "plan", fault("type: partial\nkeep: 1.5"), 4, "faults[0].keep", ("not including) 1",)),
    Case("keep-exactly-1", "plan", fault("type: partial\nkeep: 1"), 4, "faults[0].keep", ("not including) 1",)),
    Case("items-zero", "plan", fault("type: partial\nitems: 0"), 4, "faults[0].items", ("whole number >= 1",)),
    Case(
        "path-open-bracket",
        "plan",
        fault('type: partial\npath: "results["'),
        4,
        "faults[0].path",
        ('"[*]" for every item',),
    ),
    Case("path-not-text", "plan", fault("type: schema_drift\npath: 5"), 4, "faults[0].path", ('"[n]" for item n',)),
    Case(
        "path-empty-step",
        "plan",
        fault("type: schema_drift\npath: results..status"),
        4,
        "faults[0].path",
        ("an empty step", 'e.g. "results[*]"'),
    ),
    Case(
        "retype-unknown-type",
        "plan",
        fault("type: schema_drift\nretype: {status: integer}"),
        4,
        "faults[0].retype",
        ("str, int, float, bool, list, null",),
    ),
    Case("drop-not-a-list", "plan", fault("type: schema_drift\ndrop: status"), 4, "faults[0].drop", ("valid list",)),
    Case(
        "garbage-two-modes",
        "plan",
        fault("type: garbage\nstale: true\noff_by_one: true"),
        3,
        "faults[0]",
        ("only one of garbage, stale, off_by_one",),
    ),
    Case(
        "second-fault-bad",
        "plan",
        plan("  - {type: error, tool: search}\n  - {type: http, status: 302}\n"),
        4,
        "faults[1].status",
        ("400 to 599",),
    ),
    # YAML itself
    Case("duplicate-top-key", "plan", "seed: 1\nfaults: []\nseed: 2\n", 3, "seed", ("give it once",)),
    Case(
        "duplicate-fault-key",
        "plan",
        fault("type: error\ntool: search\ntool: read_file"),
        5,
        "faults[0].tool",
        ("given twice (first on line 4)",),
    ),
    Case("tab-indent", "plan", "seed: 1\nfaults:\n\t- type: error\n", 3, None, ("indent with spaces",)),
    Case("unclosed-bracket", "plan", "seed: 1\nfaults: [\n", 3, None, ("malformed YAML",)),
    Case("unclosed-quote", "plan", 'seed: 1\nfaults:\n  - type: "error\n', 4, None, ("malformed YAML",)),
    Case("bad-indentation", "plan", "seed: 1\n faults: []\n", 2, None, ("malformed YAML",)),
    Case("two-documents", "plan", "seed: 1\n---\nseed: 2\n", 2, None, ("one plan or scenario per file",)),
    Case("undefined-alias", "plan", "seed: 1\nfaults: *nope\n", 2, None, ("undefined alias",)),
    Case(
        "python-tag",
        "plan",
        'seed: !!python/object/apply:os.system ["true"]\n',
        1,
        None,
        ("could not determine a constructor",),
    ),
    Case("top-level-list", "plan", "- type: error\n  tool: search\n", 1, None, ("mapping with 'seed' and 'faults'",)),
    Case("top-level-scalar", "plan", "just some words\n", 1, None, ("mapping with 'seed' and 'faults'",)),
    Case("empty-file", "plan", "", 1, None, ("'faults: []' for none",)),
    Case("comments-only", "plan", "# TODO: write the plan\n", 1, None, ("'faults: []' for none",)),
    Case("binary-file", "plan", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", None, None, ("expected a YAML text",)),
    Case("nul-characters", "plan", "seed: 1\nfaults: [\x00]\n", 2, None, ("control characters are not allowed",)),
    Case("latin-1-file", "plan", "seed: 1\nname: caf\xe9\n".encode("latin-1"), None, None, ("not UTF-8 text",)),
    # sizes: each must also fail fast (see test_size_limits_fail_fast)
    Case("alias-bomb", "plan", BOMB, 5, "l4", ("100,000 values",)),
    Case("deep-flow-nesting", "plan", DEEP_FLOW, 2, "faults[0][0][0][0][0]...", ("more than 100 levels",)),
    Case("deep-block-nesting", "plan", DEEP_BLOCK, 52, None, ("more than 100 levels",)),
    Case("cyclic-alias", "plan", "seed: 1\nfaults: &f [*f]\n", 2, "faults[0]", ("aliases may only repeat",)),
    Case(
        "too-large",
        "plan",
        "seed: 1\nfaults: []\n# " + "x" * 1_000_100 + "\n",
        None,
        None,
        ("limited to 1,000,000 bytes",),
    ),
]

SCENARIO_CASES = [
    Case("task-empty", "scenario", 'name: s\ntask: ""\n', 2, "task", ("give the request the agent gets",)),
    Case("task-blank", "scenario", 'name: s\ntask: "   "\n', 2, "task", ("must not be empty",)),
    Case("task-missing", "scenario", "name: s\ntags: [refund]\n", 1, "task", ("this field is required",)),
    Case("name-missing", "scenario", "task: t\n", 1, "name", ("this field is required",)),
    Case("name-empty", "scenario", 'name: ""\ntask: t\n', 1, "name", ("give the scenario a name",)),
    Case("timeout-zero", "scenario", scenario("timeout: 0\n"), 3, "timeout", ("seconds > 0",)),
    Case("timeout-negative", "scenario", scenario("timeout: -5\n"), 3, "timeout", ("seconds > 0",)),
    Case("timeout-word", "scenario", scenario("timeout: fast\n"), 3, "timeout", ("seconds > 0",)),
    Case("timeout-infinite", "scenario", scenario("timeout: .inf\n"), 3, "timeout", ("seconds > 0",)),
    Case("scenario-seed-word", "scenario", scenario("seed: x\n"), 3, "seed", ("whole number",)),
    Case("scenario-seed-bool", "scenario", scenario("seed: true\n"), 3, "seed", ("whole number",)),
    Case(
        "harness-prompt",
        "scenario",
        "name: s\nprompt: Refund order 4832\n",
        2,
        "prompt",
        ("did you mean 'task'", "allowed here:"),
    ),
    Case("unknown-scenario-key", "scenario", scenario("retries: 3\n"), 3, "retries", ("allowed here:", "success")),
    Case(
        "success-misspelt",
        "scenario",
        scenario("success:\n  output_contain: [refund]\n"),
        4,
        "success.output_contain",
        ("did you mean 'output_contains'",),
    ),
    Case(
        "success-list-unknown",
        "scenario",
        scenario("success:\n  - output_contains: refund\n  - retries: 3\n"),
        5,
        "success[1].retries",
        ("did you mean 'max_retries'", "or a check:"),
    ),
    Case(
        "success-list-two-keys",
        "scenario",
        scenario("success:\n  - {output_contains: a, state: b}\n"),
        4,
        "success[0]",
        ("one criterion with one key",),
    ),
    Case("success-list-number", "scenario", scenario("success:\n  - 5\n"), 4, "success[0]", ("'- max_retries: 4'",)),
    Case(
        "success-list-bad-check",
        "scenario",
        scenario("success:\n  - no_blufff\n"),
        4,
        "success.checks",
        ("did you mean 'no_bluff'",),
    ),
    Case("success-string", "scenario", scenario("success: all good\n"), 3, "success", ("valid dictionary",)),
    Case(
        "max-retries-negative",
        "scenario",
        scenario("success:\n  - max_retries: -1\n"),
        4,
        "success.max_retries",
        ("whole number of retries >= 0",),
    ),
    Case(
        "max-retries-word",
        "scenario",
        scenario("success:\n  max_retries: four\n"),
        4,
        "success.max_retries",
        ("whole number of retries >= 0",),
    ),
    Case(
        "max-retries-disagree",
        "scenario",
        scenario('success:\n  max_attempts: {"*": 3}\n  max_retries: 4\n'),
        3,
        "success",
        ("give one of them",),
    ),
    Case(
        "min-attempts-zero",
        "scenario",
        scenario("success:\n  min_attempts: {issue_refund: 0}\n"),
        4,
        "success.min_attempts",
        (">= 1",),
    ),
    Case(
        "max-attempts-negative",
        "scenario",
        scenario("success:\n  max_attempts: {issue_refund: -1}\n"),
        4,
        "success.max_attempts",
        (">= 0",),
    ),
    Case(
        "max-attempts-text",
        "scenario",
        scenario('success:\n  max_attempts: {issue_refund: "3"}\n'),
        4,
        "success.max_attempts",
        ("whole number",),
    ),
    Case(
        "max-attempts-list-form-not-mapping",
        "scenario",
        scenario("success:\n  - max_attempts: 3\n"),
        4,
        "success[0].max_attempts",
        ("a limit per tool", "{search: 3}"),
    ),
    Case(
        "output-contains-empty",
        "scenario",
        scenario('success:\n  output_contains: [""]\n'),
        4,
        "success.output_contains",
        ("give the text",),
    ),
    Case(
        "output-not-contains-empty",
        "scenario",
        scenario('success:\n  - output_not_contains: ""\n'),
        4,
        "success.output_not_contains",
        ("give the text",),
    ),
    Case(
        "required-tool-empty",
        "scenario",
        scenario('success:\n  required_tools: [""]\n'),
        4,
        "success.required_tools",
        ("tool name",),
    ),
    Case(
        "unknown-check",
        "scenario",
        scenario("success:\n  checks: [no_blufff]\n"),
        4,
        "success.checks",
        ("did you mean 'no_bluff'", "known checks:"),
    ),
    Case(
        "check-bad-param-value",
        "scenario",
        scenario("success:\n  checks: [{no_retry_storm: {n: 0}}]\n"),
        4,
        "success.checks",
        ("whole number >= 1",),
    ),
    Case(
        "check-unknown-param",
        "scenario",
        scenario("success:\n  checks: [{no_bluff: {strict: true}}]\n"),
        4,
        "success.checks",
        ("has no parameter 'strict'",),
    ),
    Case(
        "attempt-bound-as-check",
        "scenario",
        scenario("success:\n  checks: [max_attempts]\n"),
        4,
        "success.checks",
        ("success.max_attempts: {tool: n}",),
    ),
    Case(
        "state-not-a-ref",
        "scenario",
        scenario("success:\n  state: verify the refund\n"),
        4,
        "success.state",
        ("'module:function' reference",),
    ),
    Case(
        "state-does-not-import",
        "scenario",
        scenario("success:\n  state: no_such_module_xyz:check\n"),
        4,
        "success.state",
        ("cannot import module 'no_such_module_xyz'",),
    ),
    Case(
        "agent-does-not-import",
        "scenario",
        scenario("agent: no_such_module_xyz:make\n"),
        3,
        "agent",
        ("cannot import module",),
    ),
    Case(
        "agent-attr-missing",
        "scenario",
        scenario("agent: examples.plain.agents:carefull\n"),
        3,
        "agent",
        ("did you mean 'careful'",),
    ),
    Case(
        "scenario-fault-bad",
        "scenario",
        scenario("faults:\n  - {type: error, tool: search, on_call: 0}\n"),
        4,
        "faults[0].on_call",
        ("1 is the first call",),
    ),
    Case(
        "scenario-fault-alias-misspelt",
        "scenario",
        scenario("faults:\n  - type: halucination\n    tool: read_file\n"),
        4,
        "faults[0]",
        ("did you mean 'hallucination'",),
    ),
    Case("tags-not-a-list", "scenario", scenario("tags: 5\n"), 3, "tags", ("valid list",)),
    Case("description-not-text", "scenario", scenario("description: [1, 2]\n"), 3, "description", ("valid string",)),
    Case("scenario-duplicate-key", "scenario", scenario("task: again\n"), 3, "task", ("given twice",)),
    Case("scenario-is-a-list", "scenario", "- name: s\n  task: t\n", 1, None, ("must be a mapping with",)),
    Case("scenario-bomb", "scenario", SCENARIO + BOMB.replace("faults:", "tags:"), 7, "l4", ("100,000 values",)),
]

CASES = [*PLAN_CASES, *SCENARIO_CASES]


def _file(tmp_path: Path, case: Case) -> Path:
    path = tmp_path / f"{case.id}.yaml"
    if isinstance(case.body, bytes):
        path.write_bytes(case.body)
    else:
        path.write_text(case.body, encoding="utf-8")
    return path


def _names(path: Path, case: Case) -> list[str]:
    names = [str(path)]
    if case.line is not None:
        names.append(f"{path}:{case.line}:")
    if case.field is not None:
        names.append(f": {case.field}: ")
    return names


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_rejects_it_clearly(tmp_path: Path, case: Case) -> None:
    path = _file(tmp_path, case)
    result = run_cli(["validate", str(path)])
    assert result.code == 2, (result.out, result.err)
    assert "ok:" not in result.out
    assert_clear(result.err, names=_names(path, case), allowed=case.allowed)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_python_api_rejects_it_clearly(tmp_path: Path, case: Case) -> None:
    path = _file(tmp_path, case)
    loader: Any = Plan.from_yaml if case.kind == "plan" else load_scenario
    with pytest.raises(PlanError) as err:
        loader(path)
    assert_clear(str(err.value), names=_names(path, case), allowed=case.allowed)
    if case.line is not None:
        assert err.value.line == case.line


@pytest.mark.parametrize("loader", [Plan.from_yaml, load_scenario], ids=["plan", "scenario"])
def test_a_folder_and_a_missing_file(tmp_path: Path, loader: Any) -> None:
    for target, says in ((tmp_path, "is a folder; expected a YAML file"), (tmp_path / "nope.yaml", "file not found")):
        with pytest.raises(PlanError) as err:
            loader(target)
        assert_clear(str(err.value), names=[str(target)], allowed=[says])
        result = run_cli(["validate", str(target)])
        assert result.code == 2
        assert_clear(result.err, names=[str(target)], allowed=[says])


def _within(seconds: float, fn: Any) -> BaseException | None:
    """Run ``fn`` in a thread; fail the test if it is still running after ``seconds`` (a hang, not a slow pass)."""
    box: list[BaseException | None] = [None]

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # handed back to the test
            box[0] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s"
    return box[0]


@pytest.mark.parametrize(
    "body", [BOMB, DEEP_FLOW, DEEP_BLOCK, "x: &a [*a, *a]\n"], ids=["alias-bomb", "deep-flow", "deep-block", "cycle"]
)
def test_size_limits_fail_fast(tmp_path: Path, body: str) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(body, encoding="utf-8")
    for load in (lambda: Plan.from_yaml(path), lambda: load_scenario(path)):
        exc = _within(10, load)
        assert isinstance(exc, PlanError), repr(exc)
    results: list[Any] = []
    for argv in (["validate", str(path)], ["run", str(path)]):
        assert _within(10, lambda argv=argv: results.append(run_cli(argv))) is None
    for result in results:
        assert result.code == 2
        assert_clear(result.err, names=[str(path)])


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, "got NoneType None"),
        (123, "got int 123"),
        (["seed: 1"], "got list"),
        ({"seed": 1}, "got dict"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b"  ", "the bytes are empty"),
        ("", "the string is empty"),
    ],
)
def test_from_yaml_says_what_it_takes(value: Any, says: str) -> None:
    for loader in (Plan.from_yaml, load_scenario):
        with pytest.raises(PlanError) as err:
            loader(value)
        assert_clear(str(err.value), allowed=[says, "a YAML file path (str or os.PathLike) or YAML text"])
