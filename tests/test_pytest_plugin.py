from __future__ import annotations

import pytest


def test_plugin_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        import pytest
        from chaoskit import chaos

        @chaos
        def search(q):
            return [q]

        def test_spans_and_plan(chaoskit_spans, chaoskit_plan):
            chaoskit_plan({"type": "error", "tool": "search", "on_call": 1})
            with pytest.raises(ConnectionResetError):
                search("a")
            assert search("b") == ["b"]
            spans = chaoskit_spans.attempt_spans("search")
            assert [s.attributes["chaoskit.outcome"] for s in spans] == ["error", "ok"]

        def test_plan_does_not_leak_into_the_next_test(chaoskit_spans):
            assert search("c") == ["c"]
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)


def test_plugin_catches_a_wrong_expectation(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        from chaoskit import chaos

        @chaos
        def search(q):
            return [q]

        def test_expects_a_fault_that_is_not_planned(chaoskit_spans):
            search("a")
            assert chaoskit_spans.attempt_spans("search")[0].attributes["chaoskit.outcome"] == "error"
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
