"""Cassettes: a recorded episode's trace answering the tool calls of a new run, by tool, arguments and occurrence."""

from __future__ import annotations

import builtins
import itertools
import json
import os
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit._errors import ChaoskitError, ConfigError, ToolHTTPError, ToolTimeout
from chaoskit.engine._spec import ToolSpec
from chaoskit.replay._model_replies import ModelReply, ReplayMiss, model_replies, tool_answers
from chaoskit.traces._readers import load
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, TraceReadError
from chaoskit.traces._trace import Trace

__all__ = ["ON_MISS", "Answer", "Cassette", "RecordedError", "Replay", "ReplayMiss", "cassette_path"]

_T = TypeVar("_T")

#: what an unmatched call does: stop the run with a clear error, call the real tool, or call it and add its answer
#: to the cassette
ON_MISS = ("error", "passthrough", "record")
#: the marks chaoskit's caps leave in a value cut to fit a span attribute (``…[+N chars]``, ``…[+N items]``)
#: chaoskit's own error classes a recorded error may name (the built-in ones are found in ``builtins``)
_KNOWN: dict[str, type[Exception]] = {"ToolTimeout": ToolTimeout}
_CUT = re.compile(r"…\[\+\d+ (chars|items|keys)\]")


class RecordedError(ChaoskitError):
    """The error a tool raised when the episode was recorded, raised again on replay when its class is not a built-in
    one (which is raised as itself) nor an HTTP error (raised as :class:`~chaoskit.ToolHTTPError`); ``error_type``
    names the recorded class."""

    def __init__(self, error_type: str, message: str) -> None:
        self.error_type = error_type
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Answer:
    """One recorded answer of a tool: what it returned (``text``, JSON when ``json``) or the error it raised."""

    tool: str
    attempt: int
    args: Any
    text: str | None
    json: bool
    error_type: str | None
    error_message: str | None
    status: int | None
    retry_after: float | None
    source: str
    #: the recorded text was cut to fit the span (found once, when the cassette is read, not at every call)
    cut: bool = False

    def result(self) -> Any:
        """The recorded result, or the recorded error raised again."""
        if self.error_type is not None:
            message = self.error_message or self.error_type
            if self.status is not None:
                raise ToolHTTPError(self.status, message, retry_after=self.retry_after)
            known = _KNOWN.get(self.error_type) or getattr(builtins, self.error_type, None)
            if isinstance(known, type) and issubclass(known, Exception):
                # the same class as recorded, so the agent's own except clauses see the same error
                try:
                    exc = known(message)
                except Exception:
                    exc = None
                if exc is not None:
                    raise exc
            raise RecordedError(self.error_type, message)
        text = self.text or ""
        if self.cut:
            raise ReplayMiss(
                f"{self.source}: the recorded result of {self.tool} call {self.attempt} was cut to fit the span "
                "(configure(max_output_chars=...) when recording, to keep it whole); it cannot be replayed"
            )
        if not self.json:
            return text
        return json.loads(text)


def _answer(a: AttemptRecord, source: str) -> Answer | None:
    """The answer a recorded attempt gives, or None when the real tool's answer is not in it (a fault changed or
    replaced it, or the call was cancelled)."""
    if not a.executed or a.outcome == "cancelled" or (a.fault_type is not None and a.fault_type != "latency"):
        return None
    where = f"{source}: span {a.span_id} ({a.tool} call {a.attempt})"
    if a.outcome == "error" and not a.refused:
        return Answer(a.tool, a.attempt, a.args, None, False, a.error_type or "Exception", a.error_message,
                      a.observed_status, a.observed_retry_after, where)  # fmt: skip
    if a.result is None:
        raise ReplayMiss(
            f"{where}: the span holds no result, so it cannot answer a replayed call; record with "
            "`chaoskit run --record DIR`, chaoskit.episode(record=DIR) or configure(record_results=True)"
        )
    return Answer(a.tool, a.attempt, a.args, a.result, a.result_json, None, None, None, None, where,
                  _CUT.search(a.result) is not None)  # fmt: skip


class Cassette:
    """A recorded episode, read once and shared: its answers by tool, in the order they were given, and its model
    replies by request hash; then what episodes that ``on_miss="record"`` appended to it added, in their order."""

    def __init__(self, path: str, episode: EpisodeRecord, additions: Iterable[EpisodeRecord] = ()) -> None:
        self.path = path
        self.episode = episode
        #: every tool's answers with their recorded arguments hash, in call order
        self.answers: dict[str, list[tuple[str | None, Answer]]] = {}
        for a in episode.attempts:
            answer = _answer(a, path)
            if answer is not None:
                self.answers.setdefault(a.tool, []).append((a.args_hash, answer))
        #: the model replies, in call order
        self.models: list[ModelReply] = _replies(path, episode)[1]
        for extra in additions:
            self._add(path, extra)

    def _add(self, path: str, extra: EpisodeRecord) -> None:
        """What an ``on_miss="record"`` episode added: its n-th answer to a call is kept only when the cassette
        holds fewer than n for that call, so two episodes that both missed one call (workers of one battery) do
        not turn their two first answers into a first and a second."""
        tools, models = _replies(path, extra, " (added by on_miss=record)")
        where = f"{path}: episode {extra.id} (added by on_miss=record)"
        held: dict[tuple[str, str | None], int] = {}
        for tool, answers in self.answers.items():
            for h, _ in answers:
                held[(tool, h)] = held.get((tool, h), 0) + 1
        for reply in self.models:
            held[("", reply.key)] = held.get(("", reply.key), 0) + 1
        seen: dict[tuple[str, str | None], int] = {}
        for item in tools:
            key = (item["tool"], item["hash"])
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > held.get(key, 0):
                self.answers.setdefault(item["tool"], []).append((item["hash"], _added(item, where)))
        for reply in models:
            key = ("", reply.key)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > held.get(key, 0):
                self.models.append(reply)

    @classmethod
    def open(cls, path: str | os.PathLike[str], name: str | None = None) -> Cassette:
        """The cassette at ``path`` (a file, or a directory holding ``<name>.jsonl``); read once per file version."""
        file = cassette_path(path, name)
        try:
            stat = file.stat()
        except OSError as exc:
            raise ReplayMiss(f"{file}: no recording there ({exc.strerror or exc}); record it first") from None
        key = (str(file.resolve()), stat.st_mtime_ns, stat.st_size, name)
        with _LOCK:
            cached = _CACHE.get(key)
        if cached is not None:
            return cached
        cassette = cls(str(file), *_one_episode(str(file), name))
        with _LOCK:
            _CACHE[key] = cassette
        return cassette

    @classmethod
    def from_trace(
        cls, trace: Trace | Iterable[EpisodeRecord], name: str | None = None, *, source: str = "<trace>"
    ) -> Cassette:
        """The cassette of a trace already read (``chaoskit.fetch_phoenix``, ``Trace.from_jaeger``, ...): its one
        complete episode (the one named ``name`` when it holds several), checked as a file's would be."""
        episodes = list(trace.episodes if isinstance(trace, Trace) else trace)
        return cls(source, *_pick(episodes, source, name))


def _replies(path: str, episode: EpisodeRecord, note: str = "") -> tuple[list[dict[str, Any]], list[ModelReply]]:
    """The tool answers and model replies on an episode's ``chaoskit.replay.answers``; a malformed one raises
    ReplayMiss naming the file, the line of the episode's span (looked up only then) and the item."""
    where = f"{path}: episode {episode.id}{note}"
    try:
        return tool_answers(episode.attributes, where), model_replies(episode.attributes, where)
    except ReplayMiss as exc:
        line = ""
        if episode.span_id and os.path.isfile(path):
            # the span's own id, not a child's reference to it as its parent (OTLP-JSON as the span writer writes)
            own = re.compile(rf'"spanId":\s*"{re.escape(episode.span_id)}"', re.IGNORECASE)
            with open(path, encoding="utf-8", errors="replace") as f:
                line = next((f", line {n}" for n, text in enumerate(f, 1) if own.search(text)), "")
        raise ReplayMiss(f"{path}{line}{str(exc)[len(path) :]}") from None


def _added(item: dict[str, Any], where: str) -> Answer:
    return Answer(item["tool"], 0, item.get("args"), item["result"], item["json"], item["error_type"],
                  item["error_message"], item["status"], item["retry_after"], where,
                  _CUT.search(item["result"] or "") is not None)  # fmt: skip


_LOCK = threading.Lock()
_CACHE: dict[tuple[str, int, int, str | None], Cassette] = {}


def cassette_path(path: str | os.PathLike[str], name: str | None) -> Path:
    """The file of episode ``name`` in ``path``: ``path/<name>.jsonl`` when ``path`` is a directory or a name with no
    suffix (a directory to be made); a file path (``x.jsonl``) as it is."""
    p = Path(path)
    if p.is_dir() or not p.suffix or str(path).endswith(("/", os.sep)):
        return p / f"{_file_name(name)}.jsonl"
    return p


def _file_name(name: str | None) -> str:
    # a scenario name may hold any character: keep the file name portable
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name or "episode").strip("._") or "episode"


def _one_episode(file: str, name: str | None) -> tuple[EpisodeRecord, list[EpisodeRecord]]:
    try:
        episodes = load(file)
    except TraceReadError as exc:
        raise ReplayMiss(f"cannot replay from this recording: {exc}") from None
    return _pick(episodes, file, name)


def _pick(episodes: list[EpisodeRecord], file: str, name: str | None) -> tuple[EpisodeRecord, list[EpisodeRecord]]:
    """The recorded episode, and the episodes ``on_miss="record"`` appended to it (in file order)."""
    whole = [e for e in episodes if e.id is not None and e.outcome is not None]
    if not whole:
        raise ReplayMiss(
            f"{file}: no complete episode (an invoke_agent root span with its outcome) in the recording: the trace "
            "was cut short or is not chaoskit's; a partial recording is never replayed"
        )
    if len(episodes) != len(whole):
        raise ReplayMiss(
            f"{file}: {len(episodes) - len(whole)} episode(s) without their root span: the file is cut short"
        )
    added = [e for e in whole if e.attributes.get(sc.REPLAY_ADDS_TO) is not None]
    whole = [e for e in whole if e.attributes.get(sc.REPLAY_ADDS_TO) is None]
    if name is not None and len(whole) > 1:
        named = [e for e in whole if e.name == name]
        whole = named or whole
    if len(whole) > 1:
        ids = ", ".join(str(e.id) for e in whole[:5])
        raise ReplayMiss(f"{file}: {len(whole)} episodes in one recording ({ids}); a cassette holds one episode")
    if not whole:
        raise ReplayMiss(f"{file}: only episodes added by on_miss=record, not the recorded episode they add to")
    first = whole[0]
    foreign = [e.id for e in added if e.attributes.get(sc.REPLAY_ADDS_TO) != first.id]
    if foreign:
        raise ReplayMiss(f"{file}: episode {foreign[0]} adds to another recording than episode {first.id}")
    return first, added


class Replay:
    """One run's view of a cassette: which recorded answer each call gets (the n-th call of a tool with the same
    arguments gets the n-th recorded answer; past the last, the last again), and what it does on a miss."""

    def __init__(
        self, cassette: Cassette, *, on_miss: str = "error", ignore: Mapping[str, Iterable[str]] | None = None
    ):
        if on_miss not in ON_MISS:
            raise ConfigError(f"on_miss={on_miss!r}: expected one of {', '.join(ON_MISS)}")
        self.cassette = cassette
        self.on_miss = on_miss
        self.ignore = _ignored(ignore)
        #: calls answered so far by (tool, arguments hash)
        self._seen: dict[tuple[str, str | None], Iterator[int]] = {}
        self._index: dict[str, dict[str | None, list[Answer]]] = {}
        #: the misses of this run, in order (with on_miss="error" the first one stops it)
        self.misses: list[ReplayMiss] = []
        #: what the real tools and model answered on a miss, to be added to the cassette (``on_miss="record"``)
        self.added: dict[str, list[dict[str, Any]]] = {"tools": [], "models": []}
        self._models: dict[str, list[ModelReply]] | None = None

    def lookup(self, spec: ToolSpec, args: Mapping[str, Any] | None, args_hash: str | None) -> Answer | None:
        """The recorded answer of this call, None to call the real tool (``passthrough``), or a ReplayMiss raised."""
        name = spec.name
        index = self._index.get(name)
        if index is None:
            index = self._index.setdefault(name, self._build(spec))
        key = self._key(spec, args, args_hash)
        return self._next(index.get(key), (name, key), lambda: self._miss_text(spec, args))

    def _next(self, recorded: list[_T] | None, seen_key: tuple[str, str | None], miss: Callable[[], str]) -> _T | None:
        """The n-th of ``recorded`` for the n-th request of ``seen_key`` (past the last, the last again); on none
        recorded, a miss kept and raised, or None with ``on_miss`` other than ``error``."""
        if not recorded:
            error = ReplayMiss(miss())
            self.misses.append(error)
            if self.on_miss != "error":
                return None
            raise error
        seen = self._seen.get(seen_key)
        if seen is None:
            seen = self._seen.setdefault(seen_key, itertools.count())
        # next() on a count is atomic under the GIL: concurrent calls each get their own occurrence, with no lock
        n = next(seen)
        return recorded[n if n < len(recorded) else -1]

    def call(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any] | None,
        args_hash: str | None,
        fn: Callable[..., Any],
        a: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        """The call ``fn(*a, **kw)`` answered from the recording; the real tool on a miss that does not stop the
        run, its answer kept for the cassette with ``on_miss="record"``."""
        recorded = self.lookup(spec, args, args_hash)
        if recorded is not None:
            return recorded.result()
        if self.on_miss != "record":
            return fn(*a, **kw)
        try:
            result = fn(*a, **kw)
        except Exception as exc:
            self._add_tool(spec, args, args_hash, None, exc)
            raise
        self._add_tool(spec, args, args_hash, result, None)
        return result

    async def acall(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any] | None,
        args_hash: str | None,
        fn: Callable[..., Awaitable[Any]],
        a: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        """:meth:`call` for a coroutine function."""
        recorded = self.lookup(spec, args, args_hash)
        if recorded is not None:
            return recorded.result()
        if self.on_miss != "record":
            return await fn(*a, **kw)
        try:
            result = await fn(*a, **kw)
        except Exception as exc:
            self._add_tool(spec, args, args_hash, None, exc)
            raise
        self._add_tool(spec, args, args_hash, result, None)
        return result

    def _add_tool(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any] | None,
        args_hash: str | None,
        result: Any,
        error: BaseException | None,
    ) -> None:
        cfg = _config.CONFIG
        if args_hash is None and args is not None:
            args_hash = _attrs.describe_args(args, exclude=spec.idempotency_arg, exact=spec.irreversible)[0]
        item: dict[str, Any] = {
            "tool": spec.name,
            "hash": args_hash or "",
            "args": None if args is None else _attrs.bounded(args),
            "result": None if error is not None else _attrs.to_text(result, cfg.max_output_chars),
            "json": error is None and not isinstance(result, str),
            "error_type": None if error is None else type(error).__qualname__,
            "error_message": None if error is None else _attrs.cap(str(error), cfg.max_output_chars),
            "status": getattr(error, "status", None) if isinstance(error, ToolHTTPError) else None,
            "retry_after": getattr(error, "retry_after", None) if isinstance(error, ToolHTTPError) else None,
        }
        self.added["tools"].append(item)

    def model(self, key: str, messages: tuple[str, ...], shown: str) -> Any | None:
        """The recorded reply to a model request of hash ``key`` (the n-th such request gets the n-th reply; past
        the last, the last again), None to call the real model, or a ReplayMiss raised. ``shown`` describes the
        request for the miss message."""
        index = self._models
        if index is None:
            index = {}
            for reply in self.cassette.models:
                index.setdefault(reply.key, []).append(reply)
            self._models = index
        found = self._next(index.get(key), ("", key), lambda: self._model_miss_text(messages, shown))
        return None if found is None else found.reply

    def add_model(self, key: str, messages: tuple[str, ...], reply: Any) -> None:
        """Keep a real model's ``reply`` (plain data, redacted) for the cassette when ``on_miss="record"``."""
        if self.on_miss == "record":
            self.added["models"].append({"key": key, "messages": list(messages), "reply": _attrs.redact(reply)})

    def _model_miss_text(self, messages: tuple[str, ...], shown: str) -> str:
        where = self.cassette.path
        recorded = self.cassette.models
        if not recorded:
            return f"{where}: no recorded model call at all (this request: {shown}); record the agent's model calls"
        nearest = max(recorded, key=lambda r: r.agreement(messages))
        same = nearest.agreement(messages)
        return (
            f"{where}: no recorded model call with this request ({shown}); nearest recorded: model call "
            f"{nearest.call}, whose {len(nearest.messages)} messages agree with this request's {len(messages)} "
            f"on the first {same} (a fault changed what the model read?: record the branch with on_miss=record)"
        )

    def _key(self, spec: ToolSpec, args: Mapping[str, Any] | None, args_hash: str | None) -> str | None:
        ignored = self.ignore.get(spec.name)
        if args is None:
            return args_hash
        if ignored:
            args = {k: v for k, v in args.items() if k not in ignored}
        elif args_hash is not None:
            return args_hash
        # the span's own hash (describe_args, whose common case is one C encoding), not a second definition of it
        return _attrs.describe_args(args, exclude=spec.idempotency_arg, exact=spec.irreversible)[0]

    def _build(self, spec: ToolSpec) -> dict[str | None, list[Answer]]:
        out: dict[str | None, list[Answer]] = {}
        ignored = self.ignore.get(spec.name)
        for recorded_hash, answer in self.cassette.answers.get(spec.name, ()):
            key = recorded_hash
            if ignored and isinstance(answer.args, dict):
                key = self._key(spec, answer.args, None)
            out.setdefault(key, []).append(answer)
        return out

    def _miss_text(self, spec: ToolSpec, args: Mapping[str, Any] | None) -> str:
        shown = _attrs.to_attr_json(args, 300) if args is not None else "(arguments unknown)"
        recorded = self.cassette.answers.get(spec.name)
        where = self.cassette.path
        if not recorded:
            tools = ", ".join(sorted(self.cassette.answers)) or "none"
            return f"{where}: no recorded call of {spec.name} (this call: {shown}); recorded tools: {tools}"
        nearest = min((a for _, a in recorded), key=lambda a: _distance(args, a.args))
        return (
            f"{where}: no recorded call of {spec.name} with these arguments: {shown}; nearest recorded: "
            f"call {nearest.attempt} with {_attrs.to_attr_json(nearest.args, 300)}"
        )


def _distance(args: Mapping[str, Any] | None, recorded: Any) -> int:
    if not isinstance(args, Mapping) or not isinstance(recorded, dict):
        return 1 << 20
    keys = set(args) | set(recorded)
    return sum(1 for k in keys if _attrs.canonical_json(args.get(k)) != _attrs.canonical_json(recorded.get(k)))


def _ignored(ignore: Mapping[str, Iterable[str]] | None) -> dict[str, frozenset[str]]:
    if ignore is None:
        return {}
    if not isinstance(ignore, Mapping):
        raise ConfigError(f"ignore=...: expected a mapping of tool name to argument names, got {type(ignore).__name__}")
    out: dict[str, frozenset[str]] = {}
    for tool, names in ignore.items():
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"ignore[{tool!r}]: expected a list of argument names, got {names!r}")
        out[str(tool)] = frozenset(names)
    return out
