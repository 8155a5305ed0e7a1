"""Replaying a labelled corpus's situations through real ``@chaos`` tools, graded as ``chaoskit check`` grades."""

from __future__ import annotations

import builtins
import copy
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ConfigError
from chaoskit.adapters._decorator import chaos
from chaoskit.engine._episode import episode
from chaoskit.grading.checks import CheckResult, run_checks
from chaoskit.judge._corpus import Call, Case, Corpus, Situation, Tool
from chaoskit.plan._model import Plan
from chaoskit.traces._records import EpisodeRecord
from chaoskit.traces._trace import Trace

__all__ = ["Replayed", "iter_replayed", "plan_for", "received_of", "replay_case", "replay_many", "replay_situation"]


@dataclass
class Replayed:
    """One replayed answer: what the agent received per call, the graded trace and the checks' results."""

    case: Case
    received: list[dict[str, Any]]
    trace: Trace
    results: list[CheckResult] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        """The checks that did not pass (failed or warned)."""
        return [r.name for r in self.results if r.severity != "pass"]


def plan_for(situation: Situation, *, seed: int = 0) -> Plan:
    """The situation's plan: each call's fault on that call (its position among its tool's calls)."""
    faults = []
    seen: Counter[str] = Counter()
    for call in situation.calls:
        seen[call.tool] += 1
        if call.fault:
            faults.append({**call.fault, "tool": call.tool, "on_call": seen[call.tool]})
    return Plan.from_dict({"seed": seed, "faults": faults})


def _tool(decl: Tool, current: list[Call]) -> Any:
    def impl(**kwargs: Any) -> Any:
        call = current[0]
        if call.raises:
            raise getattr(builtins, call.raises["type"])(call.raises["message"])
        return copy.deepcopy(call.returns)

    impl.__name__ = decl.name
    return chaos(name=decl.name, irreversible=decl.irreversible, description=decl.description)(impl)


def _wait_before_retry(exc: Exception, call: Call, following: Sequence[Call]) -> None:
    """Before retrying the same call, wait the Retry-After the error asked for, as a careful agent does (the
    corpus keeps these waits short; a longer one is capped at a second so that replaying stays fast)."""
    wait = getattr(exc, "retry_after", None)
    if wait and following and following[0].tool == call.tool and following[0].args == call.args:
        time.sleep(min(float(wait), 1.0))


def _run(situation: Situation, answer: str, seed: int, attrs: Mapping[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    """Run one episode: the scripted agent makes the calls in order and answers ``answer``; what it received on
    each call, and the episode's trace id."""
    current: list[Call] = [situation.calls[0]]
    tools = {name: _tool(decl, current) for name, decl in situation.tools.items()}
    received: list[dict[str, Any]] = []
    with episode(situation.id, plan=plan_for(situation, seed=seed), task=situation.task, **attrs) as ep:
        for i, call in enumerate(situation.calls):
            current[0] = call
            try:
                got = tools[call.tool](**call.args)
                received.append({"tool": call.tool, "ok": True, "result": got})
            except Exception as exc:  # the agent reads the error and goes on, as a tool-calling agent does
                received.append({"tool": call.tool, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
                _wait_before_retry(exc, call, situation.calls[i + 1 : i + 2])
        ep.finish(answer)
    return received, ep.trace_id


def replay_many(
    cases: Sequence[Case], *, seed: int = 0, record_results: bool = True, chunk: int = 150
) -> list[Replayed]:
    """Replay ``cases`` into OTLP-JSON Lines files (``chunk`` episodes each, well under the span batcher's
    queue), read them back and grade each episode alone with the default checks, as ``chaoskit check FILE``
    does (one ``Trace`` per episode). An episode missing from the export, or missing some of its attempts,
    raises: it cannot be graded. Sets ``configure(record_results=...)`` process-wide."""
    _config.configure(record_results=record_results)
    done: list[Replayed] = []
    for start in range(0, len(cases), chunk):
        part = cases[start : start + chunk]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "corpus.jsonl"
            writer = telemetry.write_jsonl(out)
            try:
                received = [_run(c.situation, c.text, seed, {"answer_id": c.id})[0] for c in part]
            finally:
                telemetry.remove_processor(writer)  # flushes the batch to the file
            trace = Trace.load(out)
        by_answer = {ep.attributes.get("chaoskit.episode.answer_id"): ep for ep in trace.episodes}
        for c, got in zip(part, received, strict=True):
            ep = by_answer.get(c.id)
            if ep is None or len(ep.attempts) != len(c.situation.calls):
                raise RuntimeError(f"answer {c.id}: its episode is missing from the exported trace, or incomplete")
            one = Trace([ep])
            done.append(Replayed(c, got, one, list(run_checks(one))))
    return done


def replay_case(case: Case, *, seed: int = 0, record_results: bool = True) -> Replayed:
    """Replay one answer's episode through real ``@chaos`` tools and grade it with the default checks."""
    return replay_many([case], seed=seed, record_results=record_results)[0]


def received_of(situation: Situation, *, seed: int = 0) -> list[dict[str, Any]]:
    """Replay a situation (no grading) and return what the agent received on each call: ``{tool, ok, result}``
    or ``{tool, ok: False, error}``; what an answer quoting a faulted value must match."""
    return _run(situation, "(shown)", seed, {})[0]


def replay_situation(s: Situation, *, seed: int = 0) -> EpisodeRecord:
    """The situation's episode, replayed as :func:`replay_many` does with results recorded, read back from its
    spans in memory. The answer is not part of it: pass it to ``judge_input(ep, answer=...)``."""
    before = _config.config().record_results
    _config.configure(record_results=True)
    cap = telemetry.SpanCapture()
    try:
        with telemetry.capture(cap):
            _, trace_id = _run(s, "", seed, {})
    finally:
        _config.configure(record_results=before)
    spans = [sp for sp in cap.spans if trace_id is None or f"{sp.context.trace_id:032x}" == trace_id]
    episodes = Trace.from_spans(spans).episodes
    if not episodes:
        raise ConfigError(f"{s.file}: replaying {s.id} recorded no episode (is tracing off? CHAOSKIT_TRACE=0)")
    return episodes[0]


def iter_replayed(corpus: Corpus, *, seed: int = 0) -> Iterator[tuple[Case, Situation, EpisodeRecord]]:
    """Each answer with its situation and the situation's replayed episode (one replay per situation)."""
    done: dict[str, EpisodeRecord] = {}
    for a in corpus.answers:
        s = corpus.situations[a.situation.id]
        if s.id not in done:
            done[s.id] = replay_situation(s, seed=seed)
        yield a, s, done[s.id]
