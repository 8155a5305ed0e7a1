"""Running one episode (in process, or as a command line), collecting its spans, and grading it."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.engine._episode import Episode
from chaoskit.grading._evaluation import add_evaluation_events
from chaoskit.plan._model import Plan
from chaoskit.replay import episode
from chaoskit.runner._agents import CommandAgent, PythonAgent, resolve_agent
from chaoskit.runner._grade_episode import (
    episode_passed,
    grade_or_refuse,
    run_oracle,
    snapshot,
    task_criteria,
    wants_initial,
)
from chaoskit.runner._grid import EpisodePlan, RunConfig, agents_for
from chaoskit.runner._intensity import with_background
from chaoskit.runner._metrics import run_metrics
from chaoskit.runner._proxies import tool_proxies
from chaoskit.runner._results import EpisodeResult
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.runner._spawn import spawn
from chaoskit.scenarios._battery_file import ALL_AGENTS
from chaoskit.scenarios._scenario import Scenario
from chaoskit.semconv import (
    EPISODE_PREFIX,
    EPISODE_SCORE,
    EPISODE_SUCCESS,
    EPISODE_VERDICT,
    RUN_KEY,
    RUN_OUTCOME,
    RUN_PREFIX,
    SCENARIO,
    SPAN_RUN_EPISODE,
    VERDICT_FAIL,
    VERDICT_PASS,
)
from chaoskit.traces._records import EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["EpisodeRunner", "episode_facts", "replay_command"]


def agent_name(agent: Any, ref: str) -> str:
    """The application's name for the agent the runner built (``gen_ai.agent.name``): its own ``name`` (a
    LangGraph graph's, ``create_agent(name=...)``), else the factory's name in its ref (``module:factory``)."""
    name = getattr(agent, "name", None)
    # LangGraph names every graph compiled without a name "LangGraph": no application's name
    if isinstance(name, str) and name.strip() and name != "LangGraph":
        return name
    return ref.rsplit(":", 1)[-1] or ref


def episode_facts(ep: EpisodePlan) -> dict[str, Any]:
    """What an episode's result records about where it stands, whatever became of it: its scenario (with the
    scenario's tags, its ``domain:X`` tag's value and its fault types), grid point, seed and task."""
    sc = ep.scenario
    domain = next((t.partition(":")[2] for t in sc.tags if t.startswith("domain:")), None)
    return {
        "scenario": sc.name,
        "source": sc.source,
        "repetition": ep.repetition,
        "epsilon": ep.epsilon,
        "intensity": ep.intensity,
        "seed": ep.seed,
        "task": ep.perturbation.text,
        "edits": list(ep.perturbation.edits),
        "tags": list(sc.tags),
        "domain": domain or None,
        "faults": sorted({f.type for f in sc.faults}),
    }


def replay_command(ep: EpisodePlan, agent: PythonAgent | CommandAgent, config: RunConfig) -> str:
    """The command that runs exactly this episode again: same scenario file, agent, grid point, profile and
    seed (and, for a command-line agent, the same timeout). The agent is named unless it is the scenario's own."""
    parts = ["chaoskit", "run", ep.scenario.source or ep.scenario.name]
    if config.agent is not None or agent.ref != ep.scenario.agent:
        parts += ["--agent", agent.ref]
    parts += ["--intensity", f"{ep.intensity:g}", "--perturb", f"{ep.epsilon:g}"]
    if ep.intensity > 0:
        # a profile read from a file is named by that file: its name alone would not load it again
        parts += ["--profile", config.profile.source or config.profile.name]
    if isinstance(agent, CommandAgent) and ep.scenario.timeout is None and config.timeout != 60.0:
        parts += ["--timeout", f"{config.timeout:g}"]
    parts += ["--episode-seed", str(ep.seed)]
    return " ".join(shlex.quote(p) for p in parts)


def _trace_of(spans: Sequence[ReadableSpan]) -> tuple[Trace | None, str | None]:
    try:
        return Trace.from_spans(spans), None
    except ChaoskitError as exc:
        return None, str(exc)


class EpisodeRunner:
    """Runs the episodes of one battery, each in its own ``chaoskit.episode``, and grades each one.

    Safe to call from several threads (or tasks) at once: every episode has its own plan, spans and result."""

    def __init__(
        self,
        scenarios: Sequence[Scenario],
        config: RunConfig,
        traces: TraceSink,
        collector: SpanCollector,
        given: PythonAgent | None = None,
        assigned: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.config = config
        #: what a worker process needs to build this runner again (see ``chaoskit.runner._workers``)
        self.scenarios = list(scenarios)
        self.assigned = dict(assigned or {})
        self.given = given
        self.traces = traces
        self.collector = collector
        #: scenarios naming a tool no wrapper knew after the factories ran: checked from their traces instead
        self.unverified_tools: set[str] = set()
        self.agents: dict[str, PythonAgent | CommandAgent] = {given.ref: given} if given is not None else {}
        self.oracles: dict[str, Callable[..., Any] | None] = {}
        #: scenarios whose oracle takes (initial, final): their env is copied before the task
        self.two_state: set[str] = set()
        for sc in scenarios:
            for ref in agents_for(sc, config, assigned):
                if ref not in self.agents:
                    self.agents[ref] = resolve_agent(ref)
            oracle = sc.oracle()
            self.oracles[sc.name] = oracle
            if oracle is not None and wants_initial(oracle):
                self.two_state.add(sc.name)

    def agent_for(self, ep: EpisodePlan) -> PythonAgent | CommandAgent:
        """The agent that runs ``ep``."""
        return self.agents[ep.agent]

    def is_async(self, ep: EpisodePlan) -> bool:
        """Whether ``ep`` must run on an event loop (its agent is an async Python agent)."""
        return bool(self.agent_for(ep).is_async)

    def plan_for(self, ep: EpisodePlan) -> Plan:
        """The scenario's fault plan at this episode's seed, with the background faults of its intensity."""
        return with_background(ep.scenario.plan(seed=ep.seed), ep.intensity, self.config.profile, seed=ep.seed)

    def _episode(self, ep: EpisodePlan) -> Episode:
        # with --record / --replay, the episode writes its cassette or is answered from one (chaoskit.replay)
        cfg = self.config
        name = ep.scenario.name
        # a recording is the fault-free run: a faulted call's real answer is not on its span, so it could not be
        # replayed (the faults come back on top of the replay)
        plan = self.plan_for(ep) if cfg.record is None else Plan(faults=[], seed=ep.seed)
        return episode(name, plan, record=cfg.record, replay=cfg.replay, on_miss=cfg.on_miss, **self._attrs(ep))

    def _attrs(self, ep: EpisodePlan) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            # the task the agent was given: checks read it as backing for the values the agent repeats
            "task": ep.perturbation.text,
            "repetition": ep.repetition,
            "intensity": ep.intensity,
            "perturbation": ep.epsilon,
            "seed": ep.seed,
            "profile": self.config.profile.name,
            "agent": ep.agent,  # chaoskit.episode.agent
        }
        if ep.scenario.success.required_tools is not None:
            attrs["required_tools"] = list(ep.scenario.success.required_tools)
        return attrs

    def _finish(
        self,
        ep: EpisodePlan,
        agent: PythonAgent | CommandAgent,
        *,
        spans: Sequence[ReadableSpan],
        trace: Trace | None,
        criteria: list[dict[str, Any]],
        oracle: dict[str, Any] | None,
        output: str | None,
        outcome: str,
        error: str | None,
        started: float,
        trace_id: str | None,
        episode_id: str | None,
        read_error: str | None = None,
        graded: Callable[[bool, float, list[dict[str, Any]]], Sequence[ReadableSpan]] | None = None,
        lines: Sequence[str] | None = None,
    ) -> EpisodeResult:
        checks, score, summary = grade_or_refuse(ep.scenario, trace, criteria, read_error)
        if self.oracles.get(ep.scenario.name) is not None and oracle is None and isinstance(agent, CommandAgent):
            checks.append(
                {
                    "name": "end_state",
                    "passed": False,
                    "severity": "warn",
                    "evidence": [],
                    "message": "not checked: a command-line agent has no environment object to inspect",
                }
            )
        passed = episode_passed(checks)
        if graded is not None:  # in-process: the root span takes the verdict and ends; the file gets it
            spans = [*spans, *graded(passed, score, checks)]
        self.traces.write_spans(spans)
        return EpisodeResult(
            **episode_facts(ep),
            agent=agent.ref,
            outcome=outcome,
            error=error,
            output=output,
            duration_s=round(time.perf_counter() - started, 4),
            attempts=summary,
            checks=checks,
            score=score,
            oracle=oracle,
            base_passed=passed,
            passed=passed,
            replay=replay_command(ep, agent, self.config),
            trace_id=trace_id,
            episode_id=episode_id,
            metrics=run_metrics(self.config, self.plan_for, ep, spans, trace, lines, checks, passed),
            model=self._label(agent, "model"),
            architecture=self._label(agent, "architecture"),
        )

    def _label(self, agent: PythonAgent | CommandAgent, axis: str) -> str | None:
        """The episode's model or architecture: ``--label-*`` (labels of every agent, key ``*``), else the
        battery file's label of the agent, else the agent's own."""
        for source in (self.config.labels.get(ALL_AGENTS, {}), self.config.labels.get(agent.ref, {})):
            if source.get(axis) is not None:
                return source[axis]
        declared: dict[str, str] = getattr(agent, "declared", {})
        return declared.get(axis)

    # -- in-process ----------------------------------------------------------------------------------------

    def _initial(self, ep: EpisodePlan, made: tuple[Any, Any]) -> Any:
        """A deep copy of the env before the task, for an oracle of (initial, final); else None."""
        return snapshot(made[1]) if ep.scenario.name in self.two_state else None

    def _run_body(
        self,
        ep: EpisodePlan,
        episode: Episode,
        made: tuple[Any, Any] | None,
        output: Any,
        exc: BaseException | None,
        initial: Any = None,
    ) -> dict[str, Any] | None:
        """The end of an in-process episode, still inside it: record a crash (keeping an integration's more
        detailed reason), run the end-state oracle, and put the task's success on the root span, so that the
        exported trace grades as the runner grades it."""
        if exc is not None:
            if episode.outcome is None:
                episode.crash(exc)
        else:
            episode.finish(output)
        env = made[1] if made is not None else None
        # a replayed episode never touched the backend (the recording answered): its state says nothing
        replayed = self.config.replay is not None
        oracle = (
            run_oracle(self.oracles.get(ep.scenario.name), env, initial) if env is not None and not replayed else None
        )
        text = None if episode.output is None else str(episode.output)
        criteria = task_criteria(
            ep.scenario, output=text, outcome=episode.outcome or "completed", error=None, oracle=oracle
        )
        episode.set_attribute(EPISODE_SUCCESS, all(c["passed"] for c in criteria))
        return oracle

    def run_sync(self, ep: EpisodePlan) -> EpisodeResult:
        """Run one episode of a sync Python agent or a command-line agent, and grade it."""
        agent = self.agent_for(ep)
        if isinstance(agent, CommandAgent):
            return self.run_command(ep, agent)
        started = time.perf_counter()
        episode = self._episode(ep)
        made: tuple[Any, Any] | None = None
        with episode:
            episode.keep_open()  # graded before its root span ends, so that the span carries the verdict
            output: Any = None
            error: BaseException | None = None
            initial: Any = None
            try:
                made = agent.make()
                episode.identify(agent_name=agent_name(made[0], ep.agent))
                initial = self._initial(ep, made)
                output = agent.invoke(made[0], ep.perturbation.text)
            except Exception as exc:
                error = exc
            oracle = self._run_body(ep, episode, made, output, error, initial)
        return self._after_inprocess(ep, agent, episode, oracle, started)

    async def run_async(self, ep: EpisodePlan) -> EpisodeResult:
        """Run one episode of an async Python agent, and grade it."""
        agent = self.agent_for(ep)
        assert isinstance(agent, PythonAgent)
        started = time.perf_counter()
        episode = self._episode(ep)
        made: tuple[Any, Any] | None = None
        async with episode:
            episode.keep_open()  # as in run_sync
            output: Any = None
            error: BaseException | None = None
            initial: Any = None
            try:
                made = agent.make()
                episode.identify(agent_name=agent_name(made[0], ep.agent))
                initial = self._initial(ep, made)
                output = await agent.ainvoke(made[0], ep.perturbation.text)
            except Exception as exc:
                error = exc
            oracle = self._run_body(ep, episode, made, output, error, initial)
        return self._after_inprocess(ep, agent, episode, oracle, started)

    def _after_inprocess(
        self, ep: EpisodePlan, agent: PythonAgent, episode: Episode, oracle: dict[str, Any] | None, started: float
    ) -> EpisodeResult:
        # the attempts have ended; the root span is still open (keep_open): graded as it stands, then closed
        try:
            spans = self.collector.pop(episode.id)
            root = episode.snapshot()
            trace, read_error = _trace_of([*spans, root] if root is not None else spans)
            err = None
            if episode.error is not None:
                err = f"{type(episode.error).__name__}: {episode.error}"
                recorded = trace.episodes[0].error if trace is not None and trace.episodes else None
                if recorded and not recorded.startswith("agent crashed: "):
                    err = recorded  # an integration's own reason (which node, which setting) says more
            out = episode.output if episode.output is None else str(episode.output)
            outcome = episode.outcome or "completed"
            criteria = task_criteria(ep.scenario, output=out, outcome=outcome, error=err, oracle=oracle)
            return self._finish(
                ep,
                agent,
                spans=spans,
                trace=trace,
                criteria=criteria,
                oracle=oracle,
                output=out,
                outcome=outcome,
                error=err,
                started=started,
                trace_id=episode.trace_id,
                episode_id=episode.id,
                read_error=read_error,
                graded=lambda passed, score, checks: self._close(episode, passed, score, checks),
            )
        finally:
            episode.close()  # a no-op once graded; ends the root span if grading failed

    def _close(self, episode: Episode, passed: bool, score: float, checks: list[dict[str, Any]]) -> list[ReadableSpan]:
        """Put the verdict, and one ``gen_ai.evaluation.result`` event per check, on an in-process episode's
        root span, end it, and take the ended span back."""
        if episode.span is not None:
            add_evaluation_events(episode.span, checks)
        episode.close(**{EPISODE_VERDICT: VERDICT_PASS if passed else VERDICT_FAIL, EPISODE_SCORE: score})
        return self.collector.pop(episode.id)

    # -- command line ---------------------------------------------------------------------------------------

    def _spawn_under(
        self, span: otel_trace.Span, ep: EpisodePlan, agent: CommandAgent, plan: Plan, tmp: Path, traces_path: Path
    ) -> tuple[str, str | None, str | None, str]:
        """Run the agent's process with ``span`` current (its trace context passed on): outcome, output, error
        and the trace id."""
        plan_path = tmp / "plan.yaml"
        timeout = ep.scenario.timeout or self.config.timeout
        with otel_trace.use_span(span, end_on_exit=False):
            carrier: dict[str, str] = {}
            TraceContextTextMapPropagator().inject(carrier)
            env = dict(os.environ)
            env.pop("CHAOSKIT_DISABLE", None)
            env.update(
                {
                    "CHAOSKIT_PLAN": str(plan_path),
                    "CHAOSKIT_TRACES_FILE": str(traces_path),
                    "CHAOSKIT_SCENARIO": ep.scenario.name,
                    "CHAOSKIT_EPISODE_SEED": str(ep.seed),
                    "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p),
                }
            )
            if "traceparent" in carrier:
                env["TRACEPARENT"] = carrier["traceparent"]
            # a scenario's out-of-process tools (mcp:) get their proxy; the agent finds it in its env
            with tool_proxies(ep.scenario, plan, tmp, traces_path) as proxy_env:
                env.update(proxy_env)
                outcome, output, error = spawn(agent.command(ep.perturbation.text), env, timeout)
            span.set_attribute(RUN_OUTCOME, outcome)
            return outcome, output, error, f"{span.get_span_context().trace_id:032x}"

    def _close_run(self, span: otel_trace.Span, key: str, checks: list[dict[str, Any]]) -> list[ReadableSpan]:
        """Put the grades on a command-line episode's ``run_episode`` span (its root span's parent), end it."""
        add_evaluation_events(span, checks)
        span.end()
        return self.collector.pop(key)

    def run_command(self, ep: EpisodePlan, agent: CommandAgent) -> EpisodeResult:
        """Run one episode of a command-line agent in a child process, and grade the spans it wrote."""
        started = time.perf_counter()
        plan = self.plan_for(ep)
        key = f"run-{ep.index}-{os.getpid()}-{id(ep)}"
        attrs = {f"{RUN_PREFIX}{k}": v for k, v in self._attrs(ep).items() if isinstance(v, bool | int | float | str)}
        # ended once graded, taking the grades as an in-process root span does (or, if anything fails, without)
        span = telemetry.get_tracer().start_span(
            f"{SPAN_RUN_EPISODE} {ep.scenario.name}", attributes={**attrs, RUN_KEY: key, SCENARIO: ep.scenario.name}
        )
        try:
            with tempfile.TemporaryDirectory(prefix="chaoskit-ep-") as tmp:
                plan_path = Path(tmp) / "plan.yaml"
                plan_path.write_text(yaml.safe_dump(plan.to_dict(), sort_keys=False), encoding="utf-8")
                traces_path = Path(tmp) / "spans.jsonl"
                outcome, output, error, trace_id = self._spawn_under(span, ep, agent, plan, Path(tmp), traces_path)
                lines = traces_path.read_text(encoding="utf-8").splitlines() if traces_path.exists() else []
            self.traces.write_lines(lines)
            criteria = task_criteria(ep.scenario, output=output, outcome=outcome, error=error, oracle=None)
            trace, read_error = self._command_trace(lines, ep, output, outcome, error, criteria)
            episode_id = trace.episodes[0].id if trace is not None and trace.episodes else None
            return self._finish(
                ep,
                agent,
                spans=[],
                trace=trace,
                criteria=criteria,
                oracle=None,
                output=output,
                outcome=outcome,
                error=error,
                started=started,
                trace_id=trace_id,
                episode_id=episode_id,
                read_error=read_error,
                graded=lambda _passed, _score, checks: self._close_run(span, key, checks),
                lines=lines,
            )
        finally:
            if span.is_recording():
                span.end()

    def _command_trace(
        self,
        lines: list[str],
        ep: EpisodePlan,
        output: str | None,
        outcome: str,
        error: str | None,
        criteria: list[dict[str, Any]],
    ) -> tuple[Trace | None, str | None]:
        objs = []
        for ln in lines:
            try:
                objs.append(json.loads(ln))
            except ValueError:
                continue  # a line cut short by a killed process
        try:
            trace = Trace.from_otlp_json(objs) if objs else Trace([])
        except ChaoskitError as exc:
            return None, str(exc)
        # the runner's view wins: the output is what the child printed, the outcome how it ended
        attempts = tuple(a for e in trace.episodes for a in e.attempts)
        base = trace.episodes[0] if trace.episodes else None
        attributes = dict(base.attributes) if base else {}
        attributes.update({f"{EPISODE_PREFIX}{k}": v for k, v in self._attrs(ep).items()})
        attributes[EPISODE_SUCCESS] = all(c["passed"] for c in criteria)
        rec = EpisodeRecord(
            id=base.id if base else None,
            name=ep.scenario.name,
            output=output,
            outcome=outcome if outcome != "completed" else (base.outcome if base and base.outcome else outcome),
            error=error or (base.error if base else None),
            trace_id=base.trace_id if base else None,
            span_id=base.span_id if base else None,
            start_time=base.start_time if base else None,
            end_time=base.end_time if base else None,
            attributes=attributes,
            attempts=tuple(sorted(attempts, key=lambda a: (a.start_time, a.attempt, a.span_id))),
        )
        return Trace([rec]), None
