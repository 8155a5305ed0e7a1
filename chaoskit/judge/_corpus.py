"""A labelled answer corpus (benchmarks/answers_corpus's format): loading it, checked, and replaying its situations."""

from __future__ import annotations

import builtins
import contextvars
import copy
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit._errors import ConfigError
from chaoskit.adapters._decorator import chaos
from chaoskit.engine._episode import episode
from chaoskit.grading._model import EpisodeRecord
from chaoskit.grading._trace import Trace
from chaoskit.plan._model import Plan
from chaoskit.telemetry import SpanCapture

__all__ = ["CORPUS_LABELS", "Answer", "Corpus", "Situation", "load_corpus", "replay"]

#: the corpus's labels; ``claims_injected_action`` is scored against the rubric's ``claimed_action_not_taken``,
#: which a user's corpus may also name directly
CORPUS_LABELS = {
    "false_success": "false_success",
    "silent_failure": "silent_failure",
    "fabricated_detail": "fabricated_detail",
    "repeats_faulted_value": "repeats_faulted_value",
    "claims_injected_action": "claimed_action_not_taken",
    "claimed_action_not_taken": "claimed_action_not_taken",
}


@dataclass(frozen=True)
class Situation:
    """What the agent was asked, the tools it had and the calls it made (with their results and faults)."""

    id: str
    task: str
    tools: dict[str, dict[str, Any]]
    calls: list[dict[str, Any]]
    source: str


@dataclass(frozen=True)
class Answer:
    """One labelled final answer to a situation; ``labels`` are rubric labels (empty: honest)."""

    id: str
    situation: str
    lang: str
    labels: tuple[str, ...]
    text: str
    source: str


@dataclass(frozen=True)
class Corpus:
    """The situations by id, the answers in file order, and a sha256 of the files read (in name order)."""

    path: str
    situations: dict[str, Situation]
    answers: list[Answer]
    sha256: str


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise ConfigError(f"--labels {path}: no .yaml file in this folder")
        return files
    if not path.is_file():
        raise ConfigError(f"--labels {path}: no such file or folder")
    return [path]


def _need(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise ConfigError(f"{where}: {message}")


def _situation(raw: Any, where: str) -> Situation:
    _need(isinstance(raw, Mapping), where, "expected a mapping with id, task, tools, calls")
    sid = raw.get("id")
    _need(isinstance(sid, str) and bool(sid), where, "id: expected a non-empty string")
    where = f"{where} (situation {sid})"
    _need(isinstance(raw.get("task"), str), where, "task: expected the user's request as a string")
    tools = raw.get("tools")
    _need(
        isinstance(tools, Mapping) and bool(tools),
        where,
        "tools: expected a mapping of tool name to {description, kind}",
    )
    for name, spec in tools.items():
        _need(isinstance(spec, Mapping), where, f"tools.{name}: expected a mapping (description, kind, irreversible)")
    calls = raw.get("calls")
    _need(isinstance(calls, list), where, "calls: expected a list of {tool, args, returns | raises, fault}")
    for i, call in enumerate(calls):
        at = f"calls[{i}]"
        _need(isinstance(call, Mapping), where, f"{at}: expected a mapping")
        _need(call.get("tool") in tools, where, f"{at}.tool: {call.get('tool')!r} is not one of tools: {sorted(tools)}")
        _need(isinstance(call.get("args", {}), Mapping), where, f"{at}.args: expected a mapping of argument values")
        _need(("returns" in call) != ("raises" in call), where, f"{at}: give exactly one of returns and raises")
        if "raises" in call:
            r = call["raises"]
            _need(
                isinstance(r, Mapping) and isinstance(r.get("type"), str),
                where,
                f"{at}.raises: expected {{type, message}}",
            )
        fault = call.get("fault")
        _need(fault is None or isinstance(fault, Mapping), where, f"{at}.fault: expected a fault mapping (type, ...)")
        _need(not (fault or {}).keys() & {"tool", "on_call"}, where, f"{at}.fault: leave out tool and on_call")
    return Situation(sid, raw["task"], {str(k): dict(v) for k, v in tools.items()}, [dict(c) for c in calls], where)


def _answer(raw: Any, where: str, situations: Mapping[str, Situation]) -> Answer:
    _need(isinstance(raw, Mapping), where, "expected a mapping with id, situation, lang, labels, text")
    aid = raw.get("id")
    _need(isinstance(aid, str) and bool(aid), where, "id: expected a non-empty string")
    where = f"{where} (answer {aid})"
    _need(raw.get("situation") in situations, where, f"situation: {raw.get('situation')!r} is no situation's id")
    _need(isinstance(raw.get("text"), str), where, "text: expected the final answer as a string")
    labels = raw.get("labels", [])
    _need(isinstance(labels, list), where, f"labels: expected a list of {sorted(CORPUS_LABELS)} ([] when honest)")
    bad = [lab for lab in labels if lab not in CORPUS_LABELS]
    _need(not bad, where, f"labels: unknown {bad}; allowed: {sorted(CORPUS_LABELS)}")
    lang = raw.get("lang", "en")
    _need(isinstance(lang, str) and bool(lang), where, "lang: expected a language code such as en")
    mapped = tuple(sorted({CORPUS_LABELS[lab] for lab in labels}))
    return Answer(aid, raw["situation"], lang, mapped, raw["text"], where)


def load_corpus(path: str | os.PathLike[str]) -> Corpus:
    """Read a corpus file, or every ``.yaml`` file of a folder; a bad entry is a :class:`ConfigError` naming the
    file, the situation or answer id, and the field."""
    files = _files(Path(path))
    digest = hashlib.sha256()
    docs = []
    for f in files:
        data = f.read_bytes()
        digest.update(f.name.encode() + b"\0" + data)
        try:
            docs.append((f, yaml.safe_load(data)))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{f}: not valid YAML: {exc}") from None
    situations: dict[str, Situation] = {}
    answers: list[Answer] = []
    for f, doc in docs:
        _need(isinstance(doc, Mapping), str(f), "expected a mapping with situations and answers")
        for i, raw in enumerate(doc.get("situations") or []):
            s = _situation(raw, f"{f}: situations[{i}]")
            _need(s.id not in situations, s.source, "id: used twice in the corpus")
            situations[s.id] = s
    seen: set[str] = set()
    for f, doc in docs:
        for i, raw in enumerate(doc.get("answers") or []):
            a = _answer(raw, f"{f}: answers[{i}]", situations)
            _need(a.id not in seen, a.source, "id: used twice in the corpus")
            seen.add(a.id)
            answers.append(a)
    if not answers:
        raise ConfigError(f"--labels {path}: no labelled answer in it")
    return Corpus(str(path), situations, answers, digest.hexdigest())


_CALL: contextvars.ContextVar[int] = contextvars.ContextVar("chaoskit_corpus_call", default=-1)


def _raise(spec: Mapping[str, Any]) -> BaseException:
    kind = getattr(builtins, str(spec["type"]), None)
    cls: type[Exception] = (
        kind if isinstance(kind, type) and issubclass(kind, Exception) else type(str(spec["type"]), (Exception,), {})
    )
    return cls(str(spec.get("message", "")))


def _tool(s: Situation, name: str) -> Any:
    def real(**kwargs: Any) -> Any:
        call = s.calls[_CALL.get()]
        if "raises" in call:
            raise _raise(call["raises"])
        return copy.deepcopy(call["returns"])

    spec = s.tools[name]
    real.__name__ = name
    irreversible = bool(spec.get("irreversible"))
    wrap = chaos(name=name, description=str(spec.get("description") or name), irreversible=irreversible)
    return wrap(real)


def _plan(s: Situation, seed: int) -> Plan:
    faults, seen = [], dict.fromkeys(s.tools, 0)
    for call in s.calls:
        seen[call["tool"]] += 1
        if call.get("fault"):
            faults.append({**call["fault"], "tool": call["tool"], "on_call": seen[call["tool"]]})
    return Plan.from_dict({"seed": seed, "faults": faults}, source=s.source)


def replay(s: Situation, *, seed: int = 0) -> EpisodeRecord:
    """Run the situation's calls, in order, through real ``@chaos`` tools under a plan of their faults, as an
    agent would (a tool error is caught and the next call made), with results recorded; the episode as read
    back from its spans. The answer is not part of it: pass it to ``judge_input(ep, answer=...)``."""
    tools = {name: _tool(s, name) for name in s.tools}
    settings = _config.config()
    before = settings.record_results
    _config.configure(record_results=True)
    cap = SpanCapture()
    try:
        with telemetry.capture(cap), episode(s.id, plan=_plan(s, seed), task=s.task) as ep:
            for i, call in enumerate(s.calls):
                token = _CALL.set(i)
                try:
                    tools[call["tool"]](**dict(call.get("args") or {}))
                except Exception:
                    pass
                finally:
                    _CALL.reset(token)
            ep.finish("")
    finally:
        _config.configure(record_results=before)
    trace_id = ep.trace_id
    spans = [sp for sp in cap.spans if trace_id is None or f"{sp.context.trace_id:032x}" == trace_id]
    episodes = Trace.from_spans(spans).episodes
    if not episodes:
        raise ConfigError(f"{s.source}: replaying it recorded no episode (is tracing off? CHAOSKIT_TRACE=0)")
    return episodes[0]


def iter_replayed(corpus: Corpus, *, seed: int = 0) -> Iterator[tuple[Answer, Situation, EpisodeRecord]]:
    """Each answer with its situation and the situation's replayed episode (one replay per situation)."""
    done: dict[str, EpisodeRecord] = {}
    for a in corpus.answers:
        s = corpus.situations[a.situation]
        if s.id not in done:
            done[s.id] = replay(s, seed=seed)
        yield a, s, done[s.id]
