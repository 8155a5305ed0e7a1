"""The Ray executor: every episode a Ray task, on a local Ray started here or on an existing cluster."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Done
from chaoskit.runner._grid import EpisodePlan
from chaoskit.runner._workers import SpanMerger, lost_result, ref_of, run_in_worker, setup_from

__all__ = ["RayExecutor", "default_runtime_env"]

#: what a cluster's workers do not need from the working directory
_EXCLUDES = [".git", ".venv", "venv", "**/__pycache__", "*.jsonl", "*.json", "node_modules"]


def default_runtime_env(cwd: str | None = None) -> dict[str, Any]:
    """The runtime environment a cluster's workers get: this directory as their working dir (so
    ``examples.travel.agents:careful`` and the scenario files resolve there), without the bulky folders."""
    return {"working_dir": cwd or os.getcwd(), "excludes": list(_EXCLUDES)}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ChaoskitError("--executor ray needs Ray: pip install 'chaoskit[ray]'") from None
    return ray


class RayExecutor:
    """``--executor ray``: each episode is a Ray task (one CPU). Without an address (``--ray-address`` or
    ``RAY_ADDRESS``) a local Ray starts in this process with ``workers`` CPUs and stops at the end; an already
    initialised Ray is used as it is. On a cluster the workers get ``runtime_env`` (by default this directory
    as their working dir) and send each episode's span lines back with its result. A task whose worker or
    node is lost is submitted again, once, and its result marked ``retried``."""

    def __init__(
        self,
        workers: int | None,
        address: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        traces_parts: str | None = None,
        merger: SpanMerger | None = None,
    ) -> None:
        self.workers = workers
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.runtime_env = runtime_env
        self.parts = traces_parts
        self.merger = merger

    def _start(self, ray: Any) -> bool:
        """Start or join Ray; True when this executor started it (and so stops it)."""
        if ray.is_initialized():
            return False
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        if self.address:
            kwargs["address"] = self.address
            kwargs["runtime_env"] = self.runtime_env if self.runtime_env is not None else default_runtime_env()
        else:
            kwargs["num_cpus"] = self.workers or None
            if self.runtime_env is not None:
                kwargs["runtime_env"] = self.runtime_env
        try:
            ray.init(**kwargs)
        except ConnectionError as exc:
            raise ChaoskitError(f"--ray-address {self.address}: cannot join the Ray cluster: {exc}") from None
        return True

    def run(self, runner: EpisodeRunner, episodes: Iterable[EpisodePlan], on_done: Done) -> None:
        """Submit the episodes as Ray tasks, ``workers`` at a time (else twice the cluster's CPUs), taking them
        from the grid as others finish; ``on_done`` is called on this thread."""
        ray = _ray()
        started = self._start(ray)
        lost_errors = tuple(
            getattr(ray.exceptions, n)
            for n in (
                "WorkerCrashedError",
                "NodeDiedError",
                "ObjectLostError",
                "OwnerDiedError",
                "LocalRayletDiedError",
                "OutOfMemoryError",
            )
            if hasattr(ray.exceptions, n)
        )
        remote = ray.remote(num_cpus=1, max_retries=0)(run_in_worker)
        pending: dict[Any, EpisodePlan] = {}
        try:
            setup = ray.put(setup_from(runner, self.parts, remote=bool(self.address)))
            # --workers episodes at a time; without it, twice the cluster's CPUs (so none waits for the next)
            window = self.workers or 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
            grid: Iterator[EpisodePlan] = iter(episodes)
            tries: set[int] = set()

            def submit(ep: EpisodePlan) -> None:
                pending[remote.remote(setup, ref_of(ep))] = ep

            for ep in itertools.islice(grid, window):
                submit(ep)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    ep = pending.pop(ref)
                    try:
                        result, spans = ray.get(ref)
                    except lost_errors as exc:
                        if ep.index in tries:
                            why = f"the Ray worker running this episode was lost twice ({type(exc).__name__})"
                            on_done(ep, lost_result(ep, runner, why))
                        else:
                            tries.add(ep.index)
                            submit(ep)
                        continue
                    result.retried = ep.index in tries
                    tries.discard(ep.index)
                    if self.merger is not None:
                        self.merger.add(spans)
                    on_done(ep, result)
                    for nxt in itertools.islice(grid, 1):
                        submit(nxt)
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished or gone: nothing to stop
                    pass
            if started:
                ray.shutdown()
