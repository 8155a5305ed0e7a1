"""How a battery's episodes are scheduled: the ``Executor`` seam, and the in-process one (threads, event loop)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._grid import EpisodePlan
from chaoskit.runner._results import EpisodeResult

__all__ = ["Done", "Executor", "LocalExecutor"]

#: what an executor calls with each finished episode, in the order they finish
Done = Callable[[EpisodePlan, EpisodeResult], None]


class Executor(Protocol):
    """Runs a battery's episodes and reports each as it finishes, in any order (``run_battery`` puts them
    back in grid order). ``episodes`` is lazy: take from it only as fast as episodes run, so a grid of 10**9
    episodes starts at once and runs in constant memory. On ``KeyboardInterrupt`` stop the workers and
    re-raise: ``run_battery`` then reports the episodes that finished, marked partial."""

    def run(self, runner: EpisodeRunner, episodes: Iterable[EpisodePlan], on_done: Done) -> None:
        """Run every episode through ``runner`` (or a copy of it in each worker); call ``on_done`` with each."""
        ...


class LocalExecutor:
    """In this process: sync agents one by one or on a thread pool, async agents on one event loop, at most
    ``workers`` episodes of each kind at a time. Every episode has its own ``chaoskit.episode``, so episodes
    running side by side never see each other's faults. Threads share one GIL: for CPU-bound agents use the
    process or Ray executor."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def run(self, runner: EpisodeRunner, episodes: Iterable[EpisodePlan], on_done: Done) -> None:
        """Run the sync episodes as the grid yields them, then the async ones on one event loop (``run_battery``
        must be called outside an event loop); ``on_done`` is called on this thread."""
        async_eps: list[EpisodePlan] = []

        def sync_only() -> Iterator[EpisodePlan]:
            for ep in episodes:
                if runner.is_async(ep):
                    async_eps.append(ep)
                else:
                    yield ep

        if self.workers == 1:
            for ep in sync_only():
                on_done(ep, runner.run_sync(ep))
        else:
            self._run_threads(runner, sync_only(), on_done)
        if async_eps:
            asyncio.run(self._run_async_all(runner, async_eps, on_done))

    def _run_threads(self, runner: EpisodeRunner, eps: Iterator[EpisodePlan], on_done: Done) -> None:
        """At most twice ``workers`` episodes submitted at a time, taken from the grid as others finish."""
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="chaoskit-ep")
        running: dict[Future[EpisodeResult], EpisodePlan] = {}
        try:
            for ep in itertools.islice(eps, 2 * self.workers):
                running[pool.submit(runner.run_sync, ep)] = ep
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    on_done(running.pop(fut), fut.result())
                    for nxt in itertools.islice(eps, 1):
                        running[pool.submit(runner.run_sync, nxt)] = nxt
        except BaseException:
            # Ctrl-C: drop what has not started; the episodes running finish (a thread cannot be stopped)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    async def _run_async_all(self, runner: EpisodeRunner, eps: list[EpisodePlan], on_done: Done) -> None:
        sem = asyncio.Semaphore(self.workers)

        async def one(ep: EpisodePlan) -> None:
            async with sem:
                r = await runner.run_async(ep)
            on_done(ep, r)

        await asyncio.gather(*(one(ep) for ep in eps))
