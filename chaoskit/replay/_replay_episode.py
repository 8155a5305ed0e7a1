"""``chaoskit.episode(record=..., replay=...)``: an episode written to a cassette, or answered from one."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

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
        if replay is not None:
            if isinstance(replay, Cassette):
                cassette = replay
            elif isinstance(replay, Trace):
                cassette = Cassette.from_trace(replay, name)
            else:
                cassette = Cassette.open(_fspath(replay, "replay"), name)
            self.answers = Replay(cassette, on_miss=on_miss, ignore=ignore)

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
        super()._end_span()
        writer, self._writer = self._writer, None
        if writer is not None and self.record_path is not None:
            remove_processor(writer)
            self._stop_recording(str(self.record_path.resolve()))

    @staticmethod
    def _stop_recording(key: str) -> None:
        with _LOCK:
            _WRITING.discard(key)
            _Recording.open -= 1
            if _Recording.open == 0:
                _config.CONFIG.record_results = _Recording.before


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
    nearest recorded call (``on_miss="error"``), or calls the real tool (``"passthrough"``).
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
