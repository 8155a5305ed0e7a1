"""What a worker process (a process-pool worker, a Ray worker) runs: its own runner, spans and part file."""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

import chaoskit.telemetry as telemetry
from chaoskit._errors import ChaoskitError
from chaoskit.runner._agents import PythonAgent
from chaoskit.runner._episode_runner import EpisodeRunner, episode_facts, replay_command
from chaoskit.runner._grade_episode import grade_or_refuse, task_criteria
from chaoskit.runner._grid import EpisodePlan, RunConfig
from chaoskit.runner._perturb import perturb
from chaoskit.runner._results import EpisodeResult
from chaoskit.runner._spans import SpanCollector, TraceSink
from chaoskit.scenarios._scenario import Scenario
from chaoskit.telemetry._otlpjson import otlp_line

__all__ = [
    "EpisodeRef",
    "PartSink",
    "SpanMerger",
    "WorkerSetup",
    "close_worker",
    "lost_result",
    "parts_dir",
    "run_in_worker",
    "setup_from",
]

#: an episode as sent to a worker: (grid index, scenario position, agent, repetition, epsilon, lambda, seed)
EpisodeRef = tuple[int, int, str, int, float, float, int]

#: what a worker sends back: the result and where its spans are (part file, start, end) or the lines themselves
Spans = tuple[str, int, int] | list[str] | None


def ref_of(ep: EpisodePlan) -> EpisodeRef:
    """The few values that name ``ep`` (a worker has the scenarios already)."""
    return (ep.index, ep.position, ep.agent, ep.repetition, ep.epsilon, ep.intensity, ep.seed)


def plan_of(ref: EpisodeRef, scenarios: Sequence[Scenario]) -> EpisodePlan:
    """The episode ``ref`` names, made again in the worker (the perturbation is deterministic)."""
    index, pos, agent, rep, eps, lam, seed = ref
    sc = scenarios[pos]
    return EpisodePlan(index, sc, agent, rep, eps, lam, seed, perturb(sc.task, eps, seed), pos)


@dataclass
class WorkerSetup:
    """Everything a worker needs to build the battery's runner: picklable, sent once per worker."""

    scenarios: list[Scenario]
    config: RunConfig
    assigned: dict[str, list[str]]
    #: a factory given to ``run_battery`` as a Python object (pickled by reference: it must be importable)
    given: tuple[str, Callable[[], Any]] | None
    #: the folder of the per-worker span files, or None: no ``--traces``
    parts: str | None
    #: send the span lines back with the result (a cluster whose workers do not share this file system)
    inline: bool = False
    #: the agents the parent's probe found async (a worker does not call the factories twice)
    async_refs: frozenset[str] = frozenset()
    cwd: str = field(default_factory=os.getcwd)
    #: the workers run on other machines (a Ray cluster)
    remote: bool = False
    #: the parent's import path: a local worker (a process, a local Ray's) imports the agents as it does
    sys_path: list[str] = field(default_factory=lambda: list(sys.path))
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


def setup_from(runner: EpisodeRunner, parts: str | None, remote: bool = False) -> WorkerSetup:
    """The setup that rebuilds ``runner`` in a worker; ``remote`` workers send their span lines back."""
    given = runner.given
    return WorkerSetup(
        list(runner.scenarios),
        runner.config.for_workers(),
        {k: list(v) for k, v in runner.assigned.items()},
        (given.ref, given.factory) if given is not None else None,
        parts,
        remote and parts is not None,
        frozenset(ref for ref, a in runner.agents.items() if a.is_async),
        remote=remote,
    )


class PartSink(TraceSink):
    """A worker's ``--traces`` part file, remembering where each episode's lines start and end; or, with no
    file, the lines themselves (``inline``)."""

    def __init__(self, path: str | None, inline: bool) -> None:
        super().__init__(path)
        self.inline = inline
        self.lines: list[str] = []
        self._start = 0

    def write_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Write (or keep) ``spans`` as one OTLP-JSON line."""
        if self.inline and spans:
            self.lines.append(otlp_line(spans))  # the line a span file holds
        super().write_spans(spans)

    def write_lines(self, lines: Iterable[str]) -> None:
        """Copy (or keep) a command-line agent's lines."""
        lines = [ln.rstrip("\n") for ln in lines if ln.strip()]
        if self.inline:
            self.lines.extend(lines)
        super().write_lines(lines)

    def begin(self) -> None:
        """An episode starts."""
        self.lines = []
        if self._fh is not None:
            self._fh.flush()
            self._start = self._fh.tell()

    def end(self) -> Spans:
        """The episode's spans: its byte range in the part file, its lines, or None."""
        if self.inline:
            return self.lines
        if self._fh is None or self.path is None:
            return None
        self._fh.flush()
        return (str(self.path), self._start, self._fh.tell())


class _Runtime:
    """One worker's runner, span collector and part file, for one battery (``token``)."""

    def __init__(self, setup: WorkerSetup) -> None:
        if setup.cwd not in sys.path:
            sys.path.insert(0, setup.cwd)
        if not setup.remote:  # on this machine: the parent's folders are there too
            sys.path.extend(p for p in setup.sys_path if p not in sys.path)
        self.token = setup.token
        self.scenarios = setup.scenarios
        part = None
        if setup.parts is not None and not setup.inline:
            Path(setup.parts).mkdir(parents=True, exist_ok=True)
            part = str(Path(setup.parts) / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}.jsonl")
        self.sink = PartSink(part, setup.inline and setup.parts is not None)
        if setup.parts is not None:
            # a worker's warning about spans its OTLP backend did not get names the run's --traces file
            telemetry.note_local_copy(setup.parts.removesuffix(".parts"))
        self.collector = SpanCollector(keep_other=False)
        telemetry.get_tracer()
        telemetry.add_processor(self.collector)
        given = PythonAgent(setup.given[0], setup.given[1]) if setup.given is not None else None
        self.runner = EpisodeRunner(setup.scenarios, setup.config, self.sink, self.collector, given, setup.assigned)
        for ref in setup.async_refs:
            self.runner.agents[ref].is_async = True
        # spans also go to the OTLP endpoint of the environment: push them per episode, so a lost worker
        # takes none of the finished episodes' spans with it
        self.push = any(k.startswith("OTEL_EXPORTER_OTLP") for k in os.environ)

    def run(self, ref: EpisodeRef) -> tuple[EpisodeResult, Spans]:
        ep = plan_of(ref, self.scenarios)
        self.sink.begin()
        if self.runner.is_async(ep):
            import asyncio

            result = asyncio.run(self.runner.run_async(ep))
        else:
            result = self.runner.run_sync(ep)
        if self.push:
            telemetry.flush()
        return result, self.sink.end()

    def close(self) -> None:
        telemetry.flush()
        telemetry.remove_processor(self.collector, shutdown=False)
        self.sink.close()


_current: _Runtime | None = None
_lock = threading.Lock()


def run_in_worker(setup: WorkerSetup, ref: EpisodeRef) -> tuple[EpisodeResult, Spans]:
    """Run one episode in this worker process, building (once per battery) its runner from ``setup``."""
    global _current
    with _lock:
        if _current is None or _current.token != setup.token:
            if _current is not None:
                _current.close()
            _current = _Runtime(setup)
        rt = _current
    return rt.run(ref)


def close_worker() -> None:
    """Flush and close this worker's runtime (a process-pool worker that is told to stop)."""
    global _current
    with _lock:
        if _current is not None:
            _current.close()
            _current = None


class SpanMerger:
    """The parent's side: copies each accepted episode's spans from its worker's part file (or its lines)
    into the run's ``--traces`` file, so a retried episode's lost try never gets in."""

    def __init__(self, sink: TraceSink) -> None:
        self.sink = sink
        self._files: dict[str, Any] = {}

    def add(self, spans: Spans) -> None:
        """Copy one episode's spans."""
        if spans is None:
            return
        if isinstance(spans, list):
            self.sink.write_lines(spans)
            return
        path, start, end = spans
        if end <= start:
            return
        fh = self._files.get(path)
        if fh is None:
            try:
                fh = self._files[path] = open(path, "rb")  # noqa: SIM115 - kept open for the whole run
            except OSError as exc:
                raise ChaoskitError(
                    f"--traces: cannot read a worker's span file {path}: {exc.strerror or exc} (on a cluster, "
                    "give --traces a path every node shares, or use the OTLP collector)"
                ) from None
        fh.seek(start)
        self.sink.write_lines(fh.read(end - start).decode("utf-8").splitlines())

    def close(self) -> None:
        """Close the part files."""
        for fh in self._files.values():
            fh.close()
        self._files.clear()


def lost_result(ep: EpisodePlan, runner: EpisodeRunner, why: str) -> EpisodeResult:
    """A failed result for an episode whose worker was lost on the retry as well: it is reported, not dropped."""
    agent = runner.agent_for(ep)
    criteria = task_criteria(ep.scenario, output=None, outcome="crashed", error=why, oracle=None)
    checks, score, summary = grade_or_refuse(ep.scenario, None, criteria, why)
    return EpisodeResult(
        **episode_facts(ep),
        agent=agent.ref,
        outcome="crashed",
        error=why,
        output=None,
        duration_s=0.0,
        attempts=summary,
        checks=checks,
        score=score,
        oracle=None,
        base_passed=False,
        passed=False,
        replay=replay_command(ep, agent, runner.config),
        retried=True,
    )


def parts_dir(traces: str | os.PathLike[str] | None) -> str | None:
    """Where the workers' part files of ``--traces FILE`` go: ``FILE.parts/``."""
    return None if traces is None else f"{os.fspath(traces)}.parts"
