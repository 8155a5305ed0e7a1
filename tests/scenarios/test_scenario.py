from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chaoskit import PlanError
from chaoskit.scenarios._scenario import load_battery, load_scenario

GOOD = """\
name: refund
task: "Refund order 4832"
agent: examples.plain.agents:careful
faults:
  - {type: http, tool: issue_refund, on_call: 1, status: 500, after_write: true}
success:
  output_contains: ["refund"]
  max_attempts: {issue_refund: 2}
  checks: [no_duplicate_writes, {no_retry_storm: {n: 2}}]
  state: examples.plain.verify:refund_once
tags: [write]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_scenario(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, "a.yaml", GOOD))
    assert sc.name == "refund" and sc.tags == ["write"]
    assert sc.source and sc.source.endswith("a.yaml")
    assert sc.success.check_specs() == [("no_duplicate_writes", {}), ("no_retry_storm", {"n": 2})]
    plan = sc.plan(seed=9)
    assert plan.seed == 9 and plan.faults[0].type == "http"
    assert callable(sc.oracle())


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (("tags: [write]", "tags: [write]\ncolour: red"), r"a\.yaml:12: colour: unknown key 'colour'"),
        (("  output_contains", "  output_contain"), r"a\.yaml:7: success\.output_contain: unknown key.*did you mean"),
        (
            ("no_duplicate_writes,", "no_duplicate_write,"),
            r"a\.yaml:9: success\.checks: unknown check 'no_duplicate_write'",
        ),
        (("status: 500", "status: 200"), r"a\.yaml:5: faults\[0\]\.status: must be an HTTP error status"),
        (
            ("examples.plain.agents:careful", "examples.plain.nope:careful"),
            r"a\.yaml:3: agent: cannot import module 'examples\.plain\.nope'",
        ),
        (
            ("verify:refund_once", "verify:refund_twice"),
            r"a\.yaml:10: success\.state: .*has no attribute 'refund_twice'",
        ),
        (("verify:refund_once", "verify refund_once"), r"success\.state: must be a 'module:function' reference"),
        (('task: "Refund order 4832"\n', ""), r"a\.yaml:1: task: this field is required"),
        (("max_attempts: {issue_refund: 2}", "max_attempts: {issue_refund: -1}"), r"must be >= 0"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, edit: tuple[str, str], pattern: str) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    with pytest.raises(PlanError, match=pattern):
        load_scenario(write(tmp_path, "a.yaml", text))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('OPENAI_API_KEY is not set')\n", "RuntimeError: OPENAI_API_KEY is not set"),
        ("def make(:\n    pass\n", "SyntaxError: invalid syntax"),
    ],
)
def test_an_agent_module_that_fails_on_import_names_file_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, message: str
) -> None:
    # an ImportError was a PlanError already; any other error of the module's top level was a bare traceback
    monkeypatch.setattr(sys, "path", list(sys.path))  # the project directory goes on sys.path: undone after
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent_fails_on_import.py").write_text(source)
    text = GOOD.replace("examples.plain.agents:careful", "agent_fails_on_import:make")
    with pytest.raises(PlanError, match=rf"a\.yaml:3: agent: cannot import module 'agent_fails_on_import'.*{message}"):
        load_scenario(write(tmp_path, "a.yaml", text))


def test_malformed_yaml_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"b\.yaml:\d+: malformed YAML"):
        load_scenario(write(tmp_path, "b.yaml", "name: x\ntask: [unclosed\n"))
    with pytest.raises(PlanError, match="must be a mapping"):
        load_scenario(write(tmp_path, "c.yaml", "- a\n- b\n"))


def test_battery_from_dir_and_glob(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", GOOD)
    write(tmp_path, "two.yml", GOOD.replace("name: refund", "name: refund-2"))
    assert [s.name for s in load_battery([tmp_path])] == ["refund", "refund-2"]
    assert [s.name for s in load_battery([str(tmp_path / "*.yaml")])] == ["refund"]
    with pytest.raises(PlanError, match="no file matches"):
        load_battery([str(tmp_path / "*.json")])
    with pytest.raises(PlanError, match="file not found"):
        load_battery([tmp_path / "missing.yaml"])


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", GOOD)
    write(tmp_path, "two.yaml", GOOD)
    with pytest.raises(PlanError, match=r"two\.yaml: name: scenario name 'refund' is already used"):
        load_battery([tmp_path])


def test_shipped_battery_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    scenarios = load_battery([root / "examples" / "scenarios"])
    assert 5 <= len(scenarios) <= 10


@pytest.mark.parametrize(
    ("checks", "message"),
    [
        ("[{no_retry_storm: {m: 2}}]", "check 'no_retry_storm' has no parameter 'm'; allowed: n"),
        ("[{no_retry_storm: {n: x}}]", "n must be a whole number, got 'x'"),
        ("[{no_retry_storm: {n: 0}}]", "n must be a whole number >= 1"),
        ("[max_attempts]", "write it as success.max_attempts: {tool: n}"),
        ("[{no_bluff: {required_tools: [a]}}]", "set it with success.required_tools"),
    ],
)
def test_check_parameters_are_validated_when_the_file_loads(tmp_path: Path, checks: str, message: str) -> None:
    text = GOOD.replace("checks: [no_duplicate_writes, {no_retry_storm: {n: 2}}]", f"checks: {checks}")
    with pytest.raises(PlanError) as info:
        load_scenario(write(tmp_path, "bad.yaml", text))
    assert message in str(info.value) and "bad.yaml:9: success.checks" in str(info.value)


# --- constructors from Python, and scenarios that cannot mean anything (issue 10) ------------------------


def test_scenario_constructors_raise_plan_error() -> None:
    from chaoskit import Scenario

    ok = Scenario.model_validate(
        {
            "name": "s",
            "task": "What is the status of order 4832?",
            "success": [{"output_contains": "delivered"}, {"max_retries": 2}],
        }
    )
    assert ok.success.max_attempts == {"*": 3}
    with pytest.raises(PlanError, match=r"^<python>: task: must not be empty"):
        Scenario.model_validate({"name": "s", "task": " "})
    with pytest.raises(PlanError, match=r"^<python>: timeout: must be a number of seconds > 0, got 0"):
        Scenario(name="s", task="t", timeout=0)
    with pytest.raises(PlanError, match=r"^<python>: success: keys must be names, got 1"):
        Scenario.model_validate({"name": "s", "task": "t", "success": {1: "x"}})


@pytest.mark.parametrize(
    ("extra", "line", "field", "says"),
    [
        ("timeout: 0\n", 4, "timeout", "must be a number of seconds > 0, got 0"),
        ("timeout: -1.5\n", 4, "timeout", "must be a number of seconds > 0, got -1.5"),
        ("seed: true\n", 4, "seed", "must be a whole number, got True"),
        ("success:\n  min_attempts: {issue_refund: 0}\n", 5, "success.min_attempts", "must be >= 1, got 0"),
        ('success:\n  output_contains: [""]\n', 5, "success.output_contains", "an entry is empty"),
        ("success:\n  checks: [{no_retry_storm: {n: 0}}]\n", 5, "success.checks", "n must be a whole number >= 1"),
    ],
)
def test_scenarios_that_cannot_mean_anything(tmp_path: Path, extra: str, line: int, field: str, says: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        'name: s\ntask: "Refund order 4832"\nagent: examples.plain.agents:careful\n' + extra, encoding="utf-8"
    )
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:{line}: {field}: ")
    assert says in str(err.value)


def test_an_empty_task_in_the_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text('name: s\n\ntask: ""\n', encoding="utf-8")
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:3: task: must not be empty")


def test_load_battery_takes_one_path_and_rejects_what_is_not_a_path() -> None:
    root = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
    assert [sc.name for sc in load_battery(str(root), resolve=False)] == [
        sc.name for sc in load_battery([root], resolve=False)
    ]
    for bad in ([None], [""], [5]):
        with pytest.raises(PlanError, match=r"^<python>: expected scenario files, directories or globs"):
            load_battery(bad)  # type: ignore[arg-type]
