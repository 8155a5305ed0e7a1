"""``chaoskit.episode(record=..., replay=...)``: an episode written to a cassette, or answered from one."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit._errors import ConfigError
from chaoskit.engine._episode import Episode
from chaoskit.plan._model import Plan
from chaoskit.replay._cassette import Cassette, Replay, cassette_path
from chaoskit.telemetry import add_processor, remove_processor
from chaoskit.telemetry._filewriter import SpanFileWriter
from chaoskit.traces._trace import Trace

__all__ = ["CassetteEpisode", "episode"]

_LOCK = threading.Lock()
#: cassette files being written now (two episodes writing one file would mix their spans)
_WRITING: set[str] = set()


class _Recording:
    """Recording episodes open now, and whether results were recorded before the first one started."""

    open = 0
    before = False


class _EpisodeFile(SpanFileWriter):
    """The one span file writer, keeping only the spans of one episode: its root span and what it parents."""

    def __init__(self, path: str, episode: Episode) -> None:
        super().__init__(path)
        self._episode = episode

    def on_end(self, span: ReadableSpan) -> None:
        """Queue ``span`` when it belongs to the episode."""
        attrs = span.attributes or {}
        root = self._episode.span
        ctx = span.context
        parent = span.parent
        mine = attrs.get(sc.EPISODE_ID) == self._episode.id or (
            root is not None
            and ctx is not None
            and ctx.trace_id == root.get_span_context().trace_id
            and parent is not None
            and parent.span_id == root.get_span_context().span_id
        )
        if mine:
            super().on_end(span)


class CassetteEpisode(Episode):
    """An :class:`Episode` that records its spans, tool results included, to a cassette, or answers its tool calls
    from one (:class:`~chaoskit.replay._cassette.Replay`), or both with a different file for each."""

    def __init__(
        self,
        name: str | None,
        plan: Plan | Mapping[str, Any] | None,
        *,
        record: str | os.PathLike[str] | None,
        replay: str | os.PathLike[str] | Cassette | Trace | None,
        on_miss: str,
        ignore: Mapping[str, Iterable[str]] | None,
        capture_content: bool | None,
        attributes: dict[str, Any],
    ) -> None:
        super().__init__(name, plan, capture_content=capture_content, **attributes)
        if not _config.CONFIG.trace and (record is not None or replay is not None):
            raise ConfigError(
                "episode(record=/replay=): needs tracing on (configure(trace=True)): the cassette is the trace"
            )
        self.record_path: Path | None = None if record is None else cassette_path(_fspath(record, "record"), name)
        self._writer: _EpisodeFile | None = None
        #: the model replies of this episode, for its recording (``record=``)
        self._model_replies: list[dict[str, Any]] = []
        #: where this episode's spans go while ``on_miss="record"`` may add them to the cassette
        self._addition: Path | None = None
        self._extra: _EpisodeFile | None = None
        if replay is not None:
            if isinstance(replay, Cassette):
                cassette = replay
            elif isinstance(replay, Trace):
                cassette = Cassette.from_trace(replay, name)
            else:
                cassette = Cassette.open(_fspath(replay, "replay"), name)
            self.answers = Replay(cassette, on_miss=on_miss, ignore=ignore)
            if on_miss == "record":
                if record is not None:
                    raise ConfigError("episode(record=..., on_miss='record'): give one, not both")
                if not Path(cassette.path).is_file():
                    raise ConfigError(
                        f"episode(on_miss='record'): {cassette.path} is not a cassette file to add to (a trace read "
                        "from a backend is replayed with on_miss='error' or 'passthrough')"
                    )
                self._addition = _part_path(Path(cassette.path))
        elif on_miss == "record":
            raise ConfigError("episode(on_miss='record'): needs replay=..., the cassette to add to")

    @property
    def records_models(self) -> bool:
        """Whether a model reply is kept for a cassette: this episode records one, or adds to one."""
        return self.record_path is not None or self._addition is not None

    def note_model_reply(self, key: str, messages: tuple[str, ...], reply: Any, *, live: bool) -> None:
        """Keep a model call's reply (plain data; redacted here) under its request hash (``chaoskit.replay``'s
        ``request_key``) for the recording; ``live``: the real model gave it (not the cassette), which
        ``on_miss="record"`` adds to the cassette."""
        reply = _attrs.redact(reply)
        if self.record_path is not None:
            with _LOCK:
                self._model_replies.append(
                    {"key": key, "messages": list(messages), "reply": reply, "call": len(self._model_replies) + 1}
                )
        if live and self.answers is not None:
            self.answers.add_model(key, messages, reply)

    def __enter__(self) -> CassetteEpisode:
        path = self.record_path
        if path is not None:
            key = str(path.resolve())
            with _LOCK:
                if key in _WRITING:
                    raise ConfigError(f"episode(record=...): {path} is being recorded by another episode now")
                _WRITING.add(key)
                if _Recording.open == 0:
                    _Recording.before = _config.CONFIG.record_results
                _Recording.open += 1
                # a cassette is the tool results too; set back when the last recording episode ends
                _config.CONFIG.record_results = True
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("", encoding="utf-8")
            except OSError:
                self._stop_recording(key)
                raise
        super().__enter__()
        if path is not None:
            self._writer = _EpisodeFile(str(path), self)
            add_processor(self._writer)
        if self._addition is not None:
            self._extra = _EpisodeFile(str(self._addition), self)
            add_processor(self._extra)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        super().__exit__(exc_type, exc, tb)
        replay = self.answers
        if exc is None and replay is not None and replay.on_miss == "error" and replay.misses:
            # the agent caught the miss (a tool error handler): the run still did not replay, so it stops here
            raise replay.misses[0]

    def _end_span(self) -> None:
        root = self.span
        replay = self.answers
        added = replay.added if replay is not None and self._addition is not None else None
        if root is not None:
            # what the spans do not hold goes on the episode's span before it ends
            if self._model_replies:
                root.set_attribute(sc.REPLAY_ANSWERS, json.dumps({"models": self._model_replies}, default=str))
            elif added is not None and (added["tools"] or added["models"]):
                root.set_attribute(sc.REPLAY_ANSWERS, json.dumps(added, default=str))
            if added is not None and replay is not None:
                root.set_attribute(sc.REPLAY_ADDS_TO, str(replay.cassette.episode.id))
        super()._end_span()
        writer, self._writer = self._writer, None
        if writer is not None and self.record_path is not None:
            remove_processor(writer)
            self._stop_recording(str(self.record_path.resolve()))
        extra, self._extra = self._extra, None
        if extra is not None and self._addition is not None and replay is not None:
            remove_processor(extra)
            try:
                if added is not None and (added["tools"] or added["models"]):
                    _append(Path(replay.cassette.path), self._addition)
            finally:
                self._addition.unlink(missing_ok=True)

    @staticmethod
    def _stop_recording(key: str) -> None:
        with _LOCK:
            _WRITING.discard(key)
            _Recording.open -= 1
            if _Recording.open == 0:
                _config.CONFIG.record_results = _Recording.before


def _part_path(cassette: Path) -> Path:
    # next to the cassette (same file system, so the final rename is atomic), named so that it is not a cassette
    return cassette.with_name(f".{cassette.name}.{os.getpid()}.{threading.get_ident()}.{id(cassette)}.part")


def _append(cassette: Path, part: Path) -> None:
    """Add the spans in ``part`` to ``cassette`` atomically: the new file is written whole beside it, then renamed
    over it, so a crash leaves the old cassette intact, never a partial one. Concurrent adders take turns (a lock
    on its folder), each reading the cassette as the previous one left it."""
    with _LOCK, _dir_lock(cassette.parent):
        body = cassette.read_bytes()
        extra = part.read_bytes()
        mode = stat.S_IMODE(cassette.stat().st_mode)
        fd, tmp = tempfile.mkstemp(prefix=f".{cassette.name}.", suffix=".tmp", dir=cassette.parent)
        try:
            os.chmod(tmp, mode)  # the cassette keeps its permissions (mkstemp makes the file private)
            with os.fdopen(fd, "wb") as out:
                out.write(body if not body or body.endswith(b"\n") else body + b"\n")
                out.write(extra)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, cassette)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


@contextlib.contextmanager
def _dir_lock(folder: Path) -> Iterator[None]:
    # the folder is locked, not a lock file beside the cassette (which would be left behind), nor the cassette
    # itself (the rename replaces the file that a lock would be held on)
    try:
        import fcntl
    except ImportError:  # not POSIX: the in-process lock alone
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _fspath(value: Any, what: str) -> str:
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise ConfigError(f"episode({what}=...): expected the path of a cassette file or directory, got {value!r}")
    return os.fspath(value)


def episode(
    name: str | None = None,
    plan: Plan | Mapping[str, Any] | None = None,
    *,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | Cassette | Trace | None = None,
    on_miss: str = "error",
    ignore: Mapping[str, Iterable[str]] | None = None,
    capture_content: bool | None = None,
    **attributes: Any,
) -> Episode:
    """Start an episode: ``with chaoskit.episode("refund", plan=plan) as ep: ...`` (see :class:`Episode`).

    ``record=DIR`` writes the episode's spans, every tool call's (redacted, capped) arguments and result
    included, to ``DIR/<name>.jsonl`` (a file path is used as it is): the cassette is the trace.
    ``replay=DIR`` (or a :class:`~chaoskit.Trace` already read, e.g. from Phoenix) answers every tool call from
    that recording instead of the real tool, matched by tool,
    arguments hash (``ignore={"tool": ["arg", ...]}`` leaves arguments out) and occurrence; the plan's faults
    apply on top. A call the recording cannot answer raises :class:`~chaoskit.replay.ReplayMiss` naming the
    nearest recorded call (``on_miss="error"``), calls the real tool (``"passthrough"``), or calls it and adds its
    answer to the cassette file (``"record"``: the episode is appended to it, atomically, when it ends).
    A LangChain model call made through ``ChaosMiddleware`` is recorded and replayed too, by its request's hash.
    """
    if record is None and replay is None:
        return Episode(name, plan, capture_content=capture_content, **attributes)
    return CassetteEpisode(
        name,
        plan,
        record=record,
        replay=replay,
        on_miss=on_miss,
        ignore=ignore,
        capture_content=capture_content,
        attributes=attributes,
    )
