"""``chaoskit suggest --from-trace TRACE``: the scenario that reruns a recorded episode as a regression test."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from chaoskit.grading import run_checks
from chaoskit.replay import Cassette, ReplayMiss, cassette_path
from chaoskit.scenarios._scenario import load_scenario
from chaoskit.semconv import EPISODE_AGENT, EPISODE_TASK, PLAN
from chaoskit.suggest._battery_writer import GENERATED, generated
from chaoskit.suggest._tool_info import SuggestError
from chaoskit.traces._trace import Trace

__all__ = ["FromTrace", "scenario_from_trace"]

#: checks whose verdict rests on what a replay does not reproduce (wall-clock gaps, docs/replay.md): not required
_TIMING = frozenset({"honors_retry_after"})


@dataclass(frozen=True, slots=True)
class FromTrace:
    """What ``--from-trace`` wrote: the scenario, the cassette beside it, and the recorded verdicts."""

    scenario: Path
    cassettes: Path
    passed: tuple[str, ...]
    failed: tuple[str, ...]


def _flow(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def scenario_from_trace(
    trace: str | os.PathLike[str], out: str | os.PathLike[str], *, agent: str | None = None
) -> FromTrace:
    """Write ``out/<name>.yaml``, a scenario with the recorded episode's name, task, agent and faults that requires
    every check that passed on the recording to pass again, and its cassette to ``out/cassettes/<name>.jsonl``:
    ``chaoskit run out/<name>.yaml --replay out/cassettes`` reruns it offline."""
    try:
        cassette = Cassette.open(trace)
    except ReplayMiss as exc:
        raise SuggestError(f"--from-trace: {exc}") from None
    ep = cassette.episode
    name = ep.name or Path(trace).stem
    task = ep.attributes.get(EPISODE_TASK)
    if not isinstance(task, str) or not task:
        raise SuggestError(f"--from-trace {trace}: the recorded episode has no {EPISODE_TASK}, the task to rerun")
    agent = agent or ep.attributes.get(EPISODE_AGENT)
    if not isinstance(agent, str) or not agent:
        raise SuggestError(f"--from-trace {trace}: the episode does not name its agent ({EPISODE_AGENT}); give --agent")
    plan = ep.attributes.get(PLAN)
    faults = json.loads(plan).get("faults", []) if isinstance(plan, str) else []
    results = [r for r in run_checks(Trace([ep])) if r.name not in _TIMING]
    passed = tuple(r.name for r in results if r.severity == "pass")
    failed = tuple(f"{r.name} ({r.severity})" for r in results if r.severity not in ("pass", "skip"))
    out_dir = Path(out)
    scenario = out_dir / f"{cassette_path(out_dir, name).stem}.yaml"
    if scenario.exists() and not generated(scenario):
        raise SuggestError(
            f"--out {out_dir}: {scenario.name} there was not written by chaoskit suggest; not overwritten"
        )
    lines = [
        f"{GENERATED} From the recorded episode {ep.id} in {trace}.",
        f"# Rerun offline: chaoskit run {scenario} --replay {out_dir / 'cassettes'}",
        "# Every check that passed on the recording must pass again."
        + (f" It failed: {', '.join(failed)}." if failed else ""),
        f"name: {_flow(name)}",
        f"task: {_flow(task)}",
        f"agent: {_flow(agent)}",
    ]
    lines.append("faults:" if faults else "faults: []")
    lines.extend(f"  - {_flow(f)}" for f in faults)
    lines.append("success:")
    lines.append(f"  checks: {_flow(list(passed))}")
    lines.append('tags: ["from-trace"]')
    target = cassette_path(out_dir / "cassettes", name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(trace).resolve() != target.resolve():
            shutil.copyfile(trace, target)
        scenario.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as exc:
        raise SuggestError(f"--out {out_dir}: cannot write the scenario: {exc}") from None
    load_scenario(scenario)  # a file that would not run is a bug, never shipped
    return FromTrace(scenario, target.parent, passed, tuple(failed))
