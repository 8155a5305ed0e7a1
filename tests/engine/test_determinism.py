"""Same plan + seed = same faults at the same calls, sequentially, in threads and in asyncio tasks."""

from __future__ import annotations

import asyncio
import contextvars
import random
from concurrent.futures import ThreadPoolExecutor

import chaoskit
from chaoskit import Plan, chaos

PLAN_YAML = """
seed: 11
faults:
  - {type: rate_limit, tool: search, probability: 0.3, retry_after: 0}
  - {type: error, tool: read_file, every: 3}
  - {type: timeout, tool: "*", probability: 0.1, after_s: 0}
"""


@chaos
def search(i: int) -> int:
    return i


@chaos
def read_file(i: int) -> int:
    return i


@chaos
async def asearch(i: int) -> int:
    await asyncio.sleep(random.random() / 1000)
    return i


def faults_by_tool_call(ep: chaoskit.Episode) -> set[tuple[str, int, str | None]]:
    return {(a.tool, a.attempt, a.fault_type) for a in ep.attempts}


def _call(fn, i):  # type: ignore[no-untyped-def]
    try:
        fn(i)
    except Exception:
        pass


def sequential() -> set[tuple[str, int, str | None]]:
    with chaoskit.episode("seq", plan=Plan.from_yaml(PLAN_YAML)) as ep:
        for i in range(60):
            _call(search, i)
            _call(read_file, i)
    return faults_by_tool_call(ep)


def test_two_runs_same_seed_same_faults() -> None:
    a, b = sequential(), sequential()
    assert a == b
    assert {f for _, _, f in a} >= {"rate_limit", "error", "timeout", None}


def test_threads_in_parallel_give_the_same_faults_per_tool_call() -> None:
    expected = sequential()
    with chaoskit.episode("threads", plan=Plan.from_yaml(PLAN_YAML)) as ep:
        jobs = [(search, i) for i in range(60)] + [(read_file, i) for i in range(60)]
        random.Random(5).shuffle(jobs)
        with ThreadPoolExecutor(max_workers=8) as pool:
            # each job carries the episode's context, as LangChain's executor does
            futures = [pool.submit(contextvars.copy_context().run, _call, fn, i) for fn, i in jobs]
            for f in futures:
                f.result()
    got = faults_by_tool_call(ep)
    assert len(got) == 120
    assert got == expected


async def test_asyncio_gather_gives_the_same_faults_per_tool_call() -> None:
    plan = Plan(seed=4, faults=[{"type": "error", "tool": "asearch", "probability": 0.4}])

    async def safe(i: int) -> None:
        try:
            await asearch(i)
        except ConnectionResetError:
            pass

    async def once() -> list[int]:
        async with chaoskit.episode("gather", plan=plan) as ep:
            await asyncio.gather(*(safe(i) for i in range(50)))
        return sorted(a.attempt for a in ep.attempts if a.fault_type)

    first, second = await once(), await once()
    assert first == second and first
    assert sorted(a for a in range(1, 51) if chaoskit.plan._triggers.uniform(4, 0, "asearch", a) < 0.4) == first


def test_concurrent_episodes_do_not_share_counters() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "search", "on_call": 1}])

    def episode_run(_: int) -> list[str | None]:
        with chaoskit.episode("iso", plan=plan) as ep:
            for i in range(3):
                _call(search, i)
        return [a.fault_type for a in sorted(ep.attempts, key=lambda a: a.attempt)]

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(episode_run, range(24)))
    assert all(r == ["error", None, None] for r in results)
