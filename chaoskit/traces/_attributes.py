"""Check a chaoskit span's attributes for type and range, and turn a tool span's attributes into its record."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from chaoskit.semconv import (
    ARGS,
    ARGS_HASH,
    ARGS_REDACTED_DIGESTS,
    ATTEMPT,
    EPISODE_ATTEMPTS,
    EPISODE_ERROR,
    EPISODE_ID,
    EPISODE_OUTCOME,
    EPISODE_OUTPUT,
    EPISODE_SUCCESS,
    ERROR_TYPE,
    EXCEPTION_MESSAGE,
    FAULT_AFTER_WRITE,
    FAULT_ASKS_FOR,
    FAULT_HTTP_STATUS,
    FAULT_INDEX,
    FAULT_INJECTED,
    FAULT_PREFIX,
    FAULT_RETRY_AFTER,
    FAULT_SKIPPED,
    FAULT_TEXT,
    FAULT_TEXT_DIGESTS,
    FAULT_TYPE,
    FAULT_VALUE,
    GEN_AI_AGENT_NAME,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_DESCRIPTION,
    GEN_AI_TOOL_NAME,
    HTTP_RESPONSE_STATUS_CODE,
    IDEMPOTENCY_KEY,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OUTCOME,
    OUTCOME_CANCELLED,
    OUTCOME_ERROR,
    OUTCOME_OK,
    RETRY_AFTER,
    SCENARIO,
    TOOL_EXECUTED,
    TOOL_IDEMPOTENT,
    TOOL_IRREVERSIBLE,
    TOOL_REFUSAL,
    TOOL_REFUSED,
    TOOL_RESULT_JSON,
)
from chaoskit.traces._records import AttemptRecord, new_attempt, param_key, show

_fast_loads: Callable[[str], Any] | None = None
with contextlib.suppress(ImportError):  # what orjson refuses (NaN, lone surrogates, deep nesting) goes to json
    from orjson import loads as _fast_loads
_LONG_DIGITS = re.compile(r"\d{19}")

__all__ = ["EPISODE", "OUTCOMES", "PREFIXES", "TOOL", "BadAttribute", "attempt_record", "boolean", "checked"]

#: the names of chaoskit's tool and episode spans start with these (``execute_tool search``)
TOOL = OP_EXECUTE_TOOL
EPISODE = OP_INVOKE_AGENT
#: the cheap name filter every reader applies before decoding attributes
PREFIXES = (TOOL, EPISODE)
#: the values ``chaoskit.outcome`` may take
OUTCOMES = (OUTCOME_OK, OUTCOME_ERROR, OUTCOME_CANCELLED)

_BOOL_KEYS = frozenset(
    {
        TOOL_EXECUTED,
        FAULT_INJECTED,
        TOOL_IRREVERSIBLE,
        TOOL_IDEMPOTENT,
        TOOL_REFUSED,
        TOOL_RESULT_JSON,
        FAULT_AFTER_WRITE,
        EPISODE_SUCCESS,
    }
)
_STR_KEYS = frozenset(
    {
        GEN_AI_TOOL_NAME,
        GEN_AI_TOOL_CALL_ID,
        GEN_AI_TOOL_CALL_RESULT,
        TOOL_REFUSAL,
        EXCEPTION_MESSAGE,
        ERROR_TYPE,
        OUTCOME,
        ARGS,
        ARGS_HASH,
        ARGS_REDACTED_DIGESTS,
        IDEMPOTENCY_KEY,
        FAULT_TYPE,
        FAULT_SKIPPED,
        FAULT_VALUE,
        FAULT_TEXT,
        EPISODE_OUTPUT,
        EPISODE_OUTCOME,
        EPISODE_ERROR,
        SCENARIO,
        GEN_AI_AGENT_NAME,
    }
)
#: whole numbers and the least value allowed
_INT_KEYS = {FAULT_INDEX: 0, EPISODE_ATTEMPTS: 0, FAULT_HTTP_STATUS: 100, HTTP_RESPONSE_STATUS_CODE: 0}
_SECONDS_KEYS = frozenset({RETRY_AFTER, FAULT_RETRY_AFTER})
#: list attributes (a tuple in memory, a list once exported): read as lists of strings, of what each holds
_LISTS = {FAULT_ASKS_FOR: "tool names", FAULT_TEXT_DIGESTS: "digests (strings)"}
_CHECKED = frozenset({ATTEMPT, EPISODE_ID, *_LISTS, *_BOOL_KEYS, *_STR_KEYS, *_INT_KEYS, *_SECONDS_KEYS})
#: the checked attributes whose value needs no look beyond its type (``type(v) is t``); None for the others
_FAST: dict[str, type | None] = {
    **dict.fromkeys(_CHECKED),
    **dict.fromkeys(_BOOL_KEYS, bool),
    **dict.fromkeys(_STR_KEYS - {OUTCOME}, str),
}
_UNCHECKED = object()
#: the whole-number attributes and the least value each may take
_LEAST = {ATTEMPT: 1, **_INT_KEYS}
#: ``chaoskit.fault.*`` attributes that describe the decision, not the fault's parameters
_NOT_PARAMS = frozenset(map(param_key, (FAULT_TYPE, FAULT_INDEX, FAULT_VALUE, FAULT_INJECTED, FAULT_SKIPPED)))


#: what every span of a kind carries: chaoskit writes these on every span, so a span without one was cut or edited
_WRITTEN = "which chaoskit writes on every tool span"
_REQUIRED: dict[str, tuple[tuple[str, str], ...]] = {
    TOOL: (
        (ATTEMPT, "the attempt number (a whole number >= 1), so its tool's attempts cannot be counted"),
        (OUTCOME, f"ok, error or cancelled ({_WRITTEN}), so whether the call succeeded cannot be known"),
        (
            TOOL_EXECUTED,
            f"true or false ({_WRITTEN}), so whether the real tool ran, and may have written, cannot be known",
        ),
        (
            TOOL_IRREVERSIBLE,
            f"true or false ({_WRITTEN}), so whether a repeat of it is a duplicate write cannot be known",
        ),
    ),
    EPISODE: ((EPISODE_ID, "the episode id (a string), so its attempts cannot be grouped"),),
}


class BadAttribute(ValueError):
    """A chaoskit attribute that grading cannot use; the message says which, and what is allowed."""


def checked(kind: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes with chaoskit's own ones checked for type and range (digit strings and "true" /
    "false" from backends that flatten tags to text are accepted and converted); :class:`BadAttribute` if not.
    ``attrs`` itself when it is a dict and nothing needed converting (the readers hand over a dict of their own)."""
    for required, what in _REQUIRED[kind]:
        if required not in attrs:
            raise BadAttribute(f"a chaoskit {kind} span must carry {required}, {what}; it is missing")
    if kind == TOOL and ARGS_HASH not in attrs and (ARGS in attrs or GEN_AI_TOOL_CALL_ARGUMENTS in attrs):
        recorded = ARGS if ARGS in attrs else GEN_AI_TOOL_CALL_ARGUMENTS
        raise BadAttribute(
            f"a chaoskit {kind} span that records {recorded} must carry {ARGS_HASH}, which chaoskit "
            "writes with them, so its repeats cannot be compared; it is missing"
        )
    # what a conversion changed (a digit string read as a number): most spans need none, and keep their dict
    changed: dict[str, Any] = {}
    for key, value in attrs.items():
        # the usual case first: an attribute that is not chaoskit's, or already of the type it must have
        fast = _FAST.get(key, _UNCHECKED)
        if fast is _UNCHECKED or type(value) is fast:
            continue
        if type(value) is int and value >= _LEAST.get(key, math.inf):
            continue  # an attempt number or a count as the typed reader gives it
        problem: str | None = None
        if key == ATTEMPT:
            n = _whole(value)
            if n is None or n < 1:
                problem = "expected chaoskit.attempt to be a whole number >= 1"
            elif n is not value:
                changed[key] = n
        elif key == EPISODE_ID:
            if not isinstance(value, str) or not value:
                problem = "expected chaoskit.episode.id to be a non-empty string"
        elif key in _BOOL_KEYS:
            b = boolean(value)
            if b is None:
                problem = f"expected {key} to be true or false"
            elif b is not value:
                changed[key] = b
        elif key in _STR_KEYS:
            if not isinstance(value, str):
                problem = f"expected {key} to be a string"
            elif key == OUTCOME and value not in OUTCOMES:
                problem = f"expected chaoskit.outcome to be one of {', '.join(OUTCOMES)}"
        elif key in _INT_KEYS:
            n = _whole(value)
            if n is None or n < _INT_KEYS[key]:
                problem = f"expected {key} to be a whole number >= {_INT_KEYS[key]}"
            elif n is not value:
                changed[key] = n
        elif key in _SECONDS_KEYS:
            x = _seconds(value)
            if x is None:
                problem = f"expected {key} to be a number of seconds >= 0"
            elif x is not value:
                changed[key] = x
        elif key in _LISTS:
            names = _as_list(value)
            if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
                problem = f"expected {key} to be a list of {_LISTS[key]}"
            elif names is not value:
                changed[key] = names
        if problem is not None:
            raise BadAttribute(f"{problem}, got {show(value)}")
    if changed:
        return {**attrs, **changed}
    return attrs if type(attrs) is dict else dict(attrs)


def attempt_record(
    trace_id: str,
    span_id: str,
    name: str,
    start_us: int,
    end_us: int,
    a: Mapping[str, Any],
    error_message: str | None,
    share: Callable[[str, str], str],
) -> AttemptRecord:
    """The record of a tool span from its :func:`checked` attributes; ``share`` keeps one copy of repeated strings."""
    tool = a.get(GEN_AI_TOOL_NAME)
    if tool is None and name.startswith(TOOL + " "):
        tool = name[len(TOOL) + 1 :]
    if not tool:
        raise BadAttribute("no tool name: expected gen_ai.tool.name or a span name 'execute_tool <tool>'")
    fault_type = a.get(FAULT_TYPE)
    if fault_type is not None and a.get(FAULT_SKIPPED) == fault_type:
        # decided, then skipped by the entry point after the span started (attributes cannot be removed)
        fault_type = None
    params: dict[str, Any] = {}
    if fault_type is not None:
        for k, v in a.items():
            if k.startswith(FAULT_PREFIX):
                short = k[len(FAULT_PREFIX) :]
                if short not in _NOT_PARAMS:
                    params[short] = v
    fault_index = a.get(FAULT_INDEX) if fault_type is not None else None
    raw_value = a.get(FAULT_VALUE)
    # chaoskit.args where written (traces of earlier releases, and the default), else the standard name (with
    # gen_ai_latest_experimental): the same text either way
    raw_args = a.get(ARGS)
    if raw_args is None:
        # a JSON string, or the conventions' structured form where a backend keeps it (read as it is)
        raw_args = a.get(GEN_AI_TOOL_CALL_ARGUMENTS)
    # the result a successful attempt returned, or what a refused one returned (recorded apart since this release)
    result = a.get(GEN_AI_TOOL_CALL_RESULT)
    if result is None:
        result = a.get(TOOL_REFUSAL)
    outcome = a[OUTCOME]
    error_type = a.get(ERROR_TYPE)
    # the exception's message: on the span (gen_ai_latest_experimental: span events are deprecated) or, as the
    # reader found it, in the ``exception`` event or the status description
    if error_type is not None and isinstance(exc_message := a.get(EXCEPTION_MESSAGE), str):
        error_message = exc_message
    eid = a.get(EPISODE_ID)
    # positional, in the order of AttemptRecord's fields (checked below, at import)
    return new_attempt(
        share(tool, tool),
        a[ATTEMPT],
        start_us / 1e6,
        end_us / 1e6,
        share(outcome, outcome),
        share(error_type, error_type) if error_type is not None else None,
        error_message if error_type is not None else None,
        share(fault_type, fault_type) if fault_type is not None else None,
        fault_index,
        params,
        a.get(FAULT_INJECTED) is True,
        _json_or_raw(raw_value) if raw_value is not None else None,
        a[TOOL_EXECUTED],
        a.get(ARGS_HASH),
        _json_or_raw(raw_args) if raw_args is not None else None,
        a.get(IDEMPOTENCY_KEY),
        a[TOOL_IRREVERSIBLE],
        a.get(GEN_AI_TOOL_CALL_ID),
        span_id,
        trace_id,
        share(eid, eid) if eid is not None else None,
        a.get(FAULT_SKIPPED),
        result,
        a.get(HTTP_RESPONSE_STATUS_CODE),
        a.get(RETRY_AFTER),
        a.get(TOOL_IDEMPOTENT) is True,
        a.get(TOOL_REFUSED) is True,
        a.get(TOOL_RESULT_JSON) is True,
        desc if isinstance(desc := a.get(GEN_AI_TOOL_DESCRIPTION), str) else None,
        _digests(a.get(ARGS_REDACTED_DIGESTS)),
    )


def _digests(raw: str | None) -> dict[str, str] | None:
    """The redacted arguments' digests (``chaoskit.args.redacted_digests``); what is not an object of strings is
    ignored, as a missing attribute is: it can only hide a match, never make one."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, str)} or None


_ORDER = (
    "tool attempt start_time end_time outcome error_type error_message fault_type fault_index fault_params injected "
    "injected_value executed args_hash args idempotency_key irreversible call_id span_id trace_id episode_id "
    "fault_skipped result observed_status observed_retry_after idempotent refused result_json description "
    "redacted_digests"
)
if " ".join(f.name for f in fields(AttemptRecord)) != _ORDER:  # pragma: no cover - a guard for who edits the record
    raise ImportError("attempt_record passes AttemptRecord's fields by position: update it with the record")


def _whole(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) < 20:
        return int(v)
    return None


def boolean(v: Any) -> bool | None:
    """A boolean, also written as the text true or false (any case); None otherwise."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    return None


def _seconds(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, int | float) and math.isfinite(v) and v >= 0:
        return float(v)
    return None


def _json_or_raw(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        # orjson when it reads the text exactly as json does: it turns integers past 64 bits into floats
        if _fast_loads is not None and not _LONG_DIGITS.search(text):
            try:
                return _fast_loads(text)
            except ValueError:
                pass
        return json.loads(text)
    except (ValueError, RecursionError):
        # capped attributes end in "…[+N chars]": keep the raw text rather than fail the read
        return text


def _as_list(value: Any) -> Any:
    # Jaeger (and other backends) flatten array attributes to a JSON string
    if isinstance(value, str) and value.startswith("["):
        decoded = _json_or_raw(value)
        return decoded if isinstance(decoded, list) else value
    if isinstance(value, tuple):
        return list(value)
    return value
