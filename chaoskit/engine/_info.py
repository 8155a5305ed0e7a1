"""What the engine reports about one finished tool attempt: :class:`AttemptInfo`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["OK_FIELDS", "AttemptInfo", "RawAttempt", "from_raw", "tool_name"]


@dataclass(frozen=True, slots=True)
class AttemptInfo:
    """One finished tool attempt, as passed to ``on_attempt`` hooks and listed in ``episode.attempts``.

    ``outcome`` is ``ok``, ``error`` (raised, or returned an error value: then ``refused`` is True and
    ``error_type`` is ``ReturnedError``) or ``cancelled`` (a ``BaseException`` that is not an ``Exception``:
    ``asyncio.CancelledError``, ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``). ``args_hash`` is
    None when the entry point could not see the arguments, and when tracing is off (nothing is described).
    """

    tool: str
    attempt: int
    outcome: str
    fault_type: str | None
    fault_index: int | None
    error_type: str | None
    error_message: str | None
    injected: bool
    executed: bool
    irreversible: bool
    args_hash: str | None
    idempotency_key: str | None
    call_id: str | None
    episode_id: str | None
    start_time: float
    end_time: float
    span_id: str | None
    trace_id: str | None
    refused: bool = False
    idempotent: bool = False


#: an attempt as the engine records it on the hot path: AttemptInfo's fields in order, except that the span
#: context stands in for ``span_id`` and ``trace_id`` (formatting them, and building the frozen AttemptInfo,
#: costs more than the rest of the record; both wait until someone reads ``episode.attempts``); or the
#: short record of an ok attempt (:data:`OK_FIELDS`)
RawAttempt = tuple[Any, ...]


#: how many fields a short record has: an ``ok`` attempt with no fault, recorded on the hot path as
#: ``(spec, attempt, args_hash, idempotency_key, call_id, episode_id, start_time, end_time, span context)``
OK_FIELDS = 9


def from_raw(raw: RawAttempt | AttemptInfo) -> AttemptInfo:
    """The :class:`AttemptInfo` of a recorded attempt (an AttemptInfo is returned as it is)."""
    if isinstance(raw, AttemptInfo):
        return raw
    if len(raw) == OK_FIELDS:
        spec, n, args_hash, idem, call_id, episode_id, start, end, ctx = raw
        raw = (spec.name, n, "ok", None, None, None, None, False, True, spec.irreversible, args_hash, idem, call_id)
        raw = (*raw, episode_id, start, end, ctx, False, spec.idempotent)
    *head, ctx, refused, idempotent = raw
    valid = ctx is not None and ctx.is_valid
    fields: tuple[Any, ...] = (
        *head,
        f"{ctx.span_id:016x}" if valid else None,
        f"{ctx.trace_id:032x}" if valid else None,
        refused,
        idempotent,
    )
    return AttemptInfo(*fields)


def tool_name(raw: RawAttempt | AttemptInfo) -> str:
    """The tool of a recorded attempt, without building its AttemptInfo."""
    if isinstance(raw, AttemptInfo):
        return raw.tool
    first = raw[0]
    return first if isinstance(first, str) else str(first.name)
