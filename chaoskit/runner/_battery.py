"""The battery entry point, ``run_battery``: scenarios x agents x repetitions x perturbation x fault intensity."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import IO, Unpack

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.runner._agents import AgentError, CommandAgent, PythonAgent
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Executor, LocalExecutor
from chaoskit.runner._executor_process import ProcessExecutor
from chaoskit.runner._executor_ray import RayExecutor
from chaoskit.runner._expect import Expectations, load_expectations
from chaoskit.runner._gate import load_baseline
from chaoskit.runner._grid import (
    EpisodePlan,
    PathLike,
    RunConfig,
    RunOptions,
    agents_for,
    count_episodes,
    iter_episodes,
    run_config,
)
from chaoskit.runner._progress import Progress
from chaoskit.runner._results import BatteryResult, EpisodeResult, Summary, Verdict
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.runner._summary import apply_contracts, summarize
from chaoskit.runner._tools import check_agent_tools, check_trace_tools
from chaoskit.runner._workers import SpanMerger, parts_dir
from chaoskit.scenarios._battery_file import Selection, filter_tags, select
from chaoskit.scenarios._scenario import Scenario

__all__ = ["SPOOL_OVER", "run_battery"]

#: past this many episodes the results stream to a temporary JSON Lines file instead of staying in memory
SPOOL_OVER = 100_000


def run_battery(paths: RunConfig | Sequence[PathLike] | None = None, **options: Unpack[RunOptions]) -> BatteryResult:
    """Run a battery and grade it: ``run_battery(config)`` runs a :class:`RunConfig` (``chaoskit run`` builds
    one from its flags), ``run_battery(paths, **options)`` the config :func:`run_config` builds from them::

        result = chaoskit.run_battery(["examples/scenarios"], agent="examples.plain.agents:careful",
                                      repeat=3, intensities=[0, 0.1, 0.3], seed=1)
        result.verdict.ok, result.summary.overall, result.summary.readiness

    ``paths`` are scenario files, directories, globs or battery files (or pass ``scenarios``, or a
    ``selection`` from :func:`chaoskit.scenarios._battery_file.select`). ``agent`` is a ``module:factory``
    reference, a command line, or (from Python) the factory itself; it overrides everything else. ``agents``
    runs every scenario against each of them (else a battery file's agents, else the scenario's own). ``tags``
    keeps the scenarios having a tag of every group. ``expect`` is an expected-outcome table (a battery file's
    ``expect:`` by default): then the verdict is whether every agent behaved as it says. ``baseline`` is a
    baseline/results file or an already-loaded dict. Every episode runs inside its own ``chaoskit.episode``
    (fresh plan, counters and spans), so episodes never see each other's faults, even with ``workers > 1``.

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
    plan's faults on top; ``on_miss`` says what a call they cannot answer does (docs/replay.md). The tools'
    declared contracts (an irreversible write with no idempotency key, ...) join the readiness table, as
    ``chaoskit run`` shows it (``contracts=False`` leaves them out).
    """
    if isinstance(paths, RunConfig):
        if options:
            raise TypeError(f"run_battery(config) takes no options beside the config, got {', '.join(sorted(options))}")
        config = paths
    else:
        config = run_config(paths, **options)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # so "examples.plain.agents:careful" resolves from the repository root
    selection = _selection(config)
    scenarios = filter_tags(selection.scenarios, config.tags)
    # a battery's own table describes the battery's own agents: with --agent / --agents it does not apply
    implicit = selection.expect if not (config.agent or config.agents) else None
    table = _expectations(config.expect if config.expect is not None else implicit, selection.all_names)
    config = replace(
        config,
        battery=selection.battery,
        labels=dict(selection.labels),
        expect=table.source if table is not None else None,
    )
    total = count_episodes(scenarios, config, selection.assigned)
    started = time.perf_counter()
    results, partial, runner = _run_and_judge(config, scenarios, selection.assigned, total)
    by_command = {sc.name for sc in scenarios if _by_command(runner, sc, selection.assigned)}
    check_trace_tools([sc for sc in scenarios if sc.name in by_command | runner.unverified_tools], results)
    summary, verdict = _grade(config, results, table, total, partial)
    if config.contracts and results:
        _add_contracts(summary, results)
    elapsed = time.perf_counter() - started
    return BatteryResult(config.to_dict(), results, summary, verdict, elapsed, partial=partial)


def _selection(config: RunConfig) -> Selection:
    """The scenarios the config names: given from Python, already selected, or selected from its paths."""
    if config.scenarios is not None:
        return Selection(list(config.scenarios), all_names=[sc.name for sc in config.scenarios])
    if config.selection is not None:
        return config.selection
    if not config.paths:
        raise ChaoskitError("no scenarios: give scenario files, directories or globs")
    return select(config.paths)


def _run_and_judge(
    config: RunConfig, scenarios: Sequence[Scenario], assigned: Mapping[str, Sequence[str]], total: int
) -> tuple[list[EpisodeResult], bool, EpisodeRunner]:
    """Run the episodes, then hand them to the judge (with their spans: in a temporary file when no ``traces``)."""
    traces, spans_tmp = config.traces, None
    if config.judge is not None and traces is None:
        spans_tmp = tempfile.mkdtemp(prefix="chaoskit-judge-")
        traces = os.path.join(spans_tmp, "spans.jsonl")
    try:
        results, partial, runner = _run_episodes(config, scenarios, assigned, total, traces)
        if config.judge is not None and traces is not None and not partial:  # after Ctrl-C, no model calls
            config.judge(results, traces)
    finally:
        if spans_tmp is not None:
            shutil.rmtree(spans_tmp, ignore_errors=True)
    return results, partial, runner


def _run_episodes(
    config: RunConfig,
    scenarios: Sequence[Scenario],
    assigned: Mapping[str, Sequence[str]],
    total: int,
    traces: str | None,
) -> tuple[list[EpisodeResult], bool, EpisodeRunner]:
    """Every episode of the grid on the config's executor, their spans collected (and written to ``traces``);
    ``partial`` when Ctrl-C ended the run."""
    telemetry.get_tracer()
    collector = SpanCollector(keep_other=traces is not None)
    sink = TraceSink(traces)
    if config.traces is not None:
        # named in the warning about spans an OTLP backend did not get
        telemetry.note_local_copy(config.traces)
    telemetry.add_processor(collector)
    stream = config.progress if not isinstance(config.progress, bool) else None
    bar = Progress(total, stream=stream, enabled=bool(config.progress), perturbed=any(config.perturbations))
    spool = _Spool(config.results_jsonl, over=total > SPOOL_OVER)
    merger = SpanMerger(sink)
    given = None if config.agent_factory is None else PythonAgent(config.agent or "", config.agent_factory)
    partial = False
    try:
        runner = EpisodeRunner(scenarios, config, sink, collector, given, assigned)
        _prepare(runner, scenarios)
        ex = _executor(config, traces, merger)

        def done(ep: EpisodePlan, result: EpisodeResult) -> None:
            spool.add(ep.index, result)
            bar.update(result)

        try:
            ex.run(runner, iter_episodes(scenarios, config, assigned), done)
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
    return spool.results(), partial, runner


def _grade(
    config: RunConfig, results: list[EpisodeResult], table: Expectations | None, total: int, partial: bool
) -> tuple[Summary, Verdict]:
    """The summary and the CI verdict of the finished episodes (a partial run's verdict fails)."""
    base = config.baseline
    if base is not None and not isinstance(base, dict):
        base = load_baseline(base)
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
    return summary, verdict


def _add_contracts(summary: Summary, results: Sequence[EpisodeResult]) -> None:
    """The tools' declarations (an irreversible write without an idempotency key, ...) join the readiness table;
    they are extras, so nothing in reading them may fail or lose the finished run."""
    from chaoskit.suggest._suggest import declared_for  # only a finished run reads its agents' tools again

    try:
        declared = declared_for(sorted({e.agent for e in results}), warn=_warn)
        apply_contracts(summary, results, declared)
    except Exception as exc:
        _warn(f"the tool-contract findings are left out: {type(exc).__name__}: {exc}")


def _warn(message: str) -> None:
    print(f"chaoskit: warning: {message}", file=sys.stderr)


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


def _executor(config: RunConfig, traces: str | None, merger: SpanMerger) -> Executor:
    if config.executor == "process":
        return ProcessExecutor(config.worker_count, parts_dir(traces), merger)
    if config.executor == "ray":
        # on a cluster, no --workers means as many episodes at a time as the cluster has CPUs
        return RayExecutor(config.workers, config.ray_address, config.ray_runtime_env, parts_dir(traces), merger)
    return LocalExecutor(config.worker_count)


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
