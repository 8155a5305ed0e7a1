"""Progress of a battery on stderr: episodes done and failed, the rate, and the time left."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from chaoskit.runner._results import EpisodeResult
from chaoskit.runner._summary import metamorphic_check

__all__ = ["Progress"]


class Progress:
    """A one-line bar on a TTY; otherwise a line every fifth of the run (at least every 10 episodes) or every
    10 seconds. Both show the rate and, until the end, the time left at that rate."""

    def __init__(self, total: int, stream: IO[str] | None = None, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self.failed = 0
        self.start = time.perf_counter()
        self._last = self.start
        self._step = max(10, total // 5)
        self._lock = threading.Lock()
        # perturbed episodes wait for their unperturbed reference: the metamorphic relation can fail them
        self._refs: dict[tuple[str, int, float], EpisodeResult] = {}
        self._waiting: dict[tuple[str, int, float], list[EpisodeResult]] = {}

    def _count(self, result: EpisodeResult) -> None:
        key = (result.scenario, result.repetition, result.intensity)
        if result.epsilon == 0.0:
            self.failed += not result.passed
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
            left = "" if self.done == self.total else f", ~{_duration((self.total - self.done) / rate)} left"
            if self.tty:
                width = 30
                filled = int(width * self.done / self.total)
                bar = "#" * filled + "." * (width - filled)
                self.stream.write(
                    f"\r[{bar}] {self.done}/{self.total} episodes, {self.failed} failed, {rate:.1f}/s{left}    "
                )
                if self.done == self.total:
                    self.stream.write("\n")
                self.stream.flush()
            elif self.done % self._step == 0 or now - self._last >= 10 or self.done == self.total:
                self._last = now
                self.stream.write(
                    f"chaoskit: {self.done}/{self.total} episodes, {self.failed} failed, {rate:.1f}/s{left}\n"
                )
                self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
