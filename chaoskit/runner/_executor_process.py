"""The process executor: a pool of spawned worker processes, each running episodes with its own runner."""

from __future__ import annotations

import itertools
import multiprocessing
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Done
from chaoskit.runner._grid import EpisodePlan, default_workers
from chaoskit.runner._workers import (
    SpanMerger,
    WorkerSetup,
    close_worker,
    lost_result,
    ref_of,
    run_in_worker,
    setup_from,
)

__all__ = ["ProcessExecutor", "default_workers"]

#: episodes sent ahead to each worker, so it never waits for the next one
_AHEAD = 2


def _worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """A worker: run each episode it is sent, answer with (index, result, spans); stop at None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    try:
        while True:
            ref = conn.recv()
            if ref is None:
                break
            try:
                result, spans = run_in_worker(setup, ref)
                conn.send((ref[0], result, spans, None))
            except Exception as exc:  # a bug in the runner itself, not in the agent: the parent raises it
                conn.send((ref[0], None, None, f"{type(exc).__name__}: {exc}"))
    except (EOFError, OSError):
        pass
    finally:
        close_worker()


class _Worker:
    def __init__(self, ctx: Any, setup: WorkerSetup) -> None:
        self.conn, child = ctx.Pipe()
        self.proc: BaseProcess = ctx.Process(target=_worker_main, args=(child, setup), daemon=True)
        self.proc.start()
        child.close()
        #: the episodes sent, oldest (the one running) first
        self.sent: deque[EpisodePlan] = deque()


class ProcessExecutor:
    """``--executor process``: ``workers`` processes started with ``spawn`` (safe with threads and on every
    platform), each building the battery's runner once and running episodes one after another. A worker that
    dies (killed, out of memory, a crash in native code) is replaced and its episode runs again, once, marked
    ``retried``; its spans from the lost try are never merged. Ctrl-C stops the workers."""

    def __init__(self, workers: int, traces_parts: str | None = None, merger: SpanMerger | None = None) -> None:
        self.workers = workers
        self.parts = traces_parts
        self.merger = merger

    def run(self, runner: EpisodeRunner, episodes: Iterable[EpisodePlan], on_done: Done) -> None:
        """Run every episode on the pool; ``on_done`` is called on this thread as results come back."""
        ctx = multiprocessing.get_context("spawn")
        setup = setup_from(runner, self.parts)
        grid: Iterator[EpisodePlan] = iter(episodes)
        retry: deque[EpisodePlan] = deque()
        tries: dict[int, int] = {}
        pool: list[_Worker] = []
        streak = 0  # workers lost in a row, with no episode finished in between

        def next_episode() -> EpisodePlan | None:
            if retry:
                return retry.popleft()
            return next(grid, None)

        def feed(w: _Worker) -> None:
            while len(w.sent) < _AHEAD:
                ep = next_episode()
                if ep is None:
                    return
                w.sent.append(ep)
                try:
                    w.conn.send(ref_of(ep))
                except OSError:
                    return  # the worker is gone: its sentinel says so, and this episode goes again

        try:
            first = list(itertools.islice(grid, 1))
            if not first:
                return
            retry.extend(first)
            pool = [_Worker(ctx, setup) for _ in range(self.workers)]
            for w in pool:
                feed(w)
            while any(w.sent for w in pool):
                busy = [w for w in pool if w.sent]
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy])
                for w in busy:
                    dead = w.proc.sentinel in ready
                    while w.sent and w.conn.poll():
                        try:
                            _index, result, spans, error = w.conn.recv()
                        except (EOFError, OSError):
                            dead = True
                            break
                        ep = w.sent.popleft()
                        if error is not None:
                            raise RuntimeError(f"a worker failed running episode {ep.index}: {error}")
                        result.retried = bool(tries.pop(ep.index, 0))
                        if self.merger is not None:
                            self.merger.add(spans)
                        on_done(ep, result)
                        streak = 0
                    if dead:
                        streak += 1
                        if streak > 2 * len(pool) + 2:
                            raise ChaoskitError(
                                f"--executor process: {streak} worker processes in a row died before finishing an "
                                f"episode (the last: exit code {w.proc.exitcode}); a script that calls run_battery "
                                "must do so under `if __name__ == '__main__':` (the workers are spawned)"
                            )
                        w.proc.join(timeout=5)
                        self._lost(w, runner, retry, tries, on_done)
                        pool[pool.index(w)] = _Worker(ctx, setup)
                        for other in pool:
                            feed(other)
                    else:
                        feed(w)
        finally:
            self._stop(pool)

    def _lost(
        self,
        w: _Worker,
        runner: EpisodeRunner,
        retry: deque[EpisodePlan],
        tries: dict[int, int],
        on_done: Done,
    ) -> None:
        """A worker died: its running episode goes again (once), the ones queued behind it go as they were."""
        if not w.sent:
            return
        crashed = w.sent.popleft()
        code = w.proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        if tries.get(crashed.index, 0) >= 1:
            tries.pop(crashed.index, None)
            why = f"the worker process running this episode died twice ({how}); not retried again"
            on_done(crashed, lost_result(crashed, runner, why))
        else:
            tries[crashed.index] = 1
            retry.append(crashed)
        retry.extend(w.sent)
        w.sent.clear()
        w.conn.close()

    @staticmethod
    def _stop(pool: list[_Worker]) -> None:
        """Tell each worker to stop (it flushes its spans); terminate those that do not."""
        for w in pool:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        for w in pool:
            if w.sent:  # interrupted mid-episode: no reason to wait for it
                w.proc.terminate()
            w.proc.join(timeout=10)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join(timeout=5)
            w.conn.close()
