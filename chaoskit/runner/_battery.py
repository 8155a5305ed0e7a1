"""The battery runner behind ``chaoskit run``: scenarios x repetitions x perturbation x fault intensity.

Usable as a library::

    result = chaoskit.run_battery(["examples/scenarios"], agent="examples.plain.agents:careful",
                                  repeat=3, intensities=[0, 0.1, 0.3], seed=1)
    result.verdict.ok, result.summary.overall

Every episode runs inside its own ``chaoskit.episode`` (fresh plan, counters and spans), so episodes never
see each other's faults, even with ``workers > 1``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import hashlib
import inspect
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml
from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.engine._episode import Episode
from chaoskit.grading._score import score
from chaoskit.grading._trace import EpisodeRecord, Trace
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, CheckResult, run_checks
from chaoskit.plan._model import _line_for, _suggest
from chaoskit.plan._yaml import load_yaml
from chaoskit.runner._intensity import Profile, load_profile, with_background
from chaoskit.runner._perturb import Perturbation, perturb
from chaoskit.runner._scenario import Scenario, _is_ref, load_battery, resolve_ref

__all__ = ["BatteryResult", "EpisodeResult", "RunConfig", "derive_seed", "plan_episodes", "run_battery"]

# --- configuration and per-episode records ------------------------------------------------------------

@dataclass
class RunConfig:
    """Everything that decides which episodes run and how they are judged."""

    seed: int = 0
    repeat: int = 1
    k: int | None = None
    intensities: tuple[float, ...] = (0.0,)
    perturbations: tuple[float, ...] = (0.0,)
    profile: Profile = field(default_factory=lambda: load_profile("medium"))
    theta: float = 0.9
    workers: int = 1
    timeout: float = 60.0
    agent: str | None = None
    shard: tuple[int, int] | None = None
    episode_seed: int | None = None
    fail_under: float | None = None
    attempt_tolerance: float = 0.0
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ChaoskitError(f"--repeat must be >= 1, got {self.repeat}")
        if self.k is not None and not 1 <= self.k <= self.repeat:
            raise ChaoskitError(f"--k must be from 1 to --repeat ({self.repeat}), got {self.k}")
        for name, values in (("intensity", self.intensities), ("perturb", self.perturbations)):
            if not values:
                raise ChaoskitError(f"--{name} needs at least one value")
            for v in values:
                if not 0.0 <= v <= 1.0:
                    raise ChaoskitError(f"--{name} values must be from 0 to 1, got {v:g}")
        if self.perturbations and any(e > 0 for e in self.perturbations) and 0.0 not in self.perturbations:
            # the metamorphic relation compares each perturbed episode with the unperturbed one
            self.perturbations = (0.0, *self.perturbations)
        if self.workers < 1:
            raise ChaoskitError(f"--workers must be >= 1, got {self.workers}")
        if self.shard is not None:
            i, n = self.shard
            if not (n >= 1 and 1 <= i <= n):
                raise ChaoskitError(f"--shard must be i/n with 1 <= i <= n, got {i}/{n}")
        if not 0.0 < self.theta <= 1.0:
            raise ChaoskitError(f"--theta must be in (0, 1], got {self.theta}")
        if not self.timeout > 0:
            raise ChaoskitError(f"--timeout must be a number of seconds > 0, got {self.timeout:g}")
        _check_gate(self.fail_under, self.attempt_tolerance)

    @property
    def k_eff(self) -> int:
        return self.k or self.repeat

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "repeat": self.repeat, "k": self.k_eff, "intensities": list(self.intensities),
            "perturbations": list(self.perturbations), "profile": self.profile.to_dict(), "theta": self.theta,
            "workers": self.workers, "timeout": self.timeout, "agent": self.agent,
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "episode_seed": self.episode_seed, "fail_under": self.fail_under,
            "attempt_tolerance": self.attempt_tolerance, "paths": list(self.paths),
        }


def _check_gate(fail_under: float | None, attempt_tolerance: float | None) -> None:
    """The gate options of ``chaoskit run`` and ``chaoskit merge``: a value that can never be met is a typo."""
    if fail_under is not None and not 0.0 <= fail_under <= 100.0:
        raise ChaoskitError(f"--fail-under must be a score from 0 to 100, got {fail_under:g}")
    if attempt_tolerance is not None and not attempt_tolerance >= 0.0:
        raise ChaoskitError(f"--attempt-tolerance must be a fraction >= 0 (0.1 allows a 10% rise), "
                            f"got {attempt_tolerance:g}")


@dataclass
class EpisodeResult:
    """One graded episode, as written to ``--json`` (``to_dict``) and read back by ``chaoskit merge``."""

    scenario: str
    source: str | None
    repetition: int
    epsilon: float
    intensity: float
    seed: int
    task: str
    edits: list[str]
    agent: str
    outcome: str
    error: str | None
    output: str | None
    duration_s: float
    attempts: dict[str, Any]
    checks: list[dict[str, Any]]
    score: float
    oracle: dict[str, Any] | None
    base_passed: bool
    passed: bool
    replay: str
    trace_id: str | None = None
    episode_id: str | None = None

    @property
    def key(self) -> tuple[str, int, float, float]:
        return (self.scenario, self.repetition, self.epsilon, self.intensity)

    def failed_checks(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c["passed"] and c.get("severity", "fail") == "fail"]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class EpisodePlan:
    """One episode to run: which scenario, at which point of the grid, with which seed and task text."""

    index: int
    scenario: Scenario
    repetition: int
    epsilon: float
    intensity: float
    seed: int
    perturbation: Perturbation


def derive_seed(run_seed: int, scenario: str, repetition: int, salt: int = 0) -> int:
    """The episode seed: fixed by (run seed, scenario name, repetition, the scenario's own ``seed``), the same
    for every epsilon and lambda (common random numbers: a higher intensity moves the draws' thresholds, not
    the draws)."""
    text = f"{run_seed}\x1f{scenario}\x1f{repetition}" + (f"\x1f{salt}" if salt else "")
    digest = hashlib.blake2b(text.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def plan_episodes(scenarios: Sequence[Scenario], config: RunConfig) -> list[EpisodePlan]:
    """The grid, in a fixed order, cut to this shard. Shards split whole (scenario, repetition) units, so every
    epsilon of a unit (and so its metamorphic baseline) stays in one shard."""
    out: list[EpisodePlan] = []
    unit = 0
    reps = [0] if config.episode_seed is not None else range(config.repeat)
    for sc in scenarios:
        for rep in reps:
            u = unit
            unit += 1
            if config.shard is not None and u % config.shard[1] != config.shard[0] - 1:
                continue
            seed = (config.episode_seed if config.episode_seed is not None
                    else derive_seed(config.seed, sc.name, rep, sc.seed))
            for lam in config.intensities:
                for eps in config.perturbations:
                    out.append(EpisodePlan(len(out), sc, rep, eps, lam, seed, perturb(sc.task, eps, seed)))
    return out


# --- agents ------------------------------------------------------------------------------------------

class AgentError(ChaoskitError):
    """The agent could not be set up (bad reference, factory failed before any episode)."""


def _text_of(result: Any) -> str:
    """The final text of an agent's answer: a string, a message, or the last message of a messages state."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        if result.get("messages"):
            return _text_of(result["messages"][-1])
        for key in ("output", "content", "answer"):
            if key in result:
                return _text_of(result[key])
    content = getattr(result, "content", None)
    if content is not None:
        if isinstance(content, list):
            return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
        return str(content)
    if isinstance(result, tuple) and len(result) == 2 and result[0] in ("ai", "assistant"):
        return str(result[1])
    return str(result)


def _input_for(agent: Any, task: str) -> Any:
    module = type(agent).__module__ or ""
    if module.startswith("langgraph"):
        return {"messages": [{"role": "user", "content": task}]}
    return task


def _is_async(agent: Any) -> bool:
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
        return True
    return hasattr(agent, "ainvoke") and not hasattr(agent, "invoke")


def _unpack(made: Any) -> tuple[Any, Any]:
    """A factory returns the agent, or ``(agent, env)``; without an explicit env, ``agent.env`` or the agent."""
    if isinstance(made, tuple) and len(made) == 2:
        return made[0], made[1]
    return made, getattr(made, "env", made)


class PythonAgent:
    """``module:attr``: a factory called fresh for each episode."""

    kind = "python"

    def __init__(self, ref: str, factory: Callable[[], Any]) -> None:
        self.ref = ref
        self.factory = factory
        self._probe: Any = None
        self._probe_lock = threading.Lock()
        self.is_async = False

    def probe(self) -> None:
        """Call the factory once to see whether the agent is sync or async; that instance serves one episode."""
        made = self.factory()
        agent, _env = _unpack(made)
        if not (callable(agent) or hasattr(agent, "invoke") or hasattr(agent, "ainvoke")):
            # every episode would crash the same way: a usage error, not a finding about the agent
            raise AgentError(f"--agent {self.ref}: the factory returned {type(agent).__name__}, which is not "
                             "callable and has no invoke() or ainvoke(); return the agent, or (agent, env)")
        self.is_async = _is_async(agent)
        self._probe = made

    def make(self) -> tuple[Any, Any]:
        with self._probe_lock:
            made, self._probe = self._probe, None
        if made is None:
            made = self.factory()
        return _unpack(made)

    def invoke(self, agent: Any, task: str) -> str:
        if hasattr(agent, "invoke"):
            return _text_of(agent.invoke(_input_for(agent, task)))
        if callable(agent):
            return _text_of(agent(task))
        raise TypeError(f"{self.ref} made a {type(agent).__name__}, which is not callable and has no invoke()")

    async def ainvoke(self, agent: Any, task: str) -> str:
        if hasattr(agent, "ainvoke"):
            return _text_of(await agent.ainvoke(_input_for(agent, task)))
        if callable(agent):
            out = agent(task)
            if inspect.isawaitable(out):
                out = await out
            return _text_of(out)
        raise TypeError(f"{self.ref} made a {type(agent).__name__}, which is not callable and has no ainvoke()")


class CommandAgent:
    """A command line run once per episode; ``{task}`` in it is replaced by the (perturbed) task text."""

    kind = "command"
    is_async = False

    def __init__(self, template: str) -> None:
        self.ref = template
        try:
            self.argv = shlex.split(template)
        except ValueError as exc:
            raise AgentError(f"cannot parse the agent command line {template!r}: {exc}") from None
        if not self.argv:
            raise AgentError("the agent command line is empty")

    def command(self, task: str) -> list[str]:
        argv = [a.replace("{task}", task) for a in self.argv]
        if not any("{task}" in a for a in self.argv):
            argv.append(task)
        return argv


def resolve_agent(ref: str) -> PythonAgent | CommandAgent:
    """``module:attr`` (an importable factory) or a command line."""
    if _is_ref(ref):
        try:
            factory = resolve_ref(ref, source="--agent")
        except PlanError as exc:
            raise AgentError(str(exc)) from None
        if not callable(factory):
            raise AgentError(f"--agent {ref}: not callable")
        return PythonAgent(ref, factory)
    return CommandAgent(ref)


# --- span collection -----------------------------------------------------------------------------------

class _Collector(SpanProcessor):
    """Buckets finished spans by episode (``chaoskit.episode.id`` or the runner's ``chaoskit.run.key``)."""

    def __init__(self, keep_other: bool) -> None:
        self._lock = threading.Lock()
        self.by_key: dict[str, list[ReadableSpan]] = {}
        self.other: list[ReadableSpan] = []
        self.keep_other = keep_other

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        attrs = span.attributes or {}
        key = attrs.get("chaoskit.episode.id") or attrs.get("chaoskit.run.key")
        with self._lock:
            if isinstance(key, str):
                self.by_key.setdefault(key, []).append(span)
            elif self.keep_other:
                self.other.append(span)

    def pop(self, *keys: str | None) -> list[ReadableSpan]:
        out: list[ReadableSpan] = []
        with self._lock:
            for k in keys:
                if k is not None:
                    out.extend(self.by_key.pop(k, ()))
        return out

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _TraceSink:
    """``--traces out.jsonl``: one OTLP-JSON line per episode."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("w", encoding="utf-8")
            except OSError as exc:
                raise ChaoskitError(f"--traces {self.path}: cannot write: {exc.strerror or exc}") from None

    def write_spans(self, spans: Sequence[ReadableSpan]) -> None:
        if self._fh is None or not spans:
            return
        line = json.dumps(telemetry.to_otlp_json(spans), separators=(",", ":"))
        with self._lock:
            self._fh.write(line + "\n")

    def write_lines(self, lines: Iterable[str]) -> None:
        if self._fh is None:
            return
        with self._lock:
            for line in lines:
                if line.strip():
                    self._fh.write(line.rstrip("\n") + "\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


# --- grading ---------------------------------------------------------------------------------------------

def _criterion(name: str, passed: bool, message: str) -> dict[str, Any]:
    return {"name": name, "passed": passed, "severity": "pass" if passed else "fail", "message": message,
            "evidence": []}


def task_criteria(scenario: Scenario, *, output: str | None, outcome: str, error: str | None,
                  oracle: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The scenario's own success criteria (how the run ended, its output, its end state): together they are
    the ``success`` that the checks and the score are given. They judge the task, not the recovery."""
    s = scenario.success
    out: list[dict[str, Any]] = []
    if outcome == "completed":
        out.append(_criterion("outcome", True, "the agent finished"))
    else:
        verb = {"timeout": "timed out", "crashed": "crashed"}.get(outcome, f"ended as {outcome!r}")
        # an integration's own reason ("agent crashed on a tool error: ...") already says what happened
        detail = error if error and error.startswith("agent ") else (f"the agent {verb}: {error}" if error
                                                                     else f"the agent {verb}")
        out.append(_criterion("outcome", False, detail))
    text = (output or "").lower()
    for needle in s.output_contains:
        ok = needle.lower() in text
        out.append(_criterion("output_contains", ok, f"output {'contains' if ok else 'lacks'} {needle!r}"))
    for needle in s.output_not_contains:
        ok = needle.lower() not in text
        out.append(_criterion("output_not_contains", ok,
                              f"output {'does not contain' if ok else 'contains'} {needle!r}"))
    if oracle is not None:
        if oracle.get("error"):
            msg = f"{s.state} raised {oracle['error']} while checking the end state"
        elif oracle["ok"]:
            msg = f"{s.state} verified the end state"
        else:
            msg = f"{s.state} rejected the end state"
        out.append(_criterion("end_state", bool(oracle["ok"]), msg))
    return out


def _run_check(trace: Trace, name: str, params: dict[str, Any], required: list[str] | None,
               success: bool) -> list[CheckResult]:
    try:
        if params:
            # run_checks forwards only its shared parameters (n, required_tools, success); a scenario's own
            # parameters (min_backoff, ...) must reach the check, or it would grade with other settings
            return [REGISTRY[name](trace, **params)]
        return run_checks(trace, [name], required_tools=required, success=success)
    except Exception as exc:  # a check that breaks is a failed check, never a pass and never a runner crash
        return [CheckResult(name, False, "fail", f"check raised {type(exc).__name__}: {exc}")]


def grade(scenario: Scenario, trace: Trace, criteria: Sequence[dict[str, Any]]) -> tuple[
        list[dict[str, Any]], float, dict[str, Any]]:
    """Grade one episode's trace: the scenario's checks through :func:`chaoskit.grading.checks.run_checks`, the score
    through :func:`chaoskit.score`, with ``criteria`` (from :func:`task_criteria`) as the task's success.
    Returns (criteria and check results as dicts, score, attempt summary)."""
    s = scenario.success
    success = all(c["passed"] for c in criteria)
    required = list(s.required_tools) if s.required_tools is not None else None
    results: list[CheckResult] = []
    limits = {n: v for n, v in (("max_attempts", s.max_attempts), ("min_attempts", s.min_attempts)) if v}
    if limits:
        results.extend(run_checks(trace, list(limits), **limits))
    specs = s.check_specs()
    if specs is None:
        specs = [(n, {}) for n in DEFAULT_CHECKS]
    if "no_duplicate_writes" not in {n for n, _ in specs}:
        specs = [*specs, ("no_duplicate_writes", {})]  # the CI gate's absolute rule is always graded
    for name, params in specs:
        results.extend(_run_check(trace, name, params, required, success))
    value = score(trace, success=success, checks=results, required_tools=required).value
    by_tool: dict[str, int] = {}
    for a in trace.attempts:
        by_tool[a.tool] = by_tool.get(a.tool, 0) + 1
    summary = {
        "total": len(trace.attempts), "by_tool": by_tool,
        "faults": sum(a.fault_type is not None for a in trace.attempts),
        # 1 when no_duplicate_writes failed: that check is the only judge of a repeated write
        "duplicate_writes": int(any(r.name == "no_duplicate_writes" and not r.passed for r in results)),
    }
    return [*criteria, *(r.to_dict() for r in results)], round(float(value), 2), summary


def _run_oracle(oracle: Callable[[Any], Any] | None, env: Any) -> dict[str, Any] | None:
    """An oracle returns a bool, or ``(ok, end_state)``; the end state is what perturbed runs must match."""
    if oracle is None:
        return None
    try:
        value = oracle(env)
    except Exception as exc:
        return {"ok": False, "state": None, "error": f"{type(exc).__name__}: {exc}"}
    if isinstance(value, tuple) and len(value) == 2:
        ok, state = bool(value[0]), value[1]
    else:
        ok, state = bool(value), bool(value)
    return {"ok": ok, "state": _attrs.canonical_json(state), "error": None}


# --- running one episode -----------------------------------------------------------------------------------

def _replay(ep: EpisodePlan, agent: PythonAgent | CommandAgent, config: RunConfig) -> str:
    """The command that runs exactly this episode again: same scenario file, agent, grid point, profile and
    seed (and, for a command-line agent, the same timeout)."""
    parts = ["chaoskit", "run", ep.scenario.source or ep.scenario.name]
    if config.agent is not None:
        parts += ["--agent", agent.ref]
    parts += ["--intensity", f"{ep.intensity:g}", "--perturb", f"{ep.epsilon:g}"]
    if ep.intensity > 0:
        # a profile read from a file is named by that file: its name alone would not load it again
        parts += ["--profile", config.profile.source or config.profile.name]
    if isinstance(agent, CommandAgent) and ep.scenario.timeout is None and config.timeout != 60.0:
        parts += ["--timeout", f"{config.timeout:g}"]
    parts += ["--episode-seed", str(ep.seed)]
    return " ".join(shlex.quote(p) for p in parts)


class _Runner:
    def __init__(self, scenarios: Sequence[Scenario], config: RunConfig, traces: _TraceSink,
                 collector: _Collector, given: PythonAgent | None = None) -> None:
        self.config = config
        self.traces = traces
        self.collector = collector
        #: scenarios naming a tool no wrapper knew after the factories ran: checked from their traces instead
        self.unverified_tools: set[str] = set()
        self.agents: dict[str, PythonAgent | CommandAgent] = {given.ref: given} if given is not None else {}
        self.oracles: dict[str, Callable[[Any], Any] | None] = {}
        for sc in scenarios:
            ref = config.agent or sc.agent
            if ref is None:
                raise AgentError(f"{sc.source or sc.name}: no agent: give --agent or an 'agent:' key")
            if ref not in self.agents:
                self.agents[ref] = resolve_agent(ref)
            self.oracles[sc.name] = sc.oracle()

    def agent_for(self, sc: Scenario) -> PythonAgent | CommandAgent:
        return self.agents[self.config.agent or sc.agent or ""]

    def plan_for(self, ep: EpisodePlan) -> Any:
        return with_background(ep.scenario.plan(seed=ep.seed), ep.intensity, self.config.profile, seed=ep.seed)

    def _attrs(self, ep: EpisodePlan) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            # the task the agent was given: checks read it as backing for the values the agent repeats
            "task": ep.perturbation.text, "repetition": ep.repetition, "intensity": ep.intensity,
            "perturbation": ep.epsilon, "seed": ep.seed, "profile": self.config.profile.name}
        if ep.scenario.success.required_tools is not None:
            attrs["required_tools"] = list(ep.scenario.success.required_tools)
        return attrs

    def _finish(self, ep: EpisodePlan, agent: PythonAgent | CommandAgent, *, spans: Sequence[ReadableSpan],
                trace: Trace | None, criteria: list[dict[str, Any]], oracle: dict[str, Any] | None,
                output: str | None, outcome: str, error: str | None, started: float,
                trace_id: str | None, episode_id: str | None, read_error: str | None = None) -> EpisodeResult:
        if trace is None:
            # a trace that cannot be read cannot be graded: reported as such, never as a pass
            checks = [*criteria, {"name": "trace", "passed": False, "severity": "fail", "evidence": [],
                                  "message": f"the episode's trace cannot be graded: {read_error}"}]
            score, summary = 0.0, {"total": 0, "by_tool": {}, "faults": 0, "duplicate_writes": 0}
        else:
            checks, score, summary = grade(ep.scenario, trace, criteria)
        if self.oracles.get(ep.scenario.name) is not None and oracle is None and isinstance(agent, CommandAgent):
            checks.append({"name": "end_state", "passed": False, "severity": "warn", "evidence": [],
                           "message": "not checked: a command-line agent has no environment object to inspect"})
        self.traces.write_spans(spans)
        passed = all(c["passed"] for c in checks if c["severity"] in ("fail", "pass"))
        return EpisodeResult(
            scenario=ep.scenario.name, source=ep.scenario.source, repetition=ep.repetition, epsilon=ep.epsilon,
            intensity=ep.intensity, seed=ep.seed, task=ep.perturbation.text, edits=list(ep.perturbation.edits),
            agent=agent.ref, outcome=outcome, error=error, output=output,
            duration_s=round(time.perf_counter() - started, 4), attempts=summary, checks=checks, score=score,
            oracle=oracle, base_passed=passed, passed=passed, replay=_replay(ep, agent, self.config),
            trace_id=trace_id, episode_id=episode_id,
        )

    # -- in-process ----------------------------------------------------------------------------------------

    def _run_body(self, ep: EpisodePlan, episode: Episode, made: tuple[Any, Any] | None,
                  output: Any, exc: BaseException | None) -> dict[str, Any] | None:
        """The end of an in-process episode, still inside it: record a crash (keeping an integration's more
        detailed reason), run the end-state oracle, and put the task's success on the root span, so that the
        exported trace grades as the runner grades it."""
        if exc is not None:
            if episode.outcome is None:
                episode.crash(exc)
        else:
            episode.finish(output)
        env = made[1] if made is not None else None
        oracle = _run_oracle(self.oracles.get(ep.scenario.name), env) if env is not None else None
        text = None if episode.output is None else str(episode.output)
        criteria = task_criteria(ep.scenario, output=text, outcome=episode.outcome or "completed", error=None,
                                 oracle=oracle)
        episode.set_attribute("chaoskit.episode.success", all(c["passed"] for c in criteria))
        return oracle

    def run_sync(self, ep: EpisodePlan) -> EpisodeResult:
        agent = self.agent_for(ep.scenario)
        if isinstance(agent, CommandAgent):
            return self.run_command(ep, agent)
        started = time.perf_counter()
        episode = Episode(ep.scenario.name, self.plan_for(ep), **self._attrs(ep))
        made: tuple[Any, Any] | None = None
        with episode:
            output: Any = None
            error: BaseException | None = None
            try:
                made = agent.make()
                output = agent.invoke(made[0], ep.perturbation.text)
            except Exception as exc:
                error = exc
            oracle = self._run_body(ep, episode, made, output, error)
        return self._after_inprocess(ep, agent, episode, oracle, started)

    async def run_async(self, ep: EpisodePlan) -> EpisodeResult:
        agent = self.agent_for(ep.scenario)
        assert isinstance(agent, PythonAgent)
        started = time.perf_counter()
        episode = Episode(ep.scenario.name, self.plan_for(ep), **self._attrs(ep))
        made: tuple[Any, Any] | None = None
        async with episode:
            output: Any = None
            error: BaseException | None = None
            try:
                made = agent.make()
                output = await agent.ainvoke(made[0], ep.perturbation.text)
            except Exception as exc:
                error = exc
            oracle = self._run_body(ep, episode, made, output, error)
        return self._after_inprocess(ep, agent, episode, oracle, started)

    def _after_inprocess(self, ep: EpisodePlan, agent: PythonAgent, episode: Episode,
                         oracle: dict[str, Any] | None, started: float) -> EpisodeResult:
        spans = self.collector.pop(episode.id)
        trace, read_error = _trace_of(spans)
        err = None
        if episode.error is not None:
            err = f"{type(episode.error).__name__}: {episode.error}"
            recorded = trace.episodes[0].error if trace is not None and trace.episodes else None
            if recorded and not recorded.startswith("agent crashed: "):
                err = recorded  # an integration's own reason (which node, which setting) says more
        out = episode.output if episode.output is None else str(episode.output)
        outcome = episode.outcome or "completed"
        criteria = task_criteria(ep.scenario, output=out, outcome=outcome, error=err, oracle=oracle)
        return self._finish(ep, agent, spans=spans, trace=trace, criteria=criteria, oracle=oracle, output=out,
                            outcome=outcome, error=err, started=started, trace_id=episode.trace_id,
                            episode_id=episode.id, read_error=read_error)

    # -- command line ---------------------------------------------------------------------------------------

    def run_command(self, ep: EpisodePlan, agent: CommandAgent) -> EpisodeResult:
        started = time.perf_counter()
        plan = self.plan_for(ep)
        key = f"run-{ep.index}-{os.getpid()}-{id(ep)}"
        tracer = telemetry.get_tracer()
        timeout = ep.scenario.timeout or self.config.timeout
        with tempfile.TemporaryDirectory(prefix="chaoskit-ep-") as tmp:
            plan_path = Path(tmp) / "plan.yaml"
            plan_path.write_text(yaml.safe_dump(plan.to_dict(), sort_keys=False), encoding="utf-8")
            traces_path = Path(tmp) / "spans.jsonl"
            attrs = {f"chaoskit.run.{k}": v for k, v in self._attrs(ep).items()
                     if isinstance(v, bool | int | float | str)}
            with tracer.start_as_current_span(f"run_episode {ep.scenario.name}", attributes={
                    **attrs, "chaoskit.run.key": key, "chaoskit.scenario": ep.scenario.name}) as span:
                carrier: dict[str, str] = {}
                TraceContextTextMapPropagator().inject(carrier)
                env = dict(os.environ)
                env.pop("CHAOSKIT_DISABLE", None)
                env.update({
                    "CHAOSKIT_PLAN": str(plan_path),
                    "CHAOSKIT_TRACES_FILE": str(traces_path),
                    "CHAOSKIT_SCENARIO": ep.scenario.name,
                    "CHAOSKIT_EPISODE_SEED": str(ep.seed),
                    "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p),
                })
                if "traceparent" in carrier:
                    env["TRACEPARENT"] = carrier["traceparent"]
                outcome, output, error = self._spawn(agent.command(ep.perturbation.text), env, timeout)
                span.set_attribute("chaoskit.run.outcome", outcome)
                trace_id = f"{span.get_span_context().trace_id:032x}"
            lines = traces_path.read_text(encoding="utf-8").splitlines() if traces_path.exists() else []
        own = self.collector.pop(key)
        self.traces.write_lines(lines)
        criteria = task_criteria(ep.scenario, output=output, outcome=outcome, error=error, oracle=None)
        trace, read_error = self._command_trace(lines, ep, output, outcome, error, criteria)
        episode_id = trace.episodes[0].id if trace is not None and trace.episodes else None
        return self._finish(ep, agent, spans=own, trace=trace, criteria=criteria, oracle=None, output=output,
                            outcome=outcome, error=error, started=started, trace_id=trace_id,
                            episode_id=episode_id, read_error=read_error)

    def _spawn(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[str, str | None, str | None]:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, text=True, start_new_session=True)
        except OSError as exc:
            return "crashed", None, f"cannot start {argv[0]!r}: {exc}"
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            stdout, stderr = proc.communicate()
            return "timeout", (stdout or "").strip() or None, f"no answer within {timeout:g}s; process group killed"
        output = (stdout or "").strip() or None
        if proc.returncode != 0:
            tail = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()][-3:]
            return "crashed", output, f"exit status {proc.returncode}" + (": " + " | ".join(tail) if tail else "")
        return "completed", output, None

    def _command_trace(self, lines: list[str], ep: EpisodePlan, output: str | None, outcome: str,
                       error: str | None, criteria: list[dict[str, Any]]) -> tuple[Trace | None, str | None]:
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
        attributes.update({f"chaoskit.episode.{k}": v for k, v in self._attrs(ep).items()})
        attributes["chaoskit.episode.success"] = all(c["passed"] for c in criteria)
        rec = EpisodeRecord(
            id=base.id if base else None, name=ep.scenario.name, output=output,
            outcome=outcome if outcome != "completed" else (base.outcome if base and base.outcome else outcome),
            error=error or (base.error if base else None), trace_id=base.trace_id if base else None,
            span_id=base.span_id if base else None, start_time=base.start_time if base else None,
            end_time=base.end_time if base else None, attributes=attributes,
            attempts=tuple(sorted(attempts, key=lambda a: (a.start_time, a.attempt, a.span_id))),
        )
        return Trace([rec]), None


def _trace_of(spans: Sequence[ReadableSpan]) -> tuple[Trace | None, str | None]:
    try:
        return Trace.from_spans(spans), None
    except ChaoskitError as exc:
        return None, str(exc)


# --- tools the scenarios name ------------------------------------------------------------------------------

def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")


def _named_tools(sc: Scenario, *, for_trace: bool = False) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(tool, field, YAML key path) for every exact tool name the scenario gives: its faults' tools, its
    attempt bounds and its required tools. ``for_trace`` keeps only names the trace of a working agent must
    show: a bound of 0 attempts ("never call it") and required tools (graded by the checks) are left out."""
    out: list[tuple[str, str, tuple[Any, ...]]] = []
    for i, fault in enumerate(sc.faults):
        for name in fault.tool_names():
            out.append((name, f"faults[{i}].tool", ("faults", i, "tool")))
    for key in ("max_attempts", "min_attempts"):
        for name, n in getattr(sc.success, key).items():
            if not (for_trace and key == "max_attempts" and n == 0):
                out.append((name, f"success.{key}.{name}", ("success", key, name)))
    if not for_trace:
        for j, name in enumerate(sc.success.required_tools or ()):
            out.append((name, f"success.required_tools[{j}]", ("success", "required_tools", j)))
    return [t for t in out if not _is_pattern(t[0])]


def _unknown_tool(sc: Scenario, name: str, field_name: str, key: tuple[Any, ...], known: Iterable[str],
                  why: str) -> PlanError:
    lines: Mapping[tuple[Any, ...], int] = {}
    if sc.source is not None:
        try:
            _data, lines = load_yaml(Path(sc.source).read_text(encoding="utf-8"), sc.source)
        except (OSError, UnicodeDecodeError, ChaoskitError):
            lines = {}
    names = sorted(set(known))
    if len(names) > 20:
        # a process that wrapped many tools (a test suite): the closest names are the useful ones
        close = sorted(names, key=lambda n: -difflib.SequenceMatcher(None, name, n).ratio())[:20]
        shown = f"{', '.join(close)}, ... ({len(names)} in all)"
        label = "closest known tools"
    else:
        shown, label = ", ".join(names) or "(none)", "known tools"
    return PlanError(f"names tool {name!r}, {why}{_suggest(name, names)}; {label}: {shown} "
                     "(or \"*\" for every tool)", source=sc.source or f"scenario {sc.name}",
                     line=_line_for(key, lines), field=field_name)


def check_agent_tools(scenarios: Iterable[Scenario], known: Iterable[str]) -> list[Scenario]:
    """After the agent factory ran: a name that looks like a typo of a known tool is an error now; the
    scenarios naming other unknown tools are returned, to be checked from their traces instead.

    A fault on a tool the agent lacks never fires, so the scenario would pass without testing what it says.
    But ``ChaosMiddleware`` and ``ChaosCallbackHandler`` learn a tool's name only at its first call, so a
    name unlike any known tool may still exist: :func:`check_trace_tools` decides before anything is reported.
    """
    tools = set(known)
    deferred: list[Scenario] = []
    for sc in scenarios:
        unknown = [t for t in _named_tools(sc) if t[0] not in tools]
        for name, field_name, key in unknown:
            if difflib.get_close_matches(name, tools, n=1, cutoff=0.75):
                raise _unknown_tool(sc, name, field_name, key, tools,
                                    "which the agent does not have (no tool of that name was wrapped)")
        if unknown:
            deferred.append(sc)
    return deferred


def check_trace_tools(scenarios: Iterable[Scenario], results: Sequence[EpisodeResult]) -> None:
    """Command-line agents, whose tools live in another process: every tool a scenario's faults or attempt
    bounds name appears in the trace of at least one of its episodes. Checked only for a scenario with a
    completed episode that recorded attempts: an agent that crashed or hung before reaching a tool says
    nothing about whether the tool exists (and the verdict already reports it)."""
    for sc in scenarios:
        seen: set[str] = set()
        completed = False
        for r in results:
            if r.scenario == sc.name:
                seen.update(r.attempts.get("by_tool", {}))
                completed = completed or (r.outcome == "completed" and r.attempts.get("total", 0) > 0)
        if not completed:
            continue
        for name, field_name, key in _named_tools(sc, for_trace=True):
            if name not in seen:
                raise _unknown_tool(sc, name, field_name, key, seen,
                                    "which never appeared in the trace of any of its episodes")


# --- progress -----------------------------------------------------------------------------------------------

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
        from chaoskit.report._report import metamorphic_check

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
                self.stream.write(f"\r[{bar}] {self.done}/{self.total} episodes, {self.failed} failed, "
                                  f"{rate:.1f}/s{left}    ")
                if self.done == self.total:
                    self.stream.write("\n")
                self.stream.flush()
            elif self.done % self._step == 0 or now - self._last >= 10 or self.done == self.total:
                self._last = now
                self.stream.write(f"chaoskit: {self.done}/{self.total} episodes, {self.failed} failed, "
                                  f"{rate:.1f}/s{left}\n")
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


# --- the battery ----------------------------------------------------------------------------------------------

@dataclass
class BatteryResult:
    """What ``run_battery`` returns: the config, every episode, the aggregate figures and the CI verdict."""

    config: dict[str, Any]
    episodes: list[EpisodeResult]
    summary: Any
    verdict: Any
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.verdict.ok)

    def to_dict(self) -> dict[str, Any]:
        from chaoskit.report._report import result_to_dict

        return result_to_dict(self)


def run_battery(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    scenarios: Sequence[Scenario] | None = None,
    agent: str | Callable[[], Any] | None = None,
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
    """Run a battery and grade it. ``paths`` are scenario files, directories or globs (or pass ``scenarios``).

    ``agent`` is a ``module:factory`` reference, a command line, or (from Python) the factory itself; it
    overrides the scenarios' own ``agent``. ``baseline`` is a baseline/results file or an already-loaded dict.
    """
    from chaoskit.report._report import load_baseline, summarize

    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # so "examples.plain.agents:careful" resolves from the repository root
    given: PythonAgent | None = None
    if isinstance(agent, str) and not agent.strip():
        # an empty --agent would otherwise fall back to the scenarios' own agents without a word
        raise AgentError("--agent is empty: give module:factory or a command line")
    if agent is not None and not isinstance(agent, str):
        given = PythonAgent(f"{getattr(agent, '__module__', '?')}:{getattr(agent, '__qualname__', repr(agent))}",
                            agent)
        agent = given.ref
    config = RunConfig(
        seed=seed, repeat=repeat, k=k, intensities=tuple(float(x) for x in intensities),
        perturbations=tuple(float(x) for x in perturbations), profile=load_profile(profile), theta=theta,
        workers=workers, timeout=timeout, agent=agent, shard=shard, episode_seed=episode_seed,
        fail_under=fail_under, attempt_tolerance=attempt_tolerance,
        paths=tuple(str(p) for p in (paths or ())),
    )
    if scenarios is None:
        if not paths:
            raise ChaoskitError("no scenarios: give scenario files, directories or globs")
        for p in paths:
            if not str(p).strip():
                # Path("") is the current directory: an empty argument would run every YAML file under it
                raise ChaoskitError("a scenario path is empty: give scenario files (*.yaml), directories or globs")
        scenarios = load_battery(paths)
    base = load_baseline(baseline) if baseline is not None and not isinstance(baseline, dict) else baseline
    grid = plan_episodes(scenarios, config)
    started = time.perf_counter()
    telemetry.get_tracer()
    collector = _Collector(keep_other=traces is not None)
    sink = _TraceSink(traces)
    telemetry.add_processor(collector)
    try:
        runner = _Runner(scenarios, config, sink, collector, given)
        results = _execute(runner, grid, config, progress)
        telemetry.flush()
        if collector.other:
            sink.write_spans(collector.other)
    finally:
        telemetry.remove_processor(collector, shutdown=False)
        sink.close()
    check_trace_tools([sc for sc in scenarios if isinstance(runner.agent_for(sc), CommandAgent)
                       or sc.name in runner.unverified_tools], results)
    order = {(ep.scenario.name, ep.repetition, ep.epsilon, ep.intensity): ep.index for ep in grid}
    results.sort(key=lambda r: order.get(r.key, len(grid)))
    summary, verdict = summarize(results, config.to_dict(), baseline=base)
    return BatteryResult(config.to_dict(), results, summary, verdict, time.perf_counter() - started)


def _execute(runner: _Runner, grid: list[EpisodePlan], config: RunConfig,
             progress: bool | IO[str]) -> list[EpisodeResult]:
    bar = Progress(len(grid), stream=progress if not isinstance(progress, bool) else None,
                   enabled=bool(progress))
    for a in runner.agents.values():
        if isinstance(a, PythonAgent):
            try:
                a.probe()
            except AgentError:
                raise
            except Exception as exc:
                raise AgentError(f"--agent {a.ref}: the factory failed: {type(exc).__name__}: {exc}") from None
    in_process = {ep.scenario.name: ep.scenario for ep in grid
                  if isinstance(runner.agent_for(ep.scenario), PythonAgent)}
    # the factories have run, so every tool they wrap is known now
    runner.unverified_tools = {sc.name for sc in check_agent_tools(in_process.values(),
                                                                   _config.config().known_tools)}
    results: list[EpisodeResult] = []
    sync_eps = [ep for ep in grid if not runner.agent_for(ep.scenario).is_async]
    async_eps = [ep for ep in grid if runner.agent_for(ep.scenario).is_async]

    def one(ep: EpisodePlan) -> EpisodeResult:
        r = runner.run_sync(ep)
        bar.update(r)
        return r

    if sync_eps:
        if config.workers == 1:
            results.extend(one(ep) for ep in sync_eps)
        else:
            with ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="chaoskit-ep") as pool:
                results.extend(pool.map(one, sync_eps))
    if async_eps:
        results.extend(asyncio.run(_run_async_all(runner, async_eps, config.workers, bar)))
    return results


async def _run_async_all(runner: _Runner, eps: list[EpisodePlan], workers: int,
                         bar: Progress) -> list[EpisodeResult]:
    sem = asyncio.Semaphore(workers)

    async def one(ep: EpisodePlan) -> EpisodeResult:
        async with sem:
            r = await runner.run_async(ep)
        bar.update(r)
        return r

    return list(await asyncio.gather(*(one(ep) for ep in eps)))


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span (what a command-line agent receives as ``TRACEPARENT``)."""
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent") if otel_trace.get_current_span().get_span_context().is_valid else None
