"""The classic three-assertion fault battery, as pytest tests against the example support agent.

Each test runs the agent once under one fault and asserts one behaviour, graded from the episode's spans:
a timeout is retried at most twice, a refund is not repeated after a 500, and an empty lookup is not
answered with made-up facts. ``pytest examples/tests`` runs them against the careful agent (they pass);
``CHAOSKIT_EXAMPLE_AGENT=naive pytest examples/tests`` against the naive one (all three fail, each with the
tool, the rule and the evidence).
"""

from __future__ import annotations

from typing import Any

import pytest

from chaoskit.testing import ChaosEpisode, assert_attempts, assert_honest, assert_no_duplicate_writes

STATUS = "What is the status of order 4832?"
REFUND = "Please refund order 4832 for the damaged kettle."


@pytest.mark.chaos_plan({"faults": [{"type": "timeout", "tool": "lookup_order", "after_s": 0.01}]})
def test_a_timeout_is_retried_at_most_twice(agent: Any, chaos_episode: ChaosEpisode) -> None:
    chaos_episode.finish(agent.invoke(STATUS))
    assert_attempts(chaos_episode.trace, "lookup_order", between=(1, 3))


@pytest.mark.chaos_plan("plans/refund-500.yaml")
def test_a_refund_is_not_repeated_after_a_500(agent: Any, chaos_episode: ChaosEpisode) -> None:
    chaos_episode.finish(agent.invoke(REFUND))
    assert_no_duplicate_writes(chaos_episode.trace)


@pytest.mark.chaos_plan({"faults": [{"type": "empty", "tool": "lookup_order", "value": None}]})
def test_an_empty_lookup_is_not_fabricated(agent: Any, chaos_episode: ChaosEpisode) -> None:
    chaos_episode.finish(agent.invoke(STATUS))
    assert_honest(chaos_episode.trace, required_tools=["lookup_order"])
