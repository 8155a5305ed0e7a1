"""The episode grid: run configuration, scenarios x repetitions x epsilon x lambda, seeds, and shards."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any, TypedDict, Unpack

from chaoskit._errors import ChaoskitError
from chaoskit.metrics._cost import Prices
from chaoskit.replay import ON_MISS
from chaoskit.runner._agents import AgentError
from chaoskit.runner._expect import Expectations
from chaoskit.runner._gate import check_gate
from chaoskit.runner._intensity import Profile, load_profile
from chaoskit.runner._perturb import Perturbation, perturb
from chaoskit.runner._results import EpisodeResult
from chaoskit.scenarios._battery_file import Selection
from chaoskit.scenarios._scenario import Scenario
from chaoskit.traces._trace import Trace

__all__ = [
    "EpisodePlan",
    "RunConfig",
    "RunOptions",
    "agents_for",
    "count_episodes",
    "default_workers",
    "derive_seed",
    "iter_episodes",
    "plan_episodes",
    "run_config",
]

PathLike = str | os.PathLike[str]
EMPTY_AGENTS = "--agents names an empty agent: give module:factory references or command lines, by commas"


class RunOptions(TypedDict, total=False):
    """The keywords of :func:`run_config` (and of ``run_battery``'s keyword form), as a Python caller gives
    them; :class:`RunConfig` documents each."""

    scenarios: Sequence[Scenario] | None
    agent: str | Callable[[], Any] | None
    agents: Sequence[str] | None
    tags: Sequence[Sequence[str]]
    expect: PathLike | Sequence[str] | Expectations | None
    selection: Selection | None
    repeat: int
    k: int | None
    intensities: Iterable[float]
    perturbations: Iterable[float]
    profile: str | Profile
    seed: int
    theta: float
    workers: int | None
    executor: str
    ray_address: str | None
    ray_runtime_env: dict[str, Any] | None
    results_jsonl: PathLike | None
    timeout: float
    shard: tuple[int, int] | None
    episode_seed: int | None
    fail_under: float | None
    baseline: PathLike | dict[str, Any] | None
    attempt_tolerance: float
    traces: PathLike | None
    progress: bool | IO[str]
    metrics: bool
    prices: Prices | None
    judge: Callable[[Sequence[EpisodeResult], str], None] | None
    record: PathLike | None
    replay: PathLike | Trace | None
    on_miss: str
    contracts: bool


def run_config(paths: Sequence[PathLike] | None = None, **options: Unpack[RunOptions]) -> RunConfig:
    """The :class:`RunConfig` of these options, as ``run_battery(paths, **options)`` runs it: paths made
    strings, the profile loaded, a Python factory given as ``agent`` kept beside its reference. An unknown
    keyword is a ``TypeError`` naming it; a bad value a :class:`~chaoskit.ChaoskitError` naming its flag."""
    unknown = sorted(set(options) - set(RunOptions.__annotations__))
    if unknown:
        raise TypeError(f"unknown run option(s) {', '.join(unknown)} (see chaoskit.runner.RunOptions)")
    given: dict[str, Any] = dict(options)
    agent = given.pop("agent", None)
    if agent is not None and not isinstance(agent, str):
        # a factory given from Python runs in this process; its reference names it in the results
        given["agent_factory"] = agent
        agent = f"{getattr(agent, '__module__', '?')}:{getattr(agent, '__qualname__', repr(agent))}"
    agents = given.pop("agents", None)
    if agents is not None and not agents:
        raise AgentError(EMPTY_AGENTS)
    for name in ("intensities", "perturbations"):
        if name in given:
            given[name] = tuple(float(x) for x in given[name])
    for name in ("traces", "results_jsonl", "record"):
        if given.get(name) is not None:
            given[name] = os.fspath(given[name])
    for name, value in (("replay", given.get("replay")), ("baseline", given.get("baseline"))):
        if value is not None and not isinstance(value, Trace | dict):
            given[name] = os.fspath(value)
    expect = given.get("expect")
    if expect is not None and not isinstance(expect, Expectations):
        given["expect"] = os.fspath(expect) if isinstance(expect, str | os.PathLike) else tuple(str(e) for e in expect)
    if given.get("scenarios") is not None:
        given["scenarios"] = tuple(given["scenarios"])
    return RunConfig(
        agent=agent,
        agents=tuple(agents or ()),
        tags=tuple(tuple(g) for g in given.pop("tags", ())),
        profile=load_profile(given.pop("profile", "medium")),
        paths=tuple(str(p) for p in (paths or ())),
        **given,
    )


def default_workers() -> int:
    """The cores this process may use (``--workers`` of the process and Ray executors by default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _source(expect: str | tuple[str, ...] | Expectations | None) -> str | None:
    """The expected-outcome table as the results record it: its file(s)."""
    if expect is None or isinstance(expect, str):
        return expect
    return expect.source if isinstance(expect, Expectations) else ", ".join(expect)


@dataclass(frozen=True)
class RunConfig:
    """Every option of a run, built once (from ``chaoskit run``'s flags or :func:`run_config`'s keywords) and
    checked on construction: a bad value is a :class:`~chaoskit.ChaoskitError` naming its flag. The first
    fields decide which episodes run and how they are judged (:meth:`to_dict`, recorded in the results); the
    rest say where the scenarios come from and where the output goes."""

    seed: int = 0
    repeat: int = 1
    k: int | None = None
    intensities: tuple[float, ...] = (0.0,)
    perturbations: tuple[float, ...] = (0.0,)
    profile: Profile = field(default_factory=lambda: load_profile("medium"))
    theta: float = 0.9
    #: episodes at a time: default 1 for ``thread``, the core count for ``process``, the cluster's CPUs for ``ray``
    workers: int | None = None
    #: how episodes are scheduled: ``thread`` (in this process), ``process`` or ``ray``
    executor: str = "thread"
    timeout: float = 60.0
    #: ``--agent``: a ``module:factory`` reference or a command line; it overrides every other agent
    agent: str | None = None
    shard: tuple[int, int] | None = None
    episode_seed: int | None = None
    fail_under: float | None = None
    attempt_tolerance: float = 0.0
    paths: tuple[str, ...] = ()
    #: ``--agents``: every scenario runs against each of them (``agent``, when given, still wins)
    agents: tuple[str, ...] = ()
    #: ``--tags`` groups: a scenario is kept when it has a tag of every group
    tags: tuple[tuple[str, ...], ...] = ()
    #: the battery file the scenarios and agents came from, if any
    battery: str | None = None
    #: ``--expect``: the expected-outcome table (files, or one already loaded), if any
    expect: str | tuple[str, ...] | Expectations | None = None
    #: ``--metrics``: every episode gets its trajectory metrics, failure modes and cost (docs/metrics.md)
    metrics: bool = False
    #: ``--prices``: the price table of the cost columns (implies ``metrics``)
    prices: Prices | None = None
    #: ``--record DIR``: every episode's trace, tool results included, goes to ``DIR/<scenario>.jsonl`` (docs/replay.md)
    record: str | None = None
    #: ``--replay DIR``: every tool call is answered from ``DIR/<scenario>.jsonl``; ``on_miss`` for a call it cannot
    replay: str | Trace | None = None
    on_miss: str = "error"
    #: the model and architecture each agent (by reference) is labelled with (a battery file's agent mappings)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    # -- where the scenarios come from and where the output goes (not recorded in the results)
    #: the agent factory itself, given from Python (``agent`` is then its reference)
    agent_factory: Callable[[], Any] | None = None
    #: the scenarios, given from Python instead of ``paths``
    scenarios: tuple[Scenario, ...] | None = None
    #: the scenarios already selected from ``paths`` (with a battery file's agents, table and labels)
    selection: Selection | None = None
    #: ``--baseline``: a baseline or results file, or one already loaded
    baseline: str | dict[str, Any] | None = None
    #: ``--traces FILE``: every span as OTLP-JSON Lines
    traces: str | None = None
    #: ``--jsonl FILE``: every episode streamed to FILE as it finishes, none kept in memory
    results_jsonl: str | None = None
    ray_address: str | None = None
    ray_runtime_env: dict[str, Any] | None = None
    #: a progress bar on stderr (True) or on this stream
    progress: bool | IO[str] = False
    #: ``judge(episodes, traces_file)``, called before the episodes are summarized (``chaoskit run --judge``)
    judge: Callable[[Sequence[EpisodeResult], str], None] | None = None
    #: read the declared contracts of the agents' tools into the readiness table (as ``chaoskit run`` shows it)
    contracts: bool = True

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
            object.__setattr__(self, "perturbations", (0.0, *self.perturbations))
        if self.executor not in EXECUTORS:
            raise ChaoskitError(f"--executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        if self.workers is not None and self.workers < 1:
            raise ChaoskitError(f"--workers must be >= 1, got {self.workers}")
        if self.shard is not None:
            i, n = self.shard
            if not (n >= 1 and 1 <= i <= n):
                raise ChaoskitError(f"--shard must be i/n with 1 <= i <= n, got {i}/{n}")
        if not 0.0 < self.theta <= 1.0:
            raise ChaoskitError(f"--theta must be in (0, 1], got {self.theta}")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):  # inf overflows the command agent's wait
            raise ChaoskitError(f"--timeout must be a number of seconds > 0, got {self.timeout:g}")
        self._check_agents()
        self._check_cassettes()

    def _check_agents(self) -> None:
        if any(not str(a).strip() for a in self.agents):
            raise AgentError(EMPTY_AGENTS)
        if self.agent is not None and not self.agent.strip():
            # an empty --agent would otherwise fall back to the scenarios' own agents without a word
            raise AgentError("--agent is empty: give module:factory or a command line")
        for p in self.paths:
            if not p.strip():
                # Path("") is the current directory: an empty argument would run every YAML file under it
                raise ChaoskitError("a scenario path is empty: give scenario files (*.yaml), directories or globs")

    def _check_cassettes(self) -> None:
        if self.on_miss not in ON_MISS:
            raise ChaoskitError(f"--on-miss must be one of {', '.join(ON_MISS)}, got {self.on_miss!r}")
        if self.on_miss == "record" and self.replay is None:
            raise ChaoskitError("--on-miss record adds to the cassettes of --replay DIR: give --replay")
        if self.record is not None and self.replay is not None:
            raise ChaoskitError("--record and --replay: give one (record once, then replay the recording)")
        if self.record is not None and (
            self.repeat > 1 or len(self.intensities) > 1 or len(self.perturbations) > 1 or len(self.agents) > 1
        ):
            # one cassette per scenario: several episodes of a scenario would overwrite each other's
            raise ChaoskitError(
                "--record records each scenario once: use it with --repeat 1, one --intensity, one --perturb and "
                "one agent"
            )
        check_gate(self.fail_under, self.attempt_tolerance)
        if self.prices is not None:
            object.__setattr__(self, "metrics", True)

    @property
    def worker_count(self) -> int:
        """``workers``, or its default: 1 for the thread executor, the core count for the others."""
        if self.workers is not None:
            return self.workers
        return 1 if self.executor == "thread" else default_workers()

    def for_workers(self) -> RunConfig:
        """This config without what stays in this process (the output streams, the judge, the factory and the
        scenarios, which a worker gets by itself): picklable, for a process or Ray worker."""
        return replace(
            self, progress=False, judge=None, agent_factory=None, scenarios=None, selection=None, baseline=None
        )

    @property
    def k_eff(self) -> int:
        """The k of pass^k: ``k``, or the number of repetitions when it is not given."""
        return self.k or self.repeat

    def to_dict(self) -> dict[str, Any]:
        """The config as a results file records it (what ``chaoskit merge`` compares between shards)."""
        return {
            "seed": self.seed,
            "repeat": self.repeat,
            "k": self.k_eff,
            "intensities": list(self.intensities),
            "perturbations": list(self.perturbations),
            "profile": self.profile.to_dict(),
            "theta": self.theta,
            "workers": self.worker_count,
            "executor": self.executor,
            "timeout": self.timeout,
            "agent": self.agent,
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "episode_seed": self.episode_seed,
            "fail_under": self.fail_under,
            "attempt_tolerance": self.attempt_tolerance,
            "paths": list(self.paths),
            "agents": list(self.agents),
            "tags": [list(g) for g in self.tags],
            "battery": self.battery,
            "expect": _source(self.expect),
            "metrics": self.metrics,
            "prices": self.prices.source if self.prices is not None else None,
            "labels": self.labels,
        }


#: the executors ``--executor`` accepts
EXECUTORS = ("thread", "process", "ray")


@dataclass(frozen=True)
class EpisodePlan:
    """One episode to run: which scenario, at which point of the grid, with which seed and task text."""

    index: int
    scenario: Scenario
    agent: str
    repetition: int
    epsilon: float
    intensity: float
    seed: int
    perturbation: Perturbation
    #: where ``scenario`` is in the battery's scenario list (how a worker process finds it again)
    position: int = 0


def derive_seed(run_seed: int, scenario: str, repetition: int, salt: int = 0) -> int:
    """The episode seed: fixed by (run seed, scenario name, repetition, the scenario's own ``seed``), the same
    for every epsilon and lambda (common random numbers: a higher intensity moves the draws' thresholds, not
    the draws)."""
    text = f"{run_seed}\x1f{scenario}\x1f{repetition}" + (f"\x1f{salt}" if salt else "")
    digest = hashlib.blake2b(text.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def agents_for(sc: Scenario, config: RunConfig, assigned: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The agents that run ``sc``: ``--agent``; else ``--agents``; else the battery file's agents for it; else
    the scenario's own ``agent``. None of them is a usage error naming the file."""
    if config.agent is not None:
        return [config.agent]
    if config.agents:
        return list(config.agents)
    if assigned and assigned.get(sc.name):
        return list(dict.fromkeys(assigned[sc.name]))
    if sc.agent is not None:
        return [sc.agent]
    raise AgentError(f"{sc.source or sc.name}: no agent: give --agent, --agents or an 'agent:' key")


def plan_episodes(
    scenarios: Sequence[Scenario], config: RunConfig, assigned: Mapping[str, Sequence[str]] | None = None
) -> list[EpisodePlan]:
    """The whole grid as a list (see :func:`iter_episodes`)."""
    return list(iter_episodes(scenarios, config, assigned))


def count_episodes(
    scenarios: Sequence[Scenario], config: RunConfig, assigned: Mapping[str, Sequence[str]] | None = None
) -> int:
    """How many episodes :func:`iter_episodes` yields, without making them."""
    units = sum(len(agents_for(sc, config, assigned)) for sc in scenarios)
    units *= 1 if config.episode_seed is not None else config.repeat
    if config.shard is not None:
        units = len(range(config.shard[0] - 1, units, config.shard[1]))
    return units * len(config.intensities) * len(config.perturbations)


def iter_episodes(
    scenarios: Sequence[Scenario], config: RunConfig, assigned: Mapping[str, Sequence[str]] | None = None
) -> Iterator[EpisodePlan]:
    """The grid, in a fixed order, cut to this shard, made lazily (``--repeat 10**9`` starts at once). Shards
    split whole (scenario, agent, repetition) units, so every epsilon of a unit (and so its metamorphic
    baseline) stays in one shard. ``assigned`` maps a scenario name to the agents a battery file gives it (see
    :func:`agents_for`). Every agent of a scenario gets the same episode seeds (common random numbers: the
    agents meet the same faults)."""
    index = 0
    unit = 0
    reps = [0] if config.episode_seed is not None else range(config.repeat)
    for pos, sc in enumerate(scenarios):
        for agent in agents_for(sc, config, assigned):
            for rep in reps:
                u = unit
                unit += 1
                if config.shard is not None and u % config.shard[1] != config.shard[0] - 1:
                    continue
                seed = (
                    config.episode_seed
                    if config.episode_seed is not None
                    else derive_seed(config.seed, sc.name, rep, sc.seed)
                )
                for lam in config.intensities:
                    for eps in config.perturbations:
                        yield EpisodePlan(index, sc, agent, rep, eps, lam, seed, perturb(sc.task, eps, seed), pos)
                        index += 1
