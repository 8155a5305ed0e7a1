"""The task each generated scenario gives: ``--task``, or a task of the agent's own scenarios that uses the tool."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chaoskit._errors import ChaoskitError
from chaoskit.scenarios._files import has_top_level_key, in_scenarios_folder
from chaoskit.scenarios._scenario import Scenario, load_scenario

__all__ = ["Task", "agent_scenarios", "pick_tasks"]

#: the most YAML files looked at next to the agent's module (a big data folder is not read through)
_MAX_FILES = 500


@dataclass(frozen=True)
class Task:
    """A task text and where it came from (a scenario file, or ``--task``)."""

    text: str
    origin: str


def agent_scenarios(ref: str) -> list[Scenario]:
    """The scenarios under the folder of the agent's module (``examples/shop/`` for ``examples.shop.agents:careful``)
    that run this agent's module or name no agent; files that do not load are skipped."""
    module_name = ref.partition(":")[0]
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return []
    file = getattr(module, "__file__", None)
    if not file:
        return []
    root = Path(file).resolve().parent
    out: list[Scenario] = []
    paths = sorted(p for p in root.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))[:_MAX_FILES]
    for path in paths:
        if not (in_scenarios_folder(path, root) or has_top_level_key(path, "task")):
            continue
        try:
            sc = load_scenario(path)
        except (ChaoskitError, OSError):
            continue
        if sc.agent is None or sc.agent.partition(":")[0] == module_name:
            out.append(sc)
    return out


def _shown(path: str | os.PathLike[str]) -> str:
    """A path relative to the working directory when it is under it (comments stay short and portable)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _weight(sc: Scenario, tool: str) -> int:
    """How surely the scenario's task calls ``tool``: its success asks for an attempt (3), a fault aims at it (2),
    it bounds its attempts above 0 (1); a bound of 0 ("never call it") is the opposite (-1)."""
    s = sc.success
    if s.max_attempts.get(tool) == 0:
        return -1
    if tool in s.min_attempts or tool in (s.required_tools or ()):
        return 3
    if any(tool in f.tool_names() for f in sc.faults):
        return 2
    return 1 if tool in s.max_attempts else 0


def pick_tasks(tools: Sequence[str], scenarios: Sequence[Scenario], task: str | None) -> dict[str, Task]:
    """The task for each tool: ``task`` for all when given; else, per tool, the task of the scenario that most
    surely calls it (fewest faults first, then by file name). A tool no scenario names gets no task."""
    if task is not None:
        return {t: Task(task, "--task") for t in tools}
    out: dict[str, Task] = {}
    for tool in tools:
        ranked = sorted(
            (sc for sc in scenarios if _weight(sc, tool) > 0),
            key=lambda sc: (-_weight(sc, tool), len(sc.faults), str(sc.source or sc.name)),
        )
        if ranked:
            best = ranked[0]
            out[tool] = Task(best.task, f"{_shown(best.source) if best.source else 'scenario'} ({best.name})")
    return out
