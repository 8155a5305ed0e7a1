"""`chaoskit run` with an `mcp:` scenario whose command-line agent opens its own chaoskit episode: the proxy's
attempts and the agent's answer are one episode, in the runner's result and in the spans it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

from chaoskit import Trace
from chaoskit.cli import main as chaoskit_main

ROOT = Path(__file__).resolve().parents[3]

#: the example MCP agent, run inside a chaoskit episode that records its answer
AGENT = textwrap.dedent(
    """
    import sys
    import anyio
    import chaoskit
    sys.path.insert(0, "examples/mcp")
    from agent import run

    with chaoskit.episode("refund-agent") as ep:
        answer = anyio.run(run, " ".join(sys.argv[1:]))
        ep.finish(answer)
    print(answer)
    """
)


def test_the_proxied_attempts_and_the_agents_answer_are_one_episode(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    text = (ROOT / "examples/mcp/scenarios/refund-over-mcp.yaml").read_text(encoding="utf-8")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text.replace("agent: python examples/mcp/agent.py", f"agent: python {agent}"), "utf-8")
    out, traces = tmp_path / "results.json", tmp_path / "spans.jsonl"
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", str(scenario), "--json", str(out), "--traces", str(traces), "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), done.stderr
    (episode,) = json.loads(out.read_text(encoding="utf-8"))["episodes"]
    assert episode["passed"], episode
    assert [t["outcome"] for t in episode["attempts"]["timeline"]] == ["ok", "error", "ok"]
    # the spans the runner wrote: the agent's episode holds the proxy's three attempts and its answer
    (graded,) = [e for e in Trace.load(traces).episodes if e.attempts]
    assert graded.name == "refund-agent" and graded.output.startswith("Done: refunded 42.50")
    assert [(a.tool, a.outcome) for a in graded.attempts] == [
        ("lookup_order", "ok"),
        ("refund_order", "error"),
        ("refund_order", "ok"),
    ]
    assert chaoskit_main(["check", str(traces)]) == 0
