"""Agents for tests/runner/test_executors.py: the careful plain agent, killed (SIGKILL) once mid-episode in a worker."""

from __future__ import annotations

import os
import signal
import tempfile
import uuid
from pathlib import Path

from chaoskit import current_episode
from examples.plain.agents import PlainAgent

#: one file per armed scenario, named after it, holding "marker path\nparent pid": workers (a local Ray's
#: among them, started before the test) see it whatever their environment
ARMED = Path(tempfile.gettempdir()) / "chaoskit-test-kill-armed"


def arm(template: Path, folder: Path) -> tuple[Path, Path]:
    """A copy of the scenario ``template`` under a fresh name in ``folder``, armed: the first worker that runs
    one of its episodes with :func:`killed_once` is killed. (scenario file, marker made at the kill)"""
    name = f"kill-once-{uuid.uuid4().hex}"
    text = template.read_text(encoding="utf-8")
    first, _, rest = text.partition("\nname: ")
    scenario = folder / f"{name}.yaml"
    scenario.write_text(f"{first}\nname: {name}\n{rest.partition(chr(10))[2]}", encoding="utf-8")
    ARMED.mkdir(exist_ok=True)
    (ARMED / name).write_text(f"{folder / 'killed'}\n{os.getpid()}", encoding="utf-8")
    return scenario, folder / "killed"


def disarm(scenario: Path) -> None:
    (ARMED / scenario.stem).unlink(missing_ok=True)


class _KilledOnce(PlainAgent):
    """Kills its own process the first time a worker runs an armed scenario (a marker file remembers), never
    in the process that started the battery."""

    def invoke(self, task: str) -> str:
        episode = current_episode()
        armed = ARMED / episode.name if episode is not None and episode.name else None
        if armed is not None and armed.exists():
            mark, _, parent = armed.read_text(encoding="utf-8").partition("\n")
            if os.getpid() != int(parent):
                try:
                    fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    pass
                else:
                    os.close(fd)
                    os.kill(os.getpid(), signal.SIGKILL)
        return super().invoke(task)


def killed_once() -> PlainAgent:
    return _KilledOnce("careful")
