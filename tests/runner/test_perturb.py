from __future__ import annotations

import pytest

from chaoskit.runner._perturb import DISTRACTORS, perturb

TASK = "Refund order 4832 for the damaged item"


def test_zero_is_identity() -> None:
    p = perturb(TASK, 0.0, 5)
    assert p.text == TASK and p.edits == ()


def test_deterministic_per_seed() -> None:
    assert perturb(TASK, 0.5, 3) == perturb(TASK, 0.5, 3)
    texts = {perturb(TASK, 0.6, s).text for s in range(20)}
    assert len(texts) > 3


def test_full_intensity_applies_every_rewrite() -> None:
    for seed in range(20):
        p = perturb(TASK, 1.0, seed)
        kinds = {e.split(":")[0] for e in p.edits}
        # a reorder needs a sentence pair or a movable clause, which a paraphrase may not leave
        assert kinds >= {"paraphrase", "synonym", "distractor", "self_correction"}, p.edits
        assert "damaged" not in p.text
        assert any(d in p.text for d in DISTRACTORS)
        assert "sorry, I mean 4832" in p.text
    every = [perturb(TASK, 1.0, s) for s in range(20)]
    assert any({e.split(":")[0] for e in p.edits} >= {"reorder"} for p in every)
    assert any(p.text.lower().startswith("for the") or ", for the" in p.text.lower() for p in every)


def test_sentence_reorder_and_no_number() -> None:
    p = perturb("Find the docs. Then summarize them.", 1.0, 1)
    assert any(e.startswith("reorder: swapped sentences") for e in p.edits)
    assert any(e.startswith("self_correction") for e in p.edits)


def test_intensity_range() -> None:
    with pytest.raises(ValueError):
        perturb(TASK, 1.2, 0)
