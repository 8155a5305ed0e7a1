"""Tokens, cost and time: the price table (and its errors), an episode's cost by hand, the per-agent aggregates
(reliability per unit of cost, an 80x dearer agent at a glance) and their terminal and HTML rendering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit import ConfigError, chaos
from chaoskit.metrics import Prices, episode_cost, load_prices, trajectories_from_spans
from chaoskit.report._html import metrics_section
from chaoskit.report._svg import cost_scatter
from chaoskit.report._text import metrics_lines
from chaoskit.runner._metrics import metrics_summary
from chaoskit.testing import capture_spans

PRICES = """\
# an example: made-up figures
currency: EUR
per_tokens: 1000
models:
  small-model: {input: 0.5, output: 2.0}
  "big-*": {input: 40, output: 160}
"""


@chaos
def search(q: str) -> list[str]:
    return [q]


def _prices(tmp_path: Path, text: str = PRICES) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    return path


def test_prices_load_with_exact_names_first_then_patterns(tmp_path: Path) -> None:
    prices = load_prices(_prices(tmp_path))
    assert (prices.currency, prices.per_tokens) == ("EUR", 1000)
    small, big = prices.price_of("small-model"), prices.price_of("big-2025")
    assert small is not None and small.input == 0.5
    assert big is not None and big.output == 160
    assert prices.price_of("other") is None and prices.price_of(None) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("models: {m: {input: 1}}\n", "models.m: expected {input: <price>, output: <price>}"),
        ("models:\n  m: {input: -1, output: 2}\n", "line 2: models.m.input: expected a price >= 0"),
        ("models:\n  m: {input: 1, output: two}\n", "line 2: models.m.output"),
        ("models: {}\n", "models must be a non-empty mapping"),
        ("per_tokens: 0\nmodels: {m: {input: 1, output: 1}}\n", "per_tokens must be a whole number > 0"),
        ("model: {}\n", "unknown field(s) ['model']"),
        ("models: [\n", "not valid YAML"),
        # the one YAML loader's rules: a model given twice, and an alias bomb, are refused with the line
        (
            "models:\n  m: {input: 1, output: 1}\n  m: {input: 0, output: 0}\n",
            "line 3: not valid YAML: key 'm' is given twice",
        ),
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nmodels: {m: {input: 1, output: 1}}\n",
            "not valid YAML",
        ),
        ("- 1\n", "expected a mapping with 'models'"),
    ],
)
def test_bad_price_tables_name_the_file_line_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = _prices(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_prices(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_a_missing_price_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the price table"):
        load_prices(tmp_path / "nope.yaml")


def _episode(steps: list[dict[str, Any]]) -> Any:
    with capture_spans() as cap, chaoskit.episode("t") as ep:
        for s in steps:
            ep.step("x", **s)
        search("a")
    (traj,) = trajectories_from_spans(cap.spans)
    return traj


def test_episode_cost_by_hand(tmp_path: Path) -> None:
    prices = load_prices(_prices(tmp_path))
    traj = _episode(
        [
            {"model": "small-model", "input_tokens": 1000, "output_tokens": 100},
            {"model": "big-1", "input_tokens": 2000, "output_tokens": 50},
        ]
    )
    c = episode_cost(traj, prices)
    assert (c.input_tokens, c.output_tokens, c.steps_with_usage, c.missing_usage) == (3000, 150, 2, 0)
    # (1000 * 0.5 + 100 * 2.0) / 1000 + (2000 * 40 + 50 * 160) / 1000 = 0.7 + 88.0
    assert c.cost == pytest.approx(88.7)
    assert c.currency == "EUR" and c.unpriced == []
    assert c.wall_s is not None and c.wall_s >= c.tool_s > 0
    # without a table: tokens, no cost
    assert episode_cost(traj).cost is None and episode_cost(traj).input_tokens == 3000


def test_an_unpriced_model_makes_the_cost_unknown_not_smaller() -> None:
    prices = Prices.from_dict({"models": {"small-model": {"input": 1, "output": 1}}})
    traj = _episode([{"model": "small-model", "input_tokens": 10}, {"model": "mystery", "output_tokens": 5}])
    c = episode_cost(traj, prices)
    assert c.cost is None and c.unpriced == ["mystery"]


def _result(agent: str, scenario: str, passed: bool, cost: float | None, tokens: int, steps: int = 4) -> dict:
    return {
        "agent": f"pkg.agents:{agent}",
        "scenario": scenario,
        "passed": passed,
        "duration_s": 0.5,
        "metrics": {
            "steps": steps,
            "cdi": 0.5,
            "svr": None if passed else 1.0,
            "ric": 0.0,
            "daf": 0.0,
            "hallucination": 0.0,
            "modes": [] if passed else ["silent_verification"],
            "cost": {
                "input_tokens": tokens,
                "output_tokens": 0,
                "cost": cost,
                "currency": "USD",
                "tool_s": 0.1,
            },
        },
    }


def test_summary_puts_reliability_beside_cost_and_shows_an_80x_dearer_agent() -> None:
    episodes = []
    for s in ("a", "b"):
        for _ in range(2):
            episodes.append(_result("cheap", s, True, 0.01, 100))
            episodes.append(_result("dear", s, True, 0.80, 8000))
    episodes.append(_result("flaky", "a", True, 0.01, 100, steps=2))
    episodes.append(_result("flaky", "a", False, 0.01, 100, steps=9))
    summary = metrics_summary(episodes, k=2)
    assert summary is not None
    cheap, dear, flaky = (summary["agents"][a] for a in ("cheap", "dear", "flaky"))
    assert cheap["pass_k"] == dear["pass_k"] == 1.0
    assert dear["relative_cost"] == 80.0 and cheap["relative_cost"] == 1.0
    assert cheap["pass_k_per_cost"] == pytest.approx(100.0) and dear["pass_k_per_cost"] == pytest.approx(1.25)
    assert flaky["pass_k"] == 0.0 and flaky["modes"] == {"silent_verification": 1}
    # per cell, and against trajectory length: flaky's long episode (9 steps) is the failed one
    assert any(c["agent"] == "flaky" and c["scenario"] == "a" for c in summary["cells"])
    deg = summary["degradation"]["agents"]["flaky"]
    assert deg["short"]["pass_rate"] == 1.0 and deg["long"]["pass_rate"] == 0.0

    lines = metrics_lines(summary)
    text = "\n".join(lines)
    assert "x cheapest" in text and "80.0" in text
    assert any(ln.startswith("flaky ") and ln.endswith("silent_verification 1") for ln in lines), text
    assert "Degradation with trajectory length" in text
    assert any(ln.startswith("a ") and ln.endswith("silent_verification 1") for ln in lines), text  # by scenario

    html = metrics_section(summary)
    assert html.startswith('<section id="metrics">') and html.endswith("</section>")
    assert "<svg" in html and "pass^k against cost" in html
    assert html.count("<circle") == 3


def test_without_prices_tokens_stand_in_for_cost_and_nothing_renders_without_metrics() -> None:
    episodes = [_result("a", "s", True, None, 100), _result("b", "s", True, None, 400)]
    summary = metrics_summary(episodes)
    assert summary is not None
    assert summary["agents"]["b"]["relative_tokens"] == 4.0 and summary["agents"]["b"]["cost"] is None
    assert "pass^k/1k tok" in "\n".join(metrics_lines(summary))
    assert "tokens per episode" in cost_scatter(summary["agents"])
    assert metrics_summary([{"agent": "a", "scenario": "s", "passed": True, "metrics": None}]) is None
    assert metrics_lines(None) == [] and metrics_section(None) == ""


def test_html_escapes_agent_names() -> None:
    episodes = [_result("<script>", "s", True, 0.1, 10)]
    html = metrics_section(metrics_summary(episodes))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_example_price_table_loads_and_says_it_is_an_example() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "agentkit" / "prices.example.yaml"
    prices = load_prices(path)
    assert prices.price_of("scripted-agent") is not None and prices.price_of("scripted-replay") is not None
    assert "MADE UP" in path.read_text()
