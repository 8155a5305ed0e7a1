"""How a battery's episodes are scheduled: the ``Executor`` seam, and the in-process one (threads, event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._grid import EpisodePlan
from chaoskit.runner._results import EpisodeResult

__all__ = ["Executor", "LocalExecutor"]


class Executor(Protocol):
    """Runs a battery's episodes and reports each as it finishes; the order of the returned list is free
    (``run_battery`` puts the results back in grid order). Thread, process or cluster executors plug in here."""

    def run(
        self, runner: EpisodeRunner, episodes: Sequence[EpisodePlan], on_done: Callable[[EpisodeResult], None]
    ) -> list[EpisodeResult]:
        """Run every episode through ``runner``; call ``on_done`` with each result."""
        ...


class LocalExecutor:
    """In this process: sync agents one by one or on a thread pool, async agents on one event loop, at most
    ``workers`` episodes of each kind at a time. Every episode has its own ``chaoskit.episode``, so episodes
    running side by side never see each other's faults."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def run(
        self, runner: EpisodeRunner, episodes: Sequence[EpisodePlan], on_done: Callable[[EpisodeResult], None]
    ) -> list[EpisodeResult]:
        """Run the sync episodes, then the async ones; ``run_battery`` must be called outside an event loop."""
        results: list[EpisodeResult] = []
        sync_eps = [ep for ep in episodes if not runner.is_async(ep)]
        async_eps = [ep for ep in episodes if runner.is_async(ep)]

        def one(ep: EpisodePlan) -> EpisodeResult:
            r = runner.run_sync(ep)
            on_done(r)
            return r

        if sync_eps:
            if self.workers == 1:
                results.extend(one(ep) for ep in sync_eps)
            else:
                with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="chaoskit-ep") as pool:
                    results.extend(pool.map(one, sync_eps))
        if async_eps:
            results.extend(asyncio.run(self._run_async_all(runner, async_eps, on_done)))
        return results

    async def _run_async_all(
        self, runner: EpisodeRunner, eps: list[EpisodePlan], on_done: Callable[[EpisodeResult], None]
    ) -> list[EpisodeResult]:
        sem = asyncio.Semaphore(self.workers)

        async def one(ep: EpisodePlan) -> EpisodeResult:
            async with sem:
                r = await runner.run_async(ep)
            on_done(r)
            return r

        return list(await asyncio.gather(*(one(ep) for ep in eps)))
