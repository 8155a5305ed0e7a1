"""The attributes of an attempt span that depend on the call: the decided fault, and an HTTP error's status.

Also what makes an applied fault visible at a glance in a trace view: its one-line summary (the status
description of an attempt failed by it, ``injected: http 429 (retry_after=2s)``) and the ``chaoskit.fault``
span event with its parameters. Both are built only when a fault fires, never on the no-fault path.
"""

from __future__ import annotations

import datetime
import email.utils
import math
from typing import Any

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit.plan._faults import _FaultBase

__all__ = ["add_http_error", "fault_attributes", "fault_event", "fault_summary"]

#: fault parameters that are recorded under another name, or not at all (too large, or recorded apart)
_PARAMS_APART = frozenset({"value", "garbage", "text"})


#: (id of the fault, plan index, attribute cap) -> (the fault, its attributes, its summary); faults are frozen
_described: dict[tuple[int, int | None, int], tuple[_FaultBase, dict[str, Any], str]] = {}
_DESCRIBED_MAX = 512


def _describe(fault: _FaultBase, index: int | None) -> tuple[_FaultBase, dict[str, Any], str]:
    """The fault's attributes and summary, built once per fault of a plan (a retried call meets it again)."""
    key = (id(fault), index, _config.CONFIG.max_attr_chars)
    hit = _described.get(key)
    if hit is not None and hit[0] is fault:
        return hit
    attrs: dict[str, Any] = {}
    _fault_attributes(attrs, fault, index)
    entry = (fault, attrs, _summary(fault))
    if len(_described) >= _DESCRIBED_MAX:
        _described.clear()
    _described[key] = entry
    return entry


def fault_attributes(attrs: dict[str, Any], fault: _FaultBase, index: int | None) -> None:
    """Add the decided fault (type, plan index, parameters) to an attempt's start attributes."""
    attrs.update(_describe(fault, index)[1])


def _fault_attributes(attrs: dict[str, Any], fault: _FaultBase, index: int | None) -> None:
    attrs[sc.FAULT_TYPE] = fault.type
    attrs[sc.FAULT_INDEX] = index
    for key, value in fault.params().items():
        if value is None or value is False or key in _PARAMS_APART:
            continue
        name = sc.FAULT_HTTP_STATUS if key == "status" else f"{sc.FAULT_PREFIX}{key}"
        attrs[name] = value if isinstance(value, bool | int | float | str) else _attrs.to_attr_json(value)
    status = getattr(fault, "status", None)
    if status is not None:
        attrs[sc.FAULT_HTTP_STATUS] = status
    if fault.type == "prompt_injection":
        attrs[sc.FAULT_TEXT] = _attrs.cap(getattr(fault, "text", ""))
        attrs[sc.FAULT_ASKS_FOR] = tuple(getattr(fault, "asks_for", ()))


#: parameters shown in the summary as seconds
_SECONDS = frozenset({"retry_after", "delay_s", "after_s"})
#: parameters never shown in the summary (long, free text, or shown as the status)
_NOT_SUMMED = _PARAMS_APART | {"status", "error", "asks_for"}


def fault_summary(fault: _FaultBase, index: int | None = None) -> str:
    """The fault in a few words: its type, its HTTP status, then its set parameters, e.g. ``http 429
    (retry_after=2s)``, ``latency (delay_s=0.5s)``, ``error (exception=ConnectionResetError)``."""
    return _describe(fault, index)[2]


def _summary(fault: _FaultBase) -> str:
    head = fault.type
    status = getattr(fault, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        head = f"{head} {status}"
    details = []
    for key, value in fault.params().items():
        if key in _NOT_SUMMED or value is None or value is False or value == [] or value == {}:
            continue
        if value is True:
            details.append(key)
        elif key in _SECONDS and isinstance(value, int | float):
            details.append(f"{key}={value:g}s")
        else:
            text = value if isinstance(value, str | int | float) else _attrs.to_attr_json(value)
            details.append(f"{key}={_attrs.cap(str(text), 80)}")
    return f"{head} ({', '.join(details)})" if details else head


def fault_event(fault: _FaultBase, index: int | None) -> dict[str, Any]:
    """The attributes of the ``chaoskit.fault`` event: the fault's type, plan index and parameters, under the
    names the attempt span uses, and its summary."""
    _, described, summary = _describe(fault, index)
    attrs = {k: v for k, v in described.items() if v is not None}
    attrs[sc.FAULT_SUMMARY] = summary
    return attrs


def add_http_error(attrs: dict[str, Any], exc: BaseException) -> None:
    """Add the HTTP status and ``Retry-After`` an exception carries, injected or real."""
    # duck-typed so a real client's 429 (ToolHTTPError, or an exception with .status/.status_code
    # and .retry_after) is gradable from the trace like an injected one
    status = getattr(exc, "status", None)
    if status is None:
        status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        attrs[sc.HTTP_RESPONSE_STATUS_CODE] = status
    seconds = retry_after_seconds(getattr(exc, "retry_after", None))
    if seconds is not None:
        attrs[sc.RETRY_AFTER] = seconds


def retry_after_seconds(value: Any) -> float | None:
    """A Retry-After as seconds: a number, a ``timedelta``, or the header's text (delay-seconds or an
    HTTP-date, measured from now); None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, datetime.timedelta):
        return max(0.0, value.total_seconds())
    if isinstance(value, bytes):
        value = value.decode("latin-1", "replace")
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return number if math.isfinite(number) and number >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
