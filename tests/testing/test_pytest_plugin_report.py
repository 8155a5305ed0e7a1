"""The pytest plugin's session output: --chaos-report (JSON and HTML), the terminal summary, pytest-xdist, and
loading without LangChain."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from chaoskit.report import load_results

INI = (
    "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:hypothesispytest -p no:langsmith_plugin\n"
)

CASES = """
import pytest
from chaoskit import chaos
from chaoskit.testing import assert_attempts

@chaos
def search(q):
    return [q]

def agent(task, tries):
    for _ in range(tries):
        try:
            return f"found {search(task)}"
        except TimeoutError:
            continue
    return "Done!"

PLAN = {"faults": [{"type": "timeout", "tool": "search", "after_s": 0.001}]}

@pytest.mark.chaos_plan(PLAN)
@pytest.mark.parametrize("tries", [2, 3, 5])
def test_bounded(tries, chaos_episode):
    chaos_episode.agent = f"tries{tries}"
    chaos_episode.finish(agent("kettle", tries))
    assert_attempts(chaos_episode.trace, "search", between=(1, 3))

@pytest.mark.chaos_plan(PLAN)
def test_skipped(chaos_episode):
    pytest.skip("not a case")

def test_not_a_case():
    pass
"""


@pytest.fixture
def tp(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(test_cases=CASES)
    return pytester


def test_json_report_in_the_runners_shape(tp: pytest.Pytester) -> None:
    result = tp.runpytest("--chaos-report", "out/cases.json", "--chaos-seed", "3")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    data = load_results(tp.path / "out" / "cases.json")  # the runner's reader accepts it
    eps = {e["scenario"]: e for e in data["episodes"]}
    assert sorted(eps) == [f"test_cases.py::test_bounded[{n}]" for n in (2, 3, 5)]
    bad = eps["test_cases.py::test_bounded[5]"]
    assert bad["passed"] is False and bad["agent"] == "tries5" and bad["faults"] == ["timeout"]
    assert bad["checks"][0]["name"] == "test" and bad["checks"][0]["message"].startswith(
        "search: 5 attempts, expected between 1 and 3 (inclusive)"
    )
    names = [c["name"] for c in bad["checks"]]
    assert "no_bluff" in names and "max_attempts(search, 3)" in names
    assert bad["attempts"]["total"] == 5 and len(bad["attempts"]["timeline"]) == 5
    assert bad["replay"] == "pytest 'test_cases.py::test_bounded[5]' --chaos-seed 3"
    assert bad["tags"] == ["faults"] and bad["trace_id"] and bad["episode_id"]
    assert eps["test_cases.py::test_bounded[3]"]["passed"] is True
    assert data["verdict"]["ok"] is False and "1 of 3 fault case(s) failed" in data["verdict"]["reasons"][0]
    assert data["config"]["seed"] == 3
    assert data["summary"]["overall"]["episodes"] == 3 and data["summary"]["overall"]["passes"] == 2
    assert set(data["summary"]["breakdowns"]["agent"]) == {"tries2", "tries3", "tries5"}


def test_html_report_with_the_runners_renderer(tp: pytest.Pytester) -> None:
    result = tp.runpytest("--chaos-report", "report.html")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    page = (tp.path / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "chaoskit report" in page
    assert "test_cases.py::test_bounded[5]" in page and "tries5" in page
    result.stdout.fnmatch_lines([f"chaoskit report: {tp.path / 'report.html'}"])


def test_terminal_summary_gives_the_cases_failed_checks_and_mean_score(tp: pytest.Pytester) -> None:
    result = tp.runpytest("--chaos-seed", "4")
    out = result.stdout.str()
    section = out.split("chaoskit fault cases", 1)[1]
    lines = [line for line in section.splitlines() if line.strip()][1:]
    assert lines[0].startswith("3 fault cases: 2 passed, 1 failed; mean score ") and lines[0].endswith("; seed 4")
    assert lines[1].startswith("failed checks: ") and "max_attempts(search, 3) (1)" in lines[1]
    assert "no_bluff (3)" in lines[1]  # every case answers "Done!" after its timeouts; only one test asserted attempts
    assert lines[2].startswith("FAILED test_cases.py::test_bounded[5] (score ")
    assert lines[2].endswith("search: 5 attempts, expected between 1 and 3 (inclusive)")
    assert lines[3] == "  rerun: pytest 'test_cases.py::test_bounded[5]' --chaos-seed 4"


def test_no_section_without_fault_cases(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "chaoskit fault cases" not in result.stdout.str()


def test_a_report_path_that_cannot_be_written_is_an_error(tp: pytest.Pytester) -> None:
    (tp.path / "blocked").write_text("a file, not a folder", encoding="utf-8")
    result = tp.runpytest("--chaos-report", "blocked/cases.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["chaoskit report not written: --chaos-report *blocked/cases.json: cannot write*"])


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="pytest-xdist is not installed")
def test_xdist_workers_share_the_seed_and_the_report_merges_them(tp: pytest.Pytester) -> None:
    single = tp.runpytest("--chaos-report", "one.json", "--chaos-seed", "9")
    single.assert_outcomes(passed=3, failed=1, skipped=1)
    result = tp.runpytest("-n", "2", "--chaos-report", "many.json", "--chaos-seed", "9")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*chaoskit fault cases*", "3 fault cases: 2 passed, 1 failed; mean score *; seed 9"])
    one, many = (json.loads((tp.path / f"{n}.json").read_text(encoding="utf-8")) for n in ("one", "many"))
    assert [(e["scenario"], e["seed"], e["passed"]) for e in many["episodes"]] == [
        (e["scenario"], e["seed"], e["passed"]) for e in one["episodes"]
    ]
    assert many["summary"]["overall"]["episodes"] == 3


def test_the_plugin_loads_without_langchain(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        import sys

        def test_loaded(chaos_episode, request):
            assert request.config.pluginmanager.has_plugin("chaoskit")
            assert "chaoskit.testing.pytest_plugin" in sys.modules
            frameworks = [m for m in sys.modules if m.split(".")[0] in
                          ("langchain", "langchain_core", "langgraph", "chaoskit_langchain", "chaoskit_langgraph")]
            assert frameworks == []
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


def test_the_plugin_is_registered_by_the_entry_point() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="pytest11") if e.name == "chaoskit"]
    assert ep.value == "chaoskit.testing.pytest_plugin"
    assert Path(ep.load().__file__).name == "pytest_plugin.py"
