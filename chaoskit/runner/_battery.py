"""The battery entry point, ``run_battery``: scenarios x agents x repetitions x perturbation x fault intensity."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.runner._agents import AgentError, CommandAgent, PythonAgent
from chaoskit.runner._battery_file import Selection, filter_tags, select
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Executor, LocalExecutor
from chaoskit.runner._expect import Expectations, load_expectations
from chaoskit.runner._gate import load_baseline
from chaoskit.runner._grid import EpisodePlan, RunConfig, plan_episodes
from chaoskit.runner._intensity import Profile, load_profile
from chaoskit.runner._progress import Progress
from chaoskit.runner._results import BatteryResult
from chaoskit.runner._scenario import Scenario
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.runner._summary import summarize
from chaoskit.runner._tools import check_agent_tools, check_trace_tools

__all__ = ["run_battery"]


def run_battery(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    scenarios: Sequence[Scenario] | None = None,
    agent: str | Callable[[], Any] | None = None,
    agents: Sequence[str] | None = None,
    tags: Sequence[Sequence[str]] = (),
    expect: str | os.PathLike[str] | Sequence[str] | Expectations | None = None,
    selection: Selection | None = None,
    repeat: int = 1,
    k: int | None = None,
    intensities: Iterable[float] = (0.0,),
    perturbations: Iterable[float] = (0.0,),
    profile: str | Profile = "medium",
    seed: int = 0,
    theta: float = 0.9,
    workers: int = 1,
    timeout: float = 60.0,
    shard: tuple[int, int] | None = None,
    episode_seed: int | None = None,
    fail_under: float | None = None,
    baseline: str | os.PathLike[str] | dict[str, Any] | None = None,
    attempt_tolerance: float = 0.0,
    traces: str | os.PathLike[str] | None = None,
    progress: bool | IO[str] = False,
) -> BatteryResult:
    """Run a battery and grade it. ``paths`` are scenario files, directories, globs or battery files (or pass
    ``scenarios``, or a ``selection`` from :func:`chaoskit.runner._battery_file.select`)::

        result = chaoskit.run_battery(["examples/scenarios"], agent="examples.plain.agents:careful",
                                      repeat=3, intensities=[0, 0.1, 0.3], seed=1)
        result.verdict.ok, result.summary.overall

    ``agent`` is a ``module:factory`` reference, a command line, or (from Python) the factory itself; it
    overrides everything else. ``agents`` runs every scenario against each of them (else a battery file's
    agents, else the scenario's own). ``tags`` keeps the scenarios having a tag of every group. ``expect`` is
    an expected-outcome table (a battery file's ``expect:`` by default): then the verdict is whether every
    agent behaved as it says. ``baseline`` is a baseline/results file or an already-loaded dict.
    Every episode runs inside its own ``chaoskit.episode`` (fresh plan, counters and spans), so episodes never
    see each other's faults, even with ``workers > 1``.
    """
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # so "examples.plain.agents:careful" resolves from the repository root
    given: PythonAgent | None = None
    if agents is not None and (not agents or any(not str(a).strip() for a in agents)):
        raise AgentError("--agents names an empty agent: give module:factory references or command lines, by commas")
    if isinstance(agent, str) and not agent.strip():
        # an empty --agent would otherwise fall back to the scenarios' own agents without a word
        raise AgentError("--agent is empty: give module:factory or a command line")
    if agent is not None and not isinstance(agent, str):
        given = PythonAgent(f"{getattr(agent, '__module__', '?')}:{getattr(agent, '__qualname__', repr(agent))}", agent)
        agent = given.ref
    config = RunConfig(
        seed=seed,
        repeat=repeat,
        k=k,
        intensities=tuple(float(x) for x in intensities),
        perturbations=tuple(float(x) for x in perturbations),
        profile=load_profile(profile),
        theta=theta,
        workers=workers,
        timeout=timeout,
        agent=agent,
        shard=shard,
        episode_seed=episode_seed,
        fail_under=fail_under,
        attempt_tolerance=attempt_tolerance,
        paths=tuple(str(p) for p in (paths or ())),
        agents=tuple(agents or ()),
        tags=tuple(tuple(g) for g in tags),
    )
    if scenarios is not None:
        selection = Selection(list(scenarios), all_names=[sc.name for sc in scenarios])
    elif selection is None:
        if not paths:
            raise ChaoskitError("no scenarios: give scenario files, directories or globs")
        for p in paths:
            if not str(p).strip():
                # Path("") is the current directory: an empty argument would run every YAML file under it
                raise ChaoskitError("a scenario path is empty: give scenario files (*.yaml), directories or globs")
        selection = select(paths)
    scenarios = filter_tags(selection.scenarios, config.tags)
    config.battery = selection.battery
    # a battery's own table describes the battery's own agents: with --agent / --agents it does not apply
    implicit = selection.expect if not (agent or agents) else None
    table = _expectations(expect if expect is not None else implicit, selection.all_names)
    config.expect = table.source if table is not None else None
    base = load_baseline(baseline) if baseline is not None and not isinstance(baseline, dict) else baseline
    grid = plan_episodes(scenarios, config, selection.assigned)
    started = time.perf_counter()
    telemetry.get_tracer()
    collector = SpanCollector(keep_other=traces is not None)
    sink = TraceSink(traces)
    telemetry.add_processor(collector)
    bar = Progress(len(grid), stream=progress if not isinstance(progress, bool) else None, enabled=bool(progress))
    try:
        runner = EpisodeRunner(scenarios, config, sink, collector, given, selection.assigned)
        _prepare(runner, grid)
        executor: Executor = LocalExecutor(config.workers)
        results = executor.run(runner, grid, bar.update)
        telemetry.flush()
        if collector.other:
            sink.write_spans(collector.other)
    finally:
        bar.close()
        telemetry.remove_processor(collector, shutdown=False)
        sink.close()
    by_command = {ep.scenario.name for ep in grid if isinstance(runner.agent_for(ep), CommandAgent)}
    check_trace_tools([sc for sc in scenarios if sc.name in by_command | runner.unverified_tools], results)
    order = {(ep.scenario.name, ep.agent, ep.repetition, ep.epsilon, ep.intensity): ep.index for ep in grid}
    results.sort(key=lambda r: order.get(r.key, len(grid)))
    summary, verdict = summarize(results, config.to_dict(), baseline=base, expectations=table)
    return BatteryResult(config.to_dict(), results, summary, verdict, time.perf_counter() - started)


def _expectations(
    expect: str | os.PathLike[str] | Sequence[str] | Expectations | None, names: Sequence[str]
) -> Expectations | None:
    """The expected-outcome table, loaded and checked against every scenario the battery has (before --tags)."""
    if expect is None:
        return None
    table = expect if isinstance(expect, Expectations) else load_expectations(expect)
    table.check_scenarios(names)
    return table


def _prepare(runner: EpisodeRunner, grid: list[EpisodePlan]) -> None:
    """Before any episode: call each Python factory once (a factory that fails is a usage error, and the call
    tells sync from async agents), then check the tools the in-process scenarios name against those wrapped."""
    for a in {runner.agent_for(ep).ref: runner.agent_for(ep) for ep in grid}.values():
        if isinstance(a, PythonAgent):
            try:
                a.probe()
            except AgentError:
                raise
            except Exception as exc:
                raise AgentError(f"--agent {a.ref}: the factory failed: {type(exc).__name__}: {exc}") from None
    in_process = {ep.scenario.name: ep.scenario for ep in grid if isinstance(runner.agent_for(ep), PythonAgent)}
    # the factories have run, so every tool they wrap is known now
    runner.unverified_tools = {sc.name for sc in check_agent_tools(in_process.values(), _config.config().known_tools)}
