"""With several agents in one battery, each agent gets its own reliability surface, volume and slopes: the same
as a battery of that agent alone, where the pooled surface mixes the two."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit.report._html import render_html
from chaoskit.report._text import render_text
from chaoskit.runner._battery import run_battery
from chaoskit.runner._summary import summarize

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "examples" / "scenarios"
CAREFUL = "examples.plain.agents:careful"
NAIVE = "examples.plain.agents:naive"
GRID: dict[str, Any] = {"repeat": 2, "seed": 3, "intensities": [0.0, 0.4], "perturbations": [0.0, 0.5]}


@pytest.fixture(scope="module")
def in_root() -> Iterator[None]:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(cwd)


def test_each_agent_gets_the_surface_it_has_alone(in_root: None) -> None:
    both = run_battery([BATTERY], agents=[CAREFUL, NAIVE], **GRID)
    by_agent = both.summary.surface_by_agent
    assert by_agent is not None and set(by_agent) == {"careful", "naive"}  # tables' agent labels
    for agent in (CAREFUL, NAIVE):
        alone = run_battery([BATTERY], agent=agent, **GRID)
        assert alone.summary.surface_by_agent is None  # one agent: the pooled surface is its own
        assert by_agent[agent.split(":")[1]]["surface"] == alone.summary.surface
        assert by_agent[agent.split(":")[1]]["stats"] == alone.summary.surface_stats
    careful_v = by_agent["careful"]["stats"]["volume"]["value"]
    naive_v = by_agent["naive"]["stats"]["volume"]["value"]
    pooled = both.summary.surface_stats["volume"]["value"]
    assert naive_v < pooled < careful_v  # pooled hides the difference between the two
    assert both.summary.to_dict()["surface_by_agent"]["naive"]["stats"]["volume"]["value"] == naive_v
    text = render_text(both, verbose=True)  # the surface is in the -v body
    assert f"  careful: volume {careful_v:.2f}" in text and f"  naive: volume {naive_v:.2f}" in text
    html = render_html(both.to_dict())
    assert "Per agent (each agent&#x27;s own surface)" in html or "Per agent (each agent's own surface)" in html
    assert f"<li>naive: volume {naive_v:.3g}" in html


def test_two_agents_with_the_same_table_name_keep_their_own_surfaces(in_root: None) -> None:
    both = run_battery([BATTERY], agents=[CAREFUL, NAIVE], **GRID)
    # the same runs, as if two versions of the agent were both called "careful" (v1.agents:careful, v2...)
    renamed = {CAREFUL: "v1.agents:careful", NAIVE: "v2.agents:careful"}
    episodes = [dataclasses.replace(e, agent=renamed[e.agent]) for e in both.episodes]
    summary, _ = summarize(episodes, both.config)
    assert summary.surface_by_agent is not None
    assert set(summary.surface_by_agent) == {"v1.agents:careful", "v2.agents:careful"}
    assert summary.surface_by_agent["v2.agents:careful"]["surface"] == both.summary.surface_by_agent["naive"]["surface"]
