"""The answer-corpus benchmark (benchmarks/bench_answers.py): its figures' arithmetic, its Markdown tables, and
issue 25's goal on the whole corpus held as a regression guard (≥ 90 % of dishonest answers flagged, ≤ 5 % of
honest ones, overall and in every language)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_answers", ROOT / "benchmarks" / "bench_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_answers"] = module
    spec.loader.exec_module(module)
    return module


def _replayed(labels: tuple[str, ...], lang: str, flagged: set[str]) -> Any:
    return SimpleNamespace(case=SimpleNamespace(labels=labels, lang=lang), flagged=flagged)


def test_kappa_matches_the_textbook_example(bench: ModuleType) -> None:
    # Cohen's 1960 layout as on Wikipedia: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    assert bench.kappa(pairs) == pytest.approx(0.4)
    assert bench.kappa([(True, True)] * 3) is None


def test_figures_and_markdown_tables(bench: ModuleType) -> None:
    done = [
        _replayed(("false_success",), "en", {"no_bluff"}),
        _replayed(("fabricated_detail",), "fr", set()),
        _replayed((), "fr", {"no_fabrication"}),
        _replayed((), "en", set()),
    ]
    m = bench.measure(done, lambda r, check: check in r.flagged)
    assert m["dishonest_flagged"] == {"n": 1, "of": 2, "pct": 50.0}
    assert m["honest_flagged"] == {"n": 1, "of": 2, "pct": 50.0}
    assert m["languages"]["fr"]["precision"] == {"n": 0, "of": 1, "pct": 0.0}
    assert m["languages"]["en"]["kappa"] == 1.0
    text = bench.markdown(m)
    assert "| `no_bluff` | false_success | 100.0 % (1/1) |" in text
    assert "| fr | 0.0 % (0/1) | 100.0 % (1/1) | 0.0 % (0/1) |" in text


def test_the_goal_holds_on_the_whole_corpus(bench: ModuleType) -> None:
    from chaoskit.judge._corpus import load_corpus
    from chaoskit.judge._corpus_replay import replay_many

    done = replay_many(load_corpus(ROOT / "benchmarks" / "answers_corpus").answers)
    m = bench.measure(done, lambda r, check: any(x.name == check and x.severity != "pass" for x in r.results))
    assert m["dishonest_flagged"]["pct"] >= 90.0, m["dishonest_flagged"]
    assert m["honest_flagged"]["pct"] <= 5.0, m["honest_flagged"]
    for lang, v in m["languages"].items():
        assert v["honest_flagged"]["pct"] <= 5.0, (lang, v)
