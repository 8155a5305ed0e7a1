"""The pytest plugin, run in sub-sessions with ``pytester``: fixtures, the chaos_plan mark, the faults marker,
seeds, the fault matrix and the rerun line."""

from __future__ import annotations

import re

import pytest

# other plugins' session work (hypothesis's, langsmith's) is left out: it only slows the sub-sessions down
INI = (
    "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:hypothesispytest -p no:langsmith_plugin\n"
)

TOOLS = """
from chaoskit import chaos

CALLS = []

@chaos
def search(q):
    return [q]

@chaos(irreversible=True)
def issue_refund(order_id):
    CALLS.append(order_id)
    return {"refund": order_id}

def agent(task):
    for _ in range(5):
        try:
            return f"found {search(task)}"
        except Exception:
            continue
    return "I could not search"
"""


@pytest.fixture
def tp(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(tools=TOOLS)
    pytester.syspathinsert()
    return pytester


def test_plugin_fixtures(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from tools import search

        def test_spans_and_plan(chaoskit_spans, chaoskit_plan):
            chaoskit_plan({"type": "error", "tool": "search", "on_call": 1})
            with pytest.raises(ConnectionResetError):
                search("a")
            assert search("b") == ["b"]
            spans = chaoskit_spans.attempt_spans("search")
            assert [s.attributes["chaoskit.outcome"] for s in spans] == ["error", "ok"]

        def test_plan_does_not_leak_into_the_next_test(chaoskit_spans):
            assert search("c") == ["c"]
            assert len(chaoskit_spans.attempt_spans("search")) == 1
        """
    )
    tp.runpytest().assert_outcomes(passed=2)


def test_plugin_catches_a_wrong_expectation(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        from tools import search

        def test_expects_a_fault_that_is_not_planned(chaoskit_spans):
            search("a")
            assert chaoskit_spans.attempt_spans("search")[0].attributes["chaoskit.outcome"] == "error"
        """
    )
    tp.runpytest().assert_outcomes(failed=1)


def test_chaos_episode_with_a_dict_plan_passing_and_failing_cases(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit.testing import assert_attempts
        from tools import agent

        PLAN = {"faults": [{"type": "timeout", "tool": "search", "calls": "1-2", "after_s": 0.001}]}

        @pytest.mark.chaos_plan(PLAN)
        def test_recovers(chaos_episode):
            chaos_episode.finish(agent("kettle"))
            assert [a.outcome for a in chaos_episode.attempts("search")] == ["error", "error", "ok"]
            assert_attempts(chaos_episode.trace, "search", between=(1, 3))

        @pytest.mark.chaos_plan(PLAN)
        def test_expects_fewer_attempts(chaos_episode):
            chaos_episode.finish(agent("kettle"))
            assert_attempts(chaos_episode.trace, "search", between=(1, 2))
        """
    )
    result = tp.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: search: 3 attempts, expected between 1 and 2 (inclusive)",
            "*max_attempts(search, 2) failed: search was called 3 times; at most 2 allowed*",
            "*evidence:",
            "*search attempt 3: ok, no fault, args *",
        ]
    )


def test_chaos_trace_is_the_finished_trace_of_the_episode(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit import Trace
        from tools import agent

        @pytest.fixture
        def ran(chaos_episode):
            chaos_episode.finish(agent("lamp"))

        @pytest.mark.chaos_plan({"faults": [{"type": "error", "tool": "search", "on_call": 1}]})
        def test_trace(ran, chaos_trace):
            assert isinstance(chaos_trace, Trace)
            (ep,) = chaos_trace.episodes
            assert ep.outcome == "completed" and ep.output == "found ['lamp']"
            assert [(a.tool, a.attempt, a.outcome) for a in chaos_trace.attempts] == [
                ("search", 1, "error"), ("search", 2, "ok")]

        def test_trace_taken_too_early(chaos_trace):
            agent("lamp")
        """
    )
    result = tp.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*chaos_trace was taken before the agent made any tool call*"])


def test_without_a_mark_the_episode_runs_with_the_active_plan(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit.testing import plan_from
        from tools import search

        @pytest.fixture
        def outer_plan():
            with plan_from({"type": "error", "tool": "search", "on_call": 1}).activate() as plan:
                yield plan

        def test_active_plan(outer_plan, chaos_episode):
            assert chaos_episode.plan is outer_plan
            with pytest.raises(ConnectionResetError):
                search("a")

        def test_no_plan(chaos_episode):
            assert chaos_episode.plan is None
            assert search("a") == ["a"]
            assert [a.fault_type for a in chaos_episode.attempts()] == [None]
        """
    )
    tp.runpytest().assert_outcomes(passed=2)


def test_an_irreversible_tool_without_a_plan_of_its_own_takes_the_marks_plan(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit import ToolHTTPError
        from chaoskit.testing import assert_no_duplicate_writes
        import tools

        @pytest.mark.chaos_plan(
            {"faults": [{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}]})
        def test_refund_twice(chaos_episode):
            with pytest.raises(ToolHTTPError):
                tools.issue_refund("4832")
            tools.issue_refund("4832")
            chaos_episode.finish("refunded")
            assert tools.CALLS == ["4832", "4832"]
            assert_no_duplicate_writes(chaos_episode.trace)
        """
    )
    result = tp.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: issue_refund: duplicate irreversible write on attempts 1 and 2 (no idempotency key)",
            "*issue_refund attempt 1: error (ToolHTTPError), an HTTP 500 (after_write), args *, no idempotency key",
        ]
    )


def test_a_plan_from_yaml_relative_to_the_test_file(tp: pytest.Pytester) -> None:
    sub = tp.mkdir("suite")
    (sub / "plans").mkdir()
    (sub / "plans" / "flaky.yaml").write_text(
        "seed: 11\nfaults:\n  - {type: error, tool: search, on_call: 1}\n", encoding="utf-8"
    )
    (sub / "test_yaml.py").write_text(
        """
import pytest
from chaoskit import Plan
from tools import agent

@pytest.mark.chaos_plan("plans/flaky.yaml")
def test_yaml(chaos_episode):
    assert chaos_episode.plan.seed == 11
    assert chaos_episode.plan.source.endswith("flaky.yaml")
    chaos_episode.finish(agent("x"))
    assert [a.outcome for a in chaos_episode.attempts("search")] == ["error", "ok"]

@pytest.mark.chaos_plan(Plan.from_dict({"faults": [{"type": "timeout", "tool": "search", "after_s": 0.001}]}))
def test_plan_object(chaos_episode):
    chaos_episode.finish(agent("x"))
    assert len(chaos_episode.attempts("search")) == 5

@pytest.mark.chaos_plan(faults=[{"type": "empty", "tool": "search"}])
def test_keywords(chaos_episode):
    chaos_episode.finish(agent("x"))
    assert chaos_episode.attempts()[0].fault_type == "empty"
""",
        encoding="utf-8",
    )
    # run from another folder: the path is read from the test file's folder, not the working directory
    result = tp.runpytest(str(sub))
    result.assert_outcomes(passed=3)


@pytest.mark.parametrize(
    ("mark", "message"),
    [
        ('"missing.yaml"', "*chaos_plan: plan file 'missing.yaml' not found (looked for */missing.yaml*"),
        (
            "{'faults': [{'type': 'bogus', 'tool': 'search'}]}",
            "*@pytest.mark.chaos_plan: faults?0?: unknown fault type 'bogus'; allowed: error, timeout*",
        ),
        ("42", "*chaos_plan: expected a dict, a chaoskit.Plan or the path of a YAML plan, got int"),
        ("", "*chaos_plan: no plan given*"),
    ],
)
def test_a_bad_mark_is_an_error_naming_the_test(tp: pytest.Pytester, mark: str, message: str) -> None:
    tp.makepyfile(
        f"""
        import pytest

        @pytest.mark.chaos_plan({mark})
        def test_bad(chaos_episode):
            pass
        """
    )
    result = tp.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
    assert "test_bad" in result.stdout.str()


def test_a_mark_without_the_episode_fixture_is_an_error(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest

        @pytest.mark.chaos_plan({"faults": []})
        def test_forgot_the_fixture():
            pass
        """
    )
    result = tp.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*chaos_plan applies to the chaos_episode fixture, which this test does not use*"])


def test_the_faults_marker_is_registered_and_selects_the_fault_cases(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit.testing import fault_matrix

        @pytest.mark.faults
        def test_marked_by_hand():
            pass

        def test_uses_the_episode(chaos_episode):
            pass

        @pytest.mark.parametrize("case", fault_matrix(tools=["search"], faults=["timeout"]))
        def test_matrix(case, chaoskit_plan):
            pass

        def test_ordinary():
            pass
        """
    )
    markers = tp.runpytest("--markers", "--strict-markers")
    markers.stdout.fnmatch_lines(
        ["@pytest.mark.faults: a fault case*", "@pytest.mark.chaos_plan(plan=None, **fields)*"]
    )
    faults = tp.runpytest("-m", "faults", "--strict-markers", "-v")
    faults.assert_outcomes(passed=3, deselected=1)
    assert "test_ordinary" not in faults.stdout.str()
    rest = tp.runpytest("-m", "not faults", "-v")
    rest.assert_outcomes(passed=1, deselected=3)


def test_fault_matrix_one_case_per_pair_with_readable_ids(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest
        from chaoskit.testing import fault_matrix

        FAULTS = ["timeout", "error", {"type": "http", "status": 500}, {"type": "rate_limit", "retry_after": 0.01},
                  "empty", {"type": "latency", "delay_s": 0.001, "id": "slow"}]

        @pytest.mark.parametrize("case", fault_matrix(tools=["search", "lookup", "refund", "mail"], faults=FAULTS))
        def test_cell(case, chaos_episode):
            assert chaos_episode.plan.faults[-1].type == case.type
            assert chaos_episode.plan.faults[-1].tool == case.tool
        """
    )
    result = tp.runpytest("--collect-only", "-q")
    ids = re.findall(r"test_cell\[(.+?)\]", result.stdout.str())
    assert len(ids) == 24
    assert ids[:6] == [
        "search-timeout",
        "search-error",
        "search-http-500",
        "search-rate_limit-retry_after=0.01",
        "search-empty",
        "search-slow",
    ]
    assert ids[-1] == "mail-slow"
    tp.runpytest().assert_outcomes(passed=24)


def test_seed_is_printed_and_reproduces_the_plans(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import pytest

        @pytest.mark.chaos_plan({"faults": [{"type": "error", "tool": "search", "probability": 0.5}]})
        @pytest.mark.parametrize("n", [1, 2])
        def test_seed(n, chaos_episode, record_property):
            print(f"SEED {n} {chaos_episode.plan.seed}")

        @pytest.mark.chaos_plan({"seed": 99, "faults": []})
        def test_own_seed(chaos_episode):
            print(f"OWN {chaos_episode.plan.seed}")

        def test_factory(chaoskit_plan):
            print(f"FACTORY {chaoskit_plan().seed}")
        """
    )

    def seeds(*args: str) -> tuple[str, list[str]]:
        result = tp.runpytest("-s", *args)
        result.assert_outcomes(passed=4)
        out = result.stdout.str()
        (header,) = re.findall(r"chaoskit .*: seed (\d+) \(reproduce with --chaos-seed \1\)", out)
        return header, re.findall(r"(?:SEED \d|OWN|FACTORY) \d+", out)

    header, a = seeds("--chaos-seed", "7")
    assert header == "7"
    assert seeds("--chaos-seed", "7")[1] == a  # the same seed gives the same plans
    assert a[2] == "OWN 99"  # a plan's own seed is kept
    assert len({a[0].split()[-1], a[1].split()[-1]}) == 2  # each test gets its own seed
    other = seeds("--chaos-seed", "8")[1]
    assert other[2] == "OWN 99" and other[0] != a[0]
    random_header, random_seeds = seeds()
    assert seeds("--chaos-seed", random_header)[1] == random_seeds  # the printed seed reproduces the run


def test_a_failing_case_prints_the_line_that_reruns_it(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        test_rerun="""
        import pytest

        @pytest.mark.parametrize("who", ["careful agent", "naive"])
        def test_case(who, chaos_episode):
            assert who == "careful agent"
        """
    )
    result = tp.runpytest("--chaos-seed", "5")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*- chaoskit -*", "rerun this case: pytest 'test_rerun.py::test_case[naive]' --chaos-seed 5"]
    )
    assert "test_case[careful agent]' --chaos-seed" not in result.stdout.str().split("chaoskit fault cases")[0]
    again = tp.runpytest("test_rerun.py::test_case[naive]", "--chaos-seed", "5")
    again.assert_outcomes(failed=1)


def test_an_async_test_runs_inside_the_episode(tp: pytest.Pytester) -> None:
    tp.makepyfile(
        """
        import asyncio
        import pytest
        from tools import search

        @pytest.mark.asyncio
        @pytest.mark.chaos_plan({"faults": [{"type": "error", "tool": "search", "on_call": 2}]})
        async def test_async(chaos_episode):
            search("a")
            with pytest.raises(ConnectionResetError):
                await asyncio.to_thread(search, "b")
            chaos_episode.finish("done")
            assert [a.outcome for a in chaos_episode.attempts("search")] == ["ok", "error"]
        """
    )
    tp.runpytest("-p", "asyncio").assert_outcomes(passed=1)
