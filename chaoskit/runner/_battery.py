"""The battery entry point, ``run_battery``: scenarios x agents x repetitions x perturbation x fault intensity."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.metrics._cost import Prices
from chaoskit.runner._agents import AgentError, CommandAgent, PythonAgent
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Executor, LocalExecutor
from chaoskit.runner._executor_process import ProcessExecutor, default_workers
from chaoskit.runner._executor_ray import RayExecutor
from chaoskit.runner._expect import Expectations, load_expectations
from chaoskit.runner._gate import load_baseline
from chaoskit.runner._grid import EpisodePlan, RunConfig, agents_for, count_episodes, iter_episodes
from chaoskit.runner._intensity import Profile, load_profile
from chaoskit.runner._progress import Progress
from chaoskit.runner._results import BatteryResult, EpisodeResult
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.runner._summary import summarize
from chaoskit.runner._tools import check_agent_tools, check_trace_tools
from chaoskit.runner._workers import SpanMerger, parts_dir
from chaoskit.scenarios._battery_file import Selection, filter_tags, select
from chaoskit.scenarios._scenario import Scenario
from chaoskit.traces._trace import Trace

__all__ = ["SPOOL_OVER", "run_battery"]

#: past this many episodes the results stream to a temporary JSON Lines file instead of staying in memory
SPOOL_OVER = 100_000


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
    workers: int | None = None,
    executor: str = "thread",
    ray_address: str | None = None,
    ray_runtime_env: dict[str, Any] | None = None,
    results_jsonl: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    shard: tuple[int, int] | None = None,
    episode_seed: int | None = None,
    fail_under: float | None = None,
    baseline: str | os.PathLike[str] | dict[str, Any] | None = None,
    attempt_tolerance: float = 0.0,
    traces: str | os.PathLike[str] | None = None,
    progress: bool | IO[str] = False,
    metrics: bool = False,
    prices: Prices | None = None,
    judge: Callable[[Sequence[EpisodeResult], str], None] | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | Trace | None = None,
    on_miss: str = "error",
) -> BatteryResult:
    """Run a battery and grade it. ``paths`` are scenario files, directories, globs or battery files (or pass
    ``scenarios``, or a ``selection`` from :func:`chaoskit.scenarios._battery_file.select`)::

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

    ``executor`` is ``thread`` (this process; ``workers`` threads, default 1), ``process`` (``workers``
    spawned processes, default the core count) or ``ray`` (a Ray task per episode; ``ray_address`` or
    ``RAY_ADDRESS`` joins a cluster, whose workers get ``ray_runtime_env``). Whatever the executor, the same
    seeds give the same results. ``results_jsonl`` streams every episode to that file as it finishes and keeps
    none in memory (done by itself past :data:`SPOOL_OVER` episodes). Ctrl-C ends the run with the episodes
    that finished: the result is ``partial`` and its verdict fails. ``metrics`` (or a ``prices`` table from
    :func:`chaoskit.metrics.load_prices`) gives every episode its trajectory metrics, failure modes and cost.
    ``judge(episodes, traces_file)`` is called with the finished episodes and the file of their spans before they
    are summarized (``chaoskit run --judge``: it may add a check to an episode); the spans go to a temporary file
    when ``traces`` is not given. ``record`` (a directory) writes each scenario's episode, tool results included,
    to ``<record>/<scenario>.jsonl``; ``replay`` answers every call from those cassettes (or a ``Trace``), the
    plan's faults on top; ``on_miss`` says what a call they cannot answer does (docs/replay.md).
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
        workers=workers if workers is not None else (1 if executor == "thread" else default_workers()),
        executor=executor,
        timeout=timeout,
        agent=agent,
        shard=shard,
        episode_seed=episode_seed,
        fail_under=fail_under,
        attempt_tolerance=attempt_tolerance,
        paths=tuple(str(p) for p in (paths or ())),
        agents=tuple(agents or ()),
        tags=tuple(tuple(g) for g in tags),
        metrics=metrics,
        prices=prices,
        record=None if record is None else os.fspath(record),
        replay=None if replay is None else replay if isinstance(replay, Trace) else os.fspath(replay),
        on_miss=on_miss,
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
    config.battery, config.labels = selection.battery, dict(selection.labels)
    # a battery's own table describes the battery's own agents: with --agent / --agents it does not apply
    implicit = selection.expect if not (agent or agents) else None
    table = _expectations(expect if expect is not None else implicit, selection.all_names)
    config.expect = table.source if table is not None else None
    base = load_baseline(baseline) if baseline is not None and not isinstance(baseline, dict) else baseline
    total = count_episodes(scenarios, config, selection.assigned)
    started = time.perf_counter()
    spans_tmp = None
    if judge is not None and traces is None:
        spans_tmp = tempfile.mkdtemp(prefix="chaoskit-judge-")
        traces = os.path.join(spans_tmp, "spans.jsonl")
    telemetry.get_tracer()
    collector = SpanCollector(keep_other=traces is not None)
    sink = TraceSink(traces)
    if traces is not None and spans_tmp is None:
        # named in the warning about spans an OTLP backend did not get
        telemetry.note_local_copy(traces)
    telemetry.add_processor(collector)
    stream = progress if not isinstance(progress, bool) else None
    bar = Progress(total, stream=stream, enabled=bool(progress), perturbed=any(config.perturbations))
    spool = _Spool(results_jsonl, over=total > SPOOL_OVER)
    merger = SpanMerger(sink)
    partial = False
    try:
        runner = EpisodeRunner(scenarios, config, sink, collector, given, selection.assigned)
        _prepare(runner, scenarios)
        ex = _executor(config, workers, traces, merger, ray_address, ray_runtime_env)

        def done(ep: EpisodePlan, result: EpisodeResult) -> None:
            spool.add(ep.index, result)
            bar.update(result)

        try:
            ex.run(runner, iter_episodes(scenarios, config, selection.assigned), done)
        except KeyboardInterrupt:
            partial = True
        telemetry.flush()
        if collector.other:
            sink.write_spans(collector.other)
    finally:
        bar.close()
        telemetry.remove_processor(collector, shutdown=False)
        merger.close()
        sink.close()
        if traces is not None:
            shutil.rmtree(parts_dir(traces) or "", ignore_errors=True)
    results = spool.results()
    try:
        if judge is not None and traces is not None and not partial:  # after Ctrl-C, no model calls
            judge(results, os.fspath(traces))
    finally:
        if spans_tmp is not None:
            shutil.rmtree(spans_tmp, ignore_errors=True)
    by_command = {sc.name for sc in scenarios if _by_command(runner, sc, selection.assigned)}
    check_trace_tools([sc for sc in scenarios if sc.name in by_command | runner.unverified_tools], results)
    judged = config.to_dict()
    # pass^k past the repetitions that ran means nothing (a partial run of --repeat 10**9 ran a few)
    judged["k"] = min(judged["k"], max(1, len(results)))
    summary, verdict = summarize(results, judged, baseline=base, expectations=table)
    if partial:
        verdict.ok = False
        verdict.reasons.insert(
            0,
            f"partial run: interrupted (Ctrl-C) after {len(results)} of {total} episodes; the figures and the "
            "verdict cover only those (each episode's replay command is in the JSON results)",
        )
    elapsed = time.perf_counter() - started
    return BatteryResult(config.to_dict(), results, summary, verdict, elapsed, partial=partial)


def _expectations(
    expect: str | os.PathLike[str] | Sequence[str] | Expectations | None, names: Sequence[str]
) -> Expectations | None:
    """The expected-outcome table, loaded and checked against every scenario the battery has (before --tags)."""
    if expect is None:
        return None
    table = expect if isinstance(expect, Expectations) else load_expectations(expect)
    table.check_scenarios(names)
    return table


def _by_command(runner: EpisodeRunner, sc: Scenario, assigned: Mapping[str, Sequence[str]]) -> bool:
    return any(isinstance(runner.agents[ref], CommandAgent) for ref in agents_for(sc, runner.config, assigned))


def _executor(
    config: RunConfig,
    workers: int | None,
    traces: str | os.PathLike[str] | None,
    merger: SpanMerger,
    ray_address: str | None,
    ray_runtime_env: dict[str, Any] | None,
) -> Executor:
    if config.executor == "process":
        return ProcessExecutor(config.workers, parts_dir(traces), merger)
    if config.executor == "ray":
        # on a cluster, no --workers means as many episodes at a time as the cluster has CPUs
        return RayExecutor(workers, ray_address, ray_runtime_env, parts_dir(traces), merger)
    return LocalExecutor(config.workers)


def _prepare(runner: EpisodeRunner, scenarios: Sequence[Scenario]) -> None:
    """Before any episode: call each Python factory once (a factory that fails is a usage error, and the call
    tells sync from async agents), then check the tools the in-process scenarios name against those wrapped."""
    for a in runner.agents.values():
        if isinstance(a, PythonAgent):
            try:
                a.probe()
            except AgentError:
                raise
            except Exception as exc:
                raise AgentError(f"--agent {a.ref}: the factory failed: {type(exc).__name__}: {exc}") from None
    in_process = [
        sc
        for sc in scenarios
        if any(isinstance(runner.agents[r], PythonAgent) for r in agents_for(sc, runner.config, runner.assigned))
    ]
    for sc in in_process:
        proxied = [key for key in ("mcp", "http") if getattr(sc, key, None) is not None]
        if proxied:
            # the proxy sits between a separate agent process and its tools; an in-process agent never meets it
            raise AgentError(
                f"{sc.source or sc.name}: {proxied[0]}: needs a command-line agent (a command with {{task}}), "
                "not a module:factory one: the proxy only reaches an agent that runs as its own process"
            )
    # the factories have run, so every tool they wrap is known now
    runner.unverified_tools = {sc.name for sc in check_agent_tools(in_process, _config.config().known_tools)}


class _Spool:
    """The finished episodes: in memory, or (``--jsonl``, or a huge grid) streamed to a JSON Lines file as
    they finish and read back, in grid order, at the end."""

    def __init__(self, path: str | os.PathLike[str] | None, over: bool) -> None:
        self.kept: list[tuple[int, EpisodeResult]] = []
        self.fh: IO[str] | None = None
        self.temp = path is None and over
        if path is not None or over:
            try:
                # open for the whole run
                self.fh = (
                    open(path, "w+", encoding="utf-8")  # noqa: SIM115
                    if path is not None
                    else tempfile.TemporaryFile("w+", encoding="utf-8", prefix="chaoskit-results-")  # noqa: SIM115
                )
            except OSError as exc:
                raise ChaoskitError(f"--jsonl {path}: cannot write: {exc.strerror or exc}") from None

    def add(self, index: int, result: EpisodeResult) -> None:
        if self.fh is None:
            self.kept.append((index, result))
            return
        self.fh.write(json.dumps({"index": index, **result.to_dict()}, separators=(",", ":")) + "\n")
        self.fh.flush()

    def results(self) -> list[EpisodeResult]:
        if self.fh is not None:
            self.fh.seek(0)
            for line in self.fh:
                if line.strip():
                    data = json.loads(line)
                    self.kept.append((int(data["index"]), EpisodeResult.from_dict(data)))
            self.fh.close()
        self.kept.sort(key=lambda pair: pair[0])
        return [r for _, r in self.kept]
