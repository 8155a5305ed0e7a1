"""ε levels: light, medium and heavy name 0.1, 0.2 and 0.3, and each allows more kinds of rewrite than the one below
(words and noise; then the structure; then a self-correction), measured over many seeded rewrites."""

from __future__ import annotations

import pytest

from chaoskit.cli._run import _epsilons
from chaoskit.runner._perturb import LEVELS, epsilon_of, perturb, rewrites_at

TASKS = [
    "Refund order 4832 for the damaged item",
    "Hold and confirm flight FL-203 for Bob Smith on 2026-12-18.",
    "Find the docs about rate limits and idempotency and summarize them. Then send the summary to the team.",
    "What is the status of order 4832?",
]


def _kinds(eps: float | str) -> set[str]:
    return {e.split(":", 1)[0] for t in TASKS for s in range(150) for e in perturb(t, eps, s).edits}


def test_the_levels_name_their_epsilon() -> None:
    assert {k: v[0] for k, v in LEVELS.items()} == {"light": 0.1, "medium": 0.2, "heavy": 0.3}
    for name, (eps, _) in LEVELS.items():
        assert epsilon_of(name) == eps and epsilon_of(name.upper()) == eps
        assert perturb(TASKS[1], name, 4) == perturb(TASKS[1], eps, 4)


def test_each_level_adds_kinds_of_rewrite() -> None:
    light, medium, heavy = _kinds("light"), _kinds("medium"), _kinds("heavy")
    assert light == {"synonym", "distractor"}
    assert medium == {"synonym", "distractor", "paraphrase", "reorder"}
    assert heavy == {"synonym", "distractor", "paraphrase", "reorder", "self_correction"}
    assert rewrites_at(0.05) == LEVELS["light"][1] and rewrites_at(0.25) == LEVELS["medium"][1]
    assert rewrites_at(0.9) == LEVELS["heavy"][1] and rewrites_at(0.0) == ()


def test_more_of_the_task_is_rewritten_as_the_level_rises() -> None:
    def edits(eps: str) -> int:
        return sum(len(perturb(t, eps, s).edits) for t in TASKS for s in range(150))

    assert edits("light") < edits("medium") < edits("heavy")


@pytest.mark.parametrize("bad", ["extreme", "1.5", "-0.1", True])
def test_a_bad_level_is_refused_naming_the_levels(bad: object) -> None:
    with pytest.raises(ValueError, match="from 0 to 1"):
        epsilon_of(bad)  # type: ignore[arg-type]


def test_the_cli_takes_levels_and_numbers() -> None:
    assert _epsilons("light,0.25,heavy") == [0.1, 0.25, 0.3]
