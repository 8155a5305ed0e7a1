"""The battery runner with a scenario whose tools are an MCP server: the example out-of-process agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

ROOT = Path(__file__).resolve().parents[3]


def run(tmp_path: Path, scenario: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "results.json"
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", str(scenario), "--json", str(out), "--quiet", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), done.stderr
    return dict(json.loads(out.read_text(encoding="utf-8")))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_example_mcp_agent_runs_through_the_proxy(tmp_path: Path, transport: str) -> None:
    scenario = ROOT / "examples/mcp/scenarios/refund-over-mcp.yaml"
    if transport == "http":  # the runner starts the proxy itself and gives the agent its URL
        text = scenario.read_text(encoding="utf-8").replace("mcp:\n", "mcp:\n  transport: http\n")
        scenario = tmp_path / "over-http.yaml"
        scenario.write_text(text, encoding="utf-8")
    traces = tmp_path / "traces.jsonl"
    results = run(tmp_path, scenario, "--traces", str(traces))
    (episode,) = results["episodes"]  # type: ignore[misc]
    assert episode["passed"], episode
    # every attempt is in the episode's trace (the runner's run_episode span), whoever started the proxy: over
    # http the runner does, and hands it the episode's TRACEPARENT
    spans = [
        span
        for line in traces.read_text(encoding="utf-8").splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    (root,) = [s["traceId"] for s in spans if s["name"].startswith("run_episode ")]
    attempts = [s["traceId"] for s in spans if s["name"].startswith("execute_tool ")]
    assert len(attempts) == 3 and set(attempts) == {root}
    timeline = episode["attempts"]["timeline"]
    assert [(t["tool"], t["fault"], t["outcome"]) for t in timeline] == [
        ("lookup_order", "list_changed", "ok"),  # the protocol fault of the scenario's mcp: key
        ("refund_order", "http", "error"),  # the scenario's own fault, injected by the proxy
        ("refund_order", None, "ok"),
    ]


def test_a_protocol_fault_the_agent_cannot_survive_fails_the_episode(tmp_path: Path) -> None:
    text = (ROOT / "examples/mcp/scenarios/refund-over-mcp.yaml").read_text(encoding="utf-8")
    # the refund tool is gone at its first call: the agent cannot refund, and must not claim it did
    text = text.replace(
        "type: list_changed\n      tool: lookup_order", "type: tool_disappears\n      tool: refund_order"
    )
    assert "tool_disappears" in text
    scenario = tmp_path / "gone.yaml"
    scenario.write_text(text, encoding="utf-8")
    results = run(tmp_path, scenario)
    (episode,) = results["episodes"]  # type: ignore[misc]
    assert not episode["passed"]
    assert [(t["tool"], t["fault"]) for t in episode["attempts"]["timeline"]] == [
        ("lookup_order", None),
        ("refund_order", "tool_disappears"),
    ]
