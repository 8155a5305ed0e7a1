"""The attributes of an attempt span that depend on the call: the decided fault, and an HTTP error's status."""

from __future__ import annotations

from typing import Any

import chaoskit.engine._attrs as _attrs
import chaoskit.semconv as sc
from chaoskit.plan._faults import _FaultBase

__all__ = ["add_http_error", "fault_attributes"]

#: fault parameters that are recorded under another name, or not at all (too large, or recorded apart)
_PARAMS_APART = frozenset({"value", "garbage", "text"})


def fault_attributes(attrs: dict[str, Any], fault: _FaultBase, index: int | None) -> None:
    """Add the decided fault (type, plan index, parameters) to an attempt's start attributes."""
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
        attrs[sc.FAULT_ASKS_FOR] = list(getattr(fault, "asks_for", []))


def add_http_error(attrs: dict[str, Any], exc: BaseException) -> None:
    """Add the HTTP status and ``Retry-After`` an exception carries, injected or real."""
    # duck-typed so a real client's 429 (ToolHTTPError, or an exception with .status/.status_code
    # and .retry_after) is gradable from the trace like an injected one
    status = getattr(exc, "status", None)
    if status is None:
        status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        attrs[sc.HTTP_RESPONSE_STATUS_CODE] = status
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int | float) and not isinstance(retry_after, bool):
        attrs[sc.RETRY_AFTER] = float(retry_after)
