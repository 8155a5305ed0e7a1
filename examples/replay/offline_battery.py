"""Record an agent against its tools once, then run its fault battery on the recording, offline.

    python -m examples.replay.offline_battery [DIR]

1. Record: each scenario runs once, fault-free, against the agent's real tools; its trace, every tool result
   included (redacted, capped), goes to ``DIR/<scenario>.jsonl`` (the same as ``chaoskit run --record DIR``).
2. Replay: the battery runs three times per scenario with every tool call answered from those recordings and
   the scenarios' faults applied on top (``chaoskit run --replay DIR``): no tool runs, no network, same verdicts
   for the same seed under any executor.
3. Grade: a recording is a trace (``chaoskit check DIR/<scenario>.jsonl``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import chaoskit
from chaoskit.runner import BatteryResult

SCENARIOS = [
    "examples/scenarios/refund-after-500.yaml",
    "examples/scenarios/status-timeouts.yaml",
    "examples/scenarios/status-schema-drift.yaml",
]


def record_and_replay(folder: Path, agent: str = "examples.plain.agents:careful") -> BatteryResult:
    """Record ``agent`` on :data:`SCENARIOS` into ``folder``, then replay the battery on it; the replayed result."""
    chaoskit.run_battery(SCENARIOS, agent=agent, record=folder)
    return chaoskit.run_battery(SCENARIOS, agent=agent, replay=folder, repeat=3, seed=7)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="chaoskit-cassettes-"))
    result = record_and_replay(folder)
    for path in sorted(folder.glob("*.jsonl")):
        print(f"recorded {path}")
    for e in result.episodes:
        failed = [c["name"] for c in e.checks if c["severity"] == "fail"]
        print(f"{e.scenario:<36} rep {e.repetition}  {'PASS' if e.passed else 'FAIL'}  {', '.join(failed)}")
    return 0 if result.verdict.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
