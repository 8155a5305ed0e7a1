"""Progress of a battery on stderr: episodes done and failed, the rate, and the time left."""

from __future__ import annotations

import atexit
import sys
import threading
import time
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as _Bar
from rich.text import Text

from chaoskit.runner._results import EpisodeResult
from chaoskit.runner._summary import metamorphic_check

__all__ = ["Progress"]

#: a bar on a terminal is redrawn at most this often (and once more at the end)
_REDRAW_S = 0.1


class _Failed(ProgressColumn):
    """The failures so far, red on a colour terminal once there is one."""

    def render(self, task: Task) -> Text:
        n = int(task.fields.get("failed", 0))
        return Text(f"{n} failed", style="bold red" if n else "green")


class _Rate(ProgressColumn):
    """Episodes per second so far."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.fields.get('rate', 0.0):.1f}/s", style="cyan")


class Progress:
    """A rich progress bar on a TTY (episodes done of the total, failures so far, the rate, the time left);
    otherwise a plain line every fifth of the run (at least every 10 episodes) or every 10 seconds, with the
    rate and, until the end, the time left at that rate. Colour only on a terminal (``NO_COLOR`` respected).

    Perturbed episodes count as failed also when the metamorphic relation fails them: each waits for the
    unperturbed episode of the same scenario, agent, repetition and intensity."""

    def __init__(self, total: int, stream: IO[str] | None = None, enabled: bool = True, perturbed: bool = True) -> None:
        self.total = total
        #: whether any episode is perturbed: without, no reference is kept (a huge run stays in constant memory)
        self.perturbed = perturbed
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self.failed = 0
        self.start = time.perf_counter()
        self._last = self.start
        self._drawn = 0.0
        self._step = max(10, total // 5)
        self._lock = threading.Lock()
        self._bar: _Bar | None = None
        self._task: TaskID | None = None
        self._closed = False
        # perturbed episodes wait for their unperturbed reference: the metamorphic relation can fail them
        self._refs: dict[tuple[str, str, int, float], EpisodeResult] = {}
        self._waiting: dict[tuple[str, str, int, float], list[EpisodeResult]] = {}

    def _count(self, result: EpisodeResult) -> None:
        key = (result.scenario, result.agent, result.repetition, result.intensity)
        if result.epsilon == 0.0:
            self.failed += not result.passed
            if not self.perturbed:
                return
            self._refs[key] = result
            for e in self._waiting.pop(key, []):
                chk = metamorphic_check(e, result)
                self.failed += chk is not None and not chk["passed"]
        elif not result.passed:
            self.failed += 1
        elif key in self._refs:
            chk = metamorphic_check(result, self._refs[key])
            self.failed += chk is not None and not chk["passed"]
        else:
            self._waiting.setdefault(key, []).append(result)

    def update(self, result: EpisodeResult) -> None:
        """Count one finished episode and, when due, show the progress."""
        with self._lock:
            self.done += 1
            self._count(result)
            if not self.enabled:
                return
            now = time.perf_counter()
            rate = self.done / max(now - self.start, 1e-9)
            if self.tty:
                if not self._closed:
                    self._draw(now, rate)
            elif self.done % self._step == 0 or now - self._last >= 10 or self.done == self.total:
                self._last = now
                left = "" if self.done == self.total else f", ~{_duration((self.total - self.done) / rate)} left"
                self.stream.write(
                    f"chaoskit: {self.done}/{self.total} episodes, {self.failed} failed, {rate:.1f}/s{left}\n"
                )
                self.stream.flush()

    def _draw(self, now: float, rate: float) -> None:
        if self._bar is None:
            console = Console(file=self.stream, highlight=False)
            self._bar = _Bar(
                TextColumn("[bold]chaoskit[/]"),
                BarColumn(bar_width=30),
                MofNCompleteColumn(),
                TextColumn("episodes"),
                _Failed(),
                _Rate(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._bar.add_task("episodes", total=self.total, failed=0, rate=0.0)
            self._bar.start()
            atexit.register(self.close)
        assert self._task is not None
        self._bar.update(self._task, completed=self.done, failed=self.failed, rate=rate)
        if self.done >= self.total:
            self.close()
        elif now - self._drawn >= _REDRAW_S or self.done == 1:
            self._drawn = now
            self._bar.refresh()

    def close(self) -> None:
        """Stop the bar, drawn a last time (the battery calls it at the end; safe to call again)."""
        bar, self._bar = self._bar, None
        self._closed = True
        if bar is not None:
            bar.refresh()
            bar.stop()
            atexit.unregister(self.close)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
