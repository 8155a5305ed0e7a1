"""The records the checks read: one tool attempt, one episode, and the error for a trace that cannot be graded."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.semconv import FAULT_AFTER_WRITE, FAULT_EXCEPTION, FAULT_HTTP_STATUS, FAULT_PREFIX, FAULT_RETRY_AFTER

__all__ = [
    "ANSWER_KEPT",
    "AttemptRecord",
    "EpisodeRecord",
    "TraceReadError",
    "attempt_order",
    "new_attempt",
    "param_key",
    "show",
]


def param_key(attribute: str) -> str:
    """The key in :attr:`AttemptRecord.fault_params` of a ``chaoskit.fault.*`` attribute (``text`` for
    ``chaoskit.fault.text``)."""
    return attribute.removeprefix(FAULT_PREFIX)


def show(value: Any, limit: int = 60) -> str:
    """A value for an error message: its repr, on one line, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


_RETRY_AFTER = param_key(FAULT_RETRY_AFTER)
_HTTP_STATUS = param_key(FAULT_HTTP_STATUS)
_AFTER_WRITE = param_key(FAULT_AFTER_WRITE)
#: faults that leave the answer the caller gets as the tool gave it: a delay, and the MCP proxy's protocol faults
#: (a list_changed notice after the answer, a tool gone for later calls, a slow initialize)
ANSWER_KEPT = frozenset({"latency", "list_changed", "tool_disappears", "slow_initialize"})
_EXCEPTION = param_key(FAULT_EXCEPTION)


class TraceReadError(ChaoskitError, ValueError):
    """A trace file or object could not be read: names the file, the line (where known) and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = source or "<trace>"
        if line is not None:
            where = f"{where}, line {line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One tool attempt as read from its ``execute_tool`` span. Times are epoch seconds (µs precision)."""

    tool: str
    attempt: int
    start_time: float
    end_time: float
    outcome: str
    error_type: str | None
    error_message: str | None
    fault_type: str | None
    fault_index: int | None
    fault_params: dict[str, Any]
    injected: bool
    injected_value: Any
    executed: bool
    args_hash: str | None
    args: Any
    idempotency_key: str | None
    irreversible: bool
    call_id: str | None
    span_id: str
    trace_id: str
    episode_id: str | None
    #: a fault type the entry point could not inject (``chaoskit.fault.skipped``)
    fault_skipped: str | None = None
    #: the tool's result text when ``configure(record_results=True)`` put it on the span
    result: str | None = None
    #: status and Retry-After of any HTTP error the caller saw, injected or real
    observed_status: int | None = None
    observed_retry_after: float | None = None
    #: the tool was declared ``idempotent=True`` (``chaoskit.tool.idempotent``): repeating it is harmless
    idempotent: bool = False
    #: the tool itself refused the call by returning an error value (``chaoskit.tool.refused``), not raising
    refused: bool = False
    #: ``result`` is the JSON of a value the tool returned, not its text (``chaoskit.tool.result.json``)
    result_json: bool = False
    #: the tool's description (``gen_ai.tool.description``) when the span carries one
    description: str | None = None
    #: dotted argument path -> the salted digest of the value ``args`` shows as ``[REDACTED]``
    #: (``chaoskit.args.redacted_digests``): equal digests in one episode are equal values
    redacted_digests: dict[str, str] | None = None

    @property
    def clean_success(self) -> bool:
        """The tool answered and no fault altered what the caller got (latency only delays; the MCP proxy's
        protocol faults act around the answer, not on it)."""
        return self.outcome == "ok" and (self.fault_type is None or self.fault_type in ANSWER_KEPT)

    @property
    def may_have_written(self) -> bool:
        """The real tool ran and did not reject the call itself: a success, an injected after_write error, or a call
        cancelled while the tool ran (``asyncio.wait_for`` cancelling a payment mid-write may have charged the card)."""
        if not self.executed or self.refused:
            return False
        return self.outcome in ("ok", "cancelled") or self.injected

    @property
    def retry_after(self) -> float | None:
        """Seconds the failure asked to wait: the fault's ``retry_after``, else a real error's Retry-After."""
        value = self.fault_params.get(_RETRY_AFTER)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return self.observed_retry_after if self.outcome == "error" else None

    @property
    def http_status(self) -> int | None:
        """The HTTP status of the failure: the fault's ``http.status``, else a real error's status."""
        value = self.fault_params.get(_HTTP_STATUS)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return self.observed_status if self.outcome == "error" else None

    def describe_fault(self) -> str:
        """A few words for messages: ``an HTTP 500 (after_write)``, ``a timeout``, ``no fault``."""
        t = self.fault_type
        status = self.http_status
        if t is None and status is None:
            return "no fault"
        if status is not None:
            text = f"an HTTP {status}"
            if self.fault_params.get(_AFTER_WRITE):
                text += " (after_write)"
            ra = self.retry_after
            if ra is not None:
                text += f" (Retry-After {ra:g}s)"
            return text
        if t is None:
            return "no fault"
        return {
            "timeout": "a timeout",
            "error": f"an injected {self.fault_params.get(_EXCEPTION, 'error')}",
            "empty": "an empty result",
            "garbage": "garbage data",
            "partial": "a partial result",
            "schema_drift": "a schema drift",
            "prompt_injection": "a prompt injection",
            "latency": "added latency",
            "stale_state": "stale state",
            "cascading_failure": "a cascading failure",
        }.get(t, f"a {t} fault")


_SLOT_SETTERS = tuple(getattr(AttemptRecord, f.name).__set__ for f in fields(AttemptRecord))


def new_attempt(*values: Any) -> AttemptRecord:
    """An AttemptRecord from all its fields, in their declared order, set straight into its slots: the same record
    as ``AttemptRecord(...)`` makes, without the frozen dataclass's ``object.__setattr__`` for each of 28 fields
    (40% of building one, and a record is built for every tool span read)."""
    if len(values) != len(_SLOT_SETTERS):
        raise TypeError(f"new_attempt takes the {len(_SLOT_SETTERS)} fields of AttemptRecord, got {len(values)}")
    record = object.__new__(AttemptRecord)
    for put, value in zip(_SLOT_SETTERS, values, strict=True):
        put(record, value)
    return record


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One episode (``invoke_agent`` root span) and its attempts in time order.

    ``id`` is None for attempts made outside any episode; fields the root span would give are None when
    the root span is missing from the export (e.g. a file cut short).
    """

    id: str | None
    name: str | None
    output: str | None
    outcome: str | None
    error: str | None
    trace_id: str | None
    span_id: str | None
    start_time: float | None
    end_time: float | None
    attributes: dict[str, Any]
    attempts: tuple[AttemptRecord, ...]

    def tools(self) -> list[str]:
        """Tool names in order of first attempt."""
        return list(dict.fromkeys(a.tool for a in self.attempts))

    def attempts_of(self, tool: str) -> list[AttemptRecord]:
        """The attempts of ``tool``, in time order."""
        return [a for a in self.attempts if a.tool == tool]


def attempt_order(a: AttemptRecord) -> tuple[float, int, str]:
    """The sort key of attempts: start time, then attempt number, then span id."""
    return (a.start_time, a.attempt, a.span_id)
