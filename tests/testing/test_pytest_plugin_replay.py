"""The pytest plugin's chaos_replay fixture and mark, run in sub-sessions with ``pytester``: record with
--chaos-record, replay with no real tool, faults on top, misses and a missing cassette named."""

from __future__ import annotations

import pytest

INI = (
    "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:hypothesispytest -p no:langsmith_plugin\n"
)

TOOLS = """
from chaoskit import chaos

CALLS = []

@chaos
def search(q):
    CALLS.append(q)
    return {"hits": [q, q + "!"]}

def agent(task):
    for _ in range(3):
        try:
            return f"found {search(task)['hits']}"
        except Exception:
            continue
    return "I could not search"
"""

CASES = """
import pytest
import tools

@pytest.mark.chaos_replay("cassettes/search.jsonl")
def test_answers(chaos_replay):
    assert tools.agent("kettle") == "found ['kettle', 'kettle!']"
    assert tools.CALLS == (["kettle"] if RECORDING else [])

@pytest.mark.chaos_replay("cassettes/search.jsonl")
@pytest.mark.chaos_plan({"faults": [{"type": "error", "tool": "search", "on_call": 1}]})
def test_faults_on_top(chaos_replay):
    assert tools.agent("kettle") == "found ['kettle', 'kettle!']"
    assert [a.outcome for a in chaos_replay.attempts] == ["error", "ok"]
"""


@pytest.fixture
def tp(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(tools=TOOLS)
    pytester.syspathinsert()
    return pytester


def test_record_then_replay_with_no_real_tool(tp: pytest.Pytester) -> None:
    tp.makepyfile(test_search="RECORDING = True\n" + CASES.replace("def test_faults_on_top", "def _not_now"))
    tp.runpytest("--chaos-record", "-k", "test_answers").assert_outcomes(passed=1)
    cassette = tp.path / "cassettes" / "search.jsonl"
    assert cassette.is_file() and '"gen_ai.tool.call.result"' in cassette.read_text()
    tp.makepyfile(test_search="RECORDING = False\n" + CASES)
    tp.runpytest().assert_outcomes(passed=2)


def test_a_miss_and_a_missing_cassette_fail_with_their_reason(tp: pytest.Pytester) -> None:
    tp.makepyfile(test_search="RECORDING = True\n" + CASES.replace("def test_faults_on_top", "def _not_now"))
    tp.runpytest("--chaos-record").assert_outcomes(passed=1)
    tp.makepyfile(
        test_miss="""
        import pytest
        import tools

        @pytest.mark.chaos_replay("cassettes/search.jsonl")
        def test_other_query(chaos_replay):
            tools.search("lamp")

        @pytest.mark.chaos_replay("cassettes/search.jsonl", on_miss="passthrough")
        def test_other_query_passes_through(chaos_replay):
            assert tools.search("lamp") == {"hits": ["lamp", "lamp!"]}

        @pytest.mark.chaos_replay("cassettes/nowhere.jsonl")
        def test_no_cassette(chaos_replay):
            pass
        """
    )
    result = tp.runpytest("test_miss.py")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*nowhere.jsonl: no recording there*",
            '*search.jsonl: no recorded call of search with these arguments: {"q":"lamp"}; nearest recorded*',
        ]
    )
