"""One episode's trajectory: its task, its model steps and its tool attempts, with the attempts each step made."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit.metrics._model_steps import StepRecord, steps_from_spans
from chaoskit.semconv import EPISODE_TASK
from chaoskit.traces._records import AttemptRecord, EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["Trajectory", "trajectories", "trajectories_from_spans"]


@dataclass(frozen=True)
class Trajectory:
    """What the metrics read of one episode. ``steps`` and ``attempts`` are in time order.

    The attempts of step *i* are those that started at or after the step started and before step *i + 1*
    started (:meth:`attempts_of_step`): a step asks for tool calls, then the tools run, then the next step reads
    their results. Attempts before the first step belong to no step.
    """

    task: str | None
    steps: tuple[StepRecord, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    episode: EpisodeRecord | None = None
    _windows: list[list[AttemptRecord]] | None = field(default=None, repr=False, compare=False)
    #: computed once per trajectory by the similarity-based metrics (CDI and RIC share it)
    _similarity: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, episode: EpisodeRecord, steps: Iterable[StepRecord]) -> Trajectory:
        """The trajectory of ``episode`` with the given steps (already its own)."""
        task = episode.attributes.get(EPISODE_TASK)
        ordered = tuple(sorted(steps, key=lambda s: (s.start_time, s.end_time)))
        return cls(task if isinstance(task, str) else None, ordered, episode.attempts, episode)

    def attempts_of_step(self, i: int) -> list[AttemptRecord]:
        """The attempts step ``i`` made (see the class docstring); [] for an index out of range."""
        if self._windows is None:
            object.__setattr__(self, "_windows", self._split())
        windows = self._windows
        assert windows is not None
        return windows[i] if 0 <= i < len(windows) else []

    def _split(self) -> list[list[AttemptRecord]]:
        windows: list[list[AttemptRecord]] = [[] for _ in self.steps]
        if not self.steps:
            return windows
        starts = [s.start_time for s in self.steps]
        j = 0
        for a in sorted(self.attempts, key=lambda a: (a.start_time, a.attempt)):
            while j + 1 < len(starts) and a.start_time >= starts[j + 1]:
                j += 1
            if a.start_time >= starts[j]:
                windows[j].append(a)
        return windows

    @property
    def captured_steps(self) -> list[tuple[int, StepRecord]]:
        """The steps whose content was captured, with their index among all steps."""
        return [(i, s) for i, s in enumerate(self.steps) if s.captured]


def trajectories(trace: Trace, steps: Sequence[StepRecord]) -> list[Trajectory]:
    """The trajectory of each episode of ``trace``: a step belongs to the episode whose ``invoke_agent`` span is
    its parent; in a trace id holding one episode only, a step parented elsewhere in that trace belongs to it."""
    by_parent: dict[tuple[str | None, str | None], list[StepRecord]] = {}
    for s in steps:
        by_parent.setdefault((s.trace_id, s.parent_id), []).append(s)
    per_trace: dict[str | None, list[EpisodeRecord]] = {}
    for ep in trace.episodes:
        per_trace.setdefault(ep.trace_id, []).append(ep)
    claimed: set[tuple[str | None, str | None]] = set()
    own: dict[int, list[StepRecord]] = {}
    for i, ep in enumerate(trace.episodes):
        if ep.span_id is not None and (ep.trace_id, ep.span_id) in by_parent:
            own[i] = list(by_parent[(ep.trace_id, ep.span_id)])
            claimed.add((ep.trace_id, ep.span_id))
    for i, ep in enumerate(trace.episodes):
        if len(per_trace.get(ep.trace_id, ())) == 1:
            for key, group in by_parent.items():
                if key[0] == ep.trace_id and key not in claimed:
                    own.setdefault(i, []).extend(group)
    return [Trajectory.of(ep, own.get(i, ())) for i, ep in enumerate(trace.episodes)]


def trajectories_from_spans(spans: Iterable[Any]) -> list[Trajectory]:
    """The trajectories of OpenTelemetry SDK spans (e.g. what ``chaoskit.testing.capture_spans`` captured)."""
    spans = list(spans)
    return trajectories(Trace.from_spans(spans), steps_from_spans(spans))
