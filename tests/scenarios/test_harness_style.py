"""Scenario files written in the common agent-test-harness style load as they are and grade through the runner."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chaoskit import PlanError, chaos, load_scenario, run_battery

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "scenarios" / "status-flaky-lookup-harness.yaml"

# the issue's example, verbatim
ISSUE_SCENARIO = """\
name: reports-port-despite-flaky-search
task: "Find the service's config file and report its port"
faults:
  - type: tool_error
    tool: search
    on_call: 1
    error: "ECONNRESET"
  - type: hallucination
    tool: read_file
    every: 2
    garbage: "stale-cache"
success:
  - output_contains: "8080"
  - max_retries: 4
"""


class ConfigRepo:
    """A small service checkout the agent searches and reads."""

    FILES = {
        "deploy/service.yaml": "service: billing\nport: 8080\nreplicas: 3\n",
        "README.md": "# billing\nRun `make serve`.\n",
    }

    @chaos(description="Search the repository for files whose name or text matches the query.")
    def search(self, query: str) -> list[str]:
        words = query.lower().split()
        return [p for p, text in self.FILES.items() if any(w in p.lower() or w in text for w in words)]

    @chaos(description="Read a file of the repository.")
    def read_file(self, path: str) -> str:
        return self.FILES[path]


class PortAgent:
    """Searches for the config, reads it, and answers with the port. ``rereads`` is how many extra reads it
    makes "to be sure" (a polling habit the max_retries bound must catch)."""

    def __init__(self, rereads: int = 0) -> None:
        self.env = ConfigRepo()
        self.rereads = rereads

    def _search(self) -> list[str]:
        for _ in range(3):
            try:
                return self.env.search("service port")
            except ConnectionError:
                continue
        raise RuntimeError("search kept failing")

    def invoke(self, task: str) -> str:
        path = next(p for p in self._search() if p.endswith(".yaml"))
        port = None
        for _ in range(3 + self.rereads):
            text = self.env.read_file(path)
            m = re.search(r"^port:\s*(\d+)", text, re.M)
            if m:
                port = m.group(1)
                if self.rereads == 0:
                    break
        if port is None:
            return f"I could not read a port from {path}."
        return f"The service config is {path}; it listens on port {port}."


def _write(tmp_path: Path, text: str, name: str = "harness.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_issue_example_loads_as_written(tmp_path: Path) -> None:
    sc = load_scenario(_write(tmp_path, ISSUE_SCENARIO))
    err, garbage = sc.faults
    assert (err.type, err.tool, err.on_call, err.error) == ("error", "search", (1,), "ECONNRESET")
    assert (garbage.type, garbage.tool, garbage.every, garbage.garbage) == ("garbage", "read_file", 2, "stale-cache")
    assert sc.success.output_contains == ["8080"]
    # max_retries: 4 bounds every tool to 1 call + 4 retries
    assert sc.success.max_retries == 4
    assert sc.success.max_attempts == {"*": 5}


def test_the_issue_example_passes_a_careful_agent_through_the_runner(tmp_path: Path) -> None:
    result = run_battery([_write(tmp_path, ISSUE_SCENARIO)], agent=PortAgent)
    (ep,) = result.episodes
    assert ep.output == "The service config is deploy/service.yaml; it listens on port 8080."
    assert ep.attempts["by_tool"] == {"search": 2, "read_file": 1}
    checks = {c["name"]: c for c in ep.checks}
    assert checks["output_contains"]["passed"]
    assert checks["max_attempts(search, 5)"]["passed"]
    assert checks["max_attempts(read_file, 5)"]["passed"]
    assert ep.passed


def test_max_retries_fails_an_agent_that_calls_a_tool_more_often(tmp_path: Path) -> None:
    # 2 extra reads "to be sure" plus the 3 it always makes: 5 reads, one more than max_retries: 3 allows
    text = ISSUE_SCENARIO.replace("max_retries: 4", "max_retries: 3")
    result = run_battery([_write(tmp_path, text)], agent=lambda: PortAgent(rereads=2))
    (ep,) = result.episodes
    assert ep.attempts["by_tool"]["read_file"] == 5
    bound = next(c for c in ep.checks if c["name"] == "max_attempts(read_file, 4)")
    assert not bound["passed"]
    assert "read_file was called 5 times; at most 4 allowed" in bound["message"]
    assert not ep.passed


def test_output_contains_from_the_list_fails_a_wrong_answer(tmp_path: Path) -> None:
    text = ISSUE_SCENARIO.replace('output_contains: "8080"', 'output_contains: "9090"')
    result = run_battery([_write(tmp_path, text)], agent=PortAgent)
    (ep,) = result.episodes
    check = next(c for c in ep.checks if c["name"] == "output_contains")
    assert not check["passed"]
    assert check["message"] == "output lacks '9090'"
    assert not ep.passed


def test_the_example_file_runs_with_the_plain_agent() -> None:
    sc = load_scenario(EXAMPLE)
    assert [f.type for f in sc.faults] == ["error", "garbage"]
    assert sc.success.max_attempts == {"*": 5}
    result = run_battery([EXAMPLE])
    (ep,) = result.episodes
    # call 1: connection reset; call 2: "stale-cache" (every 2nd call); call 3: the real record
    assert ep.attempts["by_tool"] == {"lookup_order": 3}
    assert ep.attempts["faults"] == 2
    assert ep.output == "Order 4832 is delivered."
    assert ep.passed and result.ok


@pytest.mark.parametrize(
    ("criterion", "line", "field", "hint"),
    [
        ("- retries: 4", 14, "success[1].retries", "did you mean 'max_retries'"),
        ('- contains: "8080"', 14, "success[1].contains", "did you mean 'output_contains'"),
        ("- max_tool_calls: {search: 3}", 14, "success[1].max_tool_calls", "did you mean 'max_attempts'"),
        ("- no_bluf", 14, "success.checks", "did you mean 'no_bluff'"),
        ("- max_retries: -1", 14, "success.max_retries", "whole number of retries >= 0"),
        ("- {output_contains: a, max_retries: 2}", 14, "success[1]", "one criterion with one key"),
    ],
)
def test_a_criterion_that_cannot_be_mapped_is_rejected_with_its_line(
    tmp_path: Path, criterion: str, line: int, field: str, hint: str
) -> None:
    text = ISSUE_SCENARIO.replace("- max_retries: 4", criterion)
    path = _write(tmp_path, text)
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: {field}: "), msg
    assert hint in msg


def test_a_misspelt_top_level_key_gets_the_chaoskit_spelling(tmp_path: Path) -> None:
    path = _write(tmp_path, ISSUE_SCENARIO.replace("task:", "prompt:"))
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:2: prompt: unknown key 'prompt' (did you mean 'task'?)")


def test_a_misspelt_fault_key_gets_the_chaoskit_spelling(tmp_path: Path) -> None:
    path = _write(tmp_path, ISSUE_SCENARIO.replace('error: "ECONNRESET"', 'message: "ECONNRESET"'))
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:7: faults[0].message: unknown key 'message' (did you mean 'error'?)")


def test_mapping_form_accepts_max_retries_too(tmp_path: Path) -> None:
    text = 'name: s\ntask: t\nsuccess:\n  output_contains: ["8080"]\n  max_retries: 0\n'
    sc = load_scenario(_write(tmp_path, text))
    assert sc.success.max_attempts == {"*": 1}


def test_max_retries_and_a_different_star_bound_disagree(tmp_path: Path) -> None:
    text = 'name: s\ntask: t\nsuccess:\n  max_attempts: {"*": 3}\n  max_retries: 4\n'
    path = _write(tmp_path, text)
    with pytest.raises(PlanError) as err:
        load_scenario(path)
    assert 'max_retries: 4 and max_attempts {"*": 3} disagree' in str(err.value)


def test_list_form_checks_with_parameters(tmp_path: Path) -> None:
    text = (
        "name: s\ntask: t\nsuccess:\n  - no_bluff\n  - no_retry_storm: {n: 2}\n"
        "  - max_attempts: {search: 3}\n  - required_tools: search\n"
    )
    sc = load_scenario(_write(tmp_path, text))
    specs: Any = sc.success.check_specs()
    assert specs == [("no_bluff", {}), ("no_retry_storm", {"n": 2})]
    assert sc.success.max_attempts == {"search": 3}
    assert sc.success.required_tools == ["search"]
