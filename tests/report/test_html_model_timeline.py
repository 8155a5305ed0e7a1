"""The HTML report's timeline shows the agent's model calls (``chat {model}``) beside its tool attempts, faults marked."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from chaoskit.report import render_html
from chaoskit.report._svg import timeline
from chaoskit.runner._battery import run_battery

ROOT = Path(__file__).resolve().parents[2]
NS = "{http://www.w3.org/2000/svg}"


def _of(el: ET.Element, cls: str) -> list[ET.Element]:
    return [r for r in el.iter() if r.get("class") == cls]


def test_model_calls_get_a_lane_per_model_above_the_tools() -> None:
    attempts = [{"tool": "search", "attempt": 1, "t_ms": 20.0, "ms": 10.0, "outcome": "ok", "fault": None}]
    calls = [
        {"model": "gpt-4o", "call": 1, "t_ms": 0.0, "ms": 5.0, "outcome": "error", "fault": "rate_limit"},
        {"model": "gpt-4o", "call": 2, "t_ms": 10.0, "ms": 5.0, "outcome": "ok", "fault": None},
        {"model": "gpt-4o", "call": 3, "t_ms": 35.0, "ms": 5.0, "outcome": "ok", "fault": None, "skipped": "refusal"},
    ]
    el = ET.fromstring(timeline(attempts, title="t", model_calls=calls, plot_w=400))
    labels = [t.text for t in el.iter(f"{NS}text") if t.get("class") == "label"]
    assert labels == ["chat gpt-4o", "search"]
    bars = _of(el, "model-call")
    assert len(bars) == 3 and {b.get("y") for b in bars} == {bars[0].get("y")}
    assert float(bars[0].get("y", "0")) < float(_of(el, "attempt")[0].get("y", "0"))
    assert [b.get("data-fault") for b in bars] == ["rate_limit", "", ""]
    assert [m.find(f"{NS}title").text for m in _of(el, "fault")] == ["fault injected: rate_limit"]  # type: ignore[union-attr]
    tip = bars[2].find(f"{NS}title")
    assert tip is not None and "refusal not injected (skipped)" in (tip.text or "")


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    scenario = ROOT / "examples" / "travel" / "scenarios" / "model-rate-limited.yaml"
    agents = ["examples.travel.agents:careful", "examples.travel.agents:naive"]
    result = run_battery([scenario], agents=agents)
    return json.loads(json.dumps(result.to_dict(), default=str))


def test_a_real_run_lists_model_calls_with_their_faults(results: dict[str, Any]) -> None:
    for e in results["episodes"]:
        calls = e["attempts"]["model_timeline"]
        assert [c["fault"] for c in calls if c["fault"]] == ["rate_limit"], calls
        faulted = next(c for c in calls if c["fault"])
        assert faulted["call"] == 2 and faulted["outcome"] == "error" and faulted["model"] == "scripted-replay"
        after = next(c for c in calls if c["call"] == 3)
        waited = after["t_ms"] - (faulted["t_ms"] + faulted["ms"])
        # careful waits the 0.3 s Retry-After; naive asks again at once
        assert waited >= 300 if e["agent"].endswith("careful") else waited < 300


def test_the_html_timeline_shows_the_model_calls_beside_the_tool_attempts(results: dict[str, Any]) -> None:
    page = render_html(results)
    found = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="chart timeline".*?</svg>', page, re.S)
    charts = [ET.fromstring(s) for s in found]
    assert len(charts) == len(results["episodes"]) == 2
    for chart in charts:
        labels = [t.text for t in chart.iter(f"{NS}text") if t.get("class") == "label"]
        assert labels[0] == "chat scripted-replay" and "search_flights" in labels
        assert [b.get("data-fault") for b in _of(chart, "model-call") if b.get("data-fault")] == ["rate_limit"]
        assert _of(chart, "attempt")
    assert page.count('<table class="model-calls">') == 2
    assert "The <code>chat</code> rows are the agent&#x27;s model calls" in page or "model calls (rounded" in page
