"""What each fault does to a call: what happens instead of or before it, and how its result is changed.

``before`` decides what happens instead of / before the real call; ``after`` transforms the real result.
Both are pure apart from reading the scope's remembered results, so the sync and async drivers share them
and differ only in how they sleep and await."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoskit._errors import ToolHTTPError, ToolTimeout, default_http_message
from chaoskit.plan._faults import (
    _UNSET,
    AuthExpiredFault,
    CascadingFailureFault,
    EmptyFault,
    ErrorFault,
    GarbageFault,
    HTTPFault,
    LatencyFault,
    PartialFault,
    PromptInjectionFault,
    RateLimitFault,
    SchemaDriftFault,
    StaleStateFault,
    TimeoutFault,
    _FaultBase,
)
from chaoskit.plan._paths import apply_at, parse_path

#: faults whose effect is an exception the caller sees
RAISING = frozenset({"error", "timeout", "http", "rate_limit", "auth_expired", "cascading_failure"})
#: faults whose effect replaces or alters the data the caller gets back
DATA = frozenset({"empty", "partial", "schema_drift", "garbage", "prompt_injection", "stale_state"})


@dataclass(frozen=True, slots=True)
class Before:
    sleep: float = 0.0
    exc: BaseException | None = None
    call: bool = True
    value: Any = _UNSET


PASS = Before()


def make_exception(fault: _FaultBase, tool: str) -> BaseException:
    if isinstance(fault, ErrorFault):
        cls = fault.exception_class()
        msg = fault.error or _default_error_message(cls, tool)
        return cls(msg)
    if isinstance(fault, TimeoutFault):
        return ToolTimeout(fault.error or f"{tool} did not respond within {fault.after_s:g}s (read timeout)")
    if isinstance(fault, HTTPFault | RateLimitFault | AuthExpiredFault):
        status = fault.status
        retry_after = fault.retry_after
        msg = fault.error or f"{tool}: {default_http_message(status, retry_after)}"
        return ToolHTTPError(status, msg, retry_after=retry_after)
    if isinstance(fault, CascadingFailureFault):
        up = fault.cascaded_from
        why = f" (its dependency {up} is down)" if up else ""
        msg = fault.error or f"{tool}: {default_http_message(fault.status, fault.retry_after)}{why}"
        return ToolHTTPError(fault.status, msg, retry_after=fault.retry_after)
    raise TypeError(f"{fault.type} does not raise")


_MARK = "__chaoskit_fault__"


def mark(exc: BaseException, fault_type: str | None) -> None:
    """Mark ``exc`` as made by the engine for a fault of ``fault_type`` (read back by :func:`injected_fault`)."""
    object.__setattr__(exc, _MARK, fault_type)


def injected_fault(exc: BaseException) -> str | None:
    """The fault type (``"http"``, ``"timeout"``, ...) of an exception the engine injected; None for any other.

    For entry points that turn a tool's exception into a message or a crash reason and want to say whether
    chaoskit caused it: ``f"injected {t} fault" if (t := injected_fault(exc)) else "tool error"``.
    """
    value = getattr(exc, _MARK, None)
    return value if isinstance(value, str) else None


_CRASH = "__chaoskit_crash_reason__"


def explain_crash(exc: BaseException, reason: str) -> None:
    """Say why ``exc`` would end the agent's run, for the episode to record if it does end it.

    An entry point that sees a tool error leave its framework (a ToolNode that re-raised it) knows more than
    the episode will, but not whether something above catches it: the episode records the crash, with this
    reason, only when the exception really ends its block.
    """
    try:
        object.__setattr__(exc, _CRASH, reason)
    except (AttributeError, TypeError):  # an exception that takes no attributes: the default reason then
        pass


def crash_reason(exc: BaseException) -> str | None:
    """The reason :func:`explain_crash` gave for ``exc``, if any."""
    value = getattr(exc, _CRASH, None)
    return value if isinstance(value, str) else None


def _default_error_message(cls: type[BaseException], tool: str) -> str:
    if issubclass(cls, ConnectionResetError):
        return f"[Errno 104] Connection reset by peer while calling {tool}"
    if issubclass(cls, ConnectionRefusedError):
        return f"[Errno 111] Connection refused: {tool} is not accepting connections"
    if issubclass(cls, TimeoutError):
        return f"{tool} timed out"
    if issubclass(cls, PermissionError):
        return f"{tool}: permission denied"
    if issubclass(cls, FileNotFoundError):
        return f"{tool}: no such file or directory"
    return f"{tool} failed: service unavailable, try again later"


def before(fault: _FaultBase | None, tool: str, first_result: Any = _UNSET) -> Before:
    if fault is None:
        return PASS
    t = fault.type
    if t in RAISING:
        if isinstance(fault, HTTPFault) and fault.after_write:
            return PASS
        sleep = (fault.after_s or 0.0) if isinstance(fault, TimeoutFault) else 0.0
        return Before(sleep=float(sleep), exc=make_exception(fault, tool), call=False)
    if isinstance(fault, LatencyFault):
        return Before(sleep=float(fault.delay_s or 0.0))
    if isinstance(fault, EmptyFault) and fault.value is not _UNSET:
        return Before(call=False, value=copy.deepcopy(fault.value))
    if isinstance(fault, GarbageFault):
        if fault.mode == "value":
            return Before(call=False, value=copy.deepcopy(fault.garbage))
        if fault.mode == "stale" and first_result is not _UNSET:
            # a copy: the agent may have changed the object it got the first time
            return Before(call=False, value=_copy(first_result))
    return PASS


def raises_after(fault: _FaultBase) -> bool:
    """Whether the fault raises once the real tool has run (``after_write``)."""
    return isinstance(fault, HTTPFault) and fault.after_write


def after(fault: _FaultBase | None, tool: str, result: Any) -> Any:
    """The caller's view of the real ``result`` under a data fault (``after_write`` is the engine's to raise)."""
    if fault is None:
        return result
    if isinstance(fault, EmptyFault):
        return hollow(result)
    if isinstance(fault, PartialFault):
        if fault.path is not None:
            return apply_at(result, parse_path(fault.path), lambda v: truncate(v, fault.keep, fault.items))
        return truncate(result, fault.keep, fault.items)
    if isinstance(fault, SchemaDriftFault):
        if fault.path is not None:
            # aimed: only the records the path selects change, not the records nested inside them
            return apply_at(
                result, parse_path(fault.path), lambda v: drift(v, fault.drop, fault.rename, fault.retype, deep=False)
            )
        return drift(result, fault.drop, fault.rename, fault.retype)
    if isinstance(fault, GarbageFault):
        return off_by_one(result)
    if isinstance(fault, PromptInjectionFault):
        return inject(result, fault.text)
    if isinstance(fault, StaleStateFault):
        return stale_state(result, fault.set, fault.where, fault.path)
    return result


_COUNT_KEY = re.compile(r"(^|_)(count|total|n|num|size|hits|matches)$", re.I)


def _copy(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def hollow(value: Any) -> Any:
    """The same shape with no rows: lists emptied, strings blanked, counts zeroed, other scalars kept."""
    if isinstance(value, list):
        return []
    if isinstance(value, tuple):
        return ()
    if isinstance(value, str):
        return ""
    if isinstance(value, bytes):
        return b""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(v, list | dict):
                out[k] = type(v)()
            elif isinstance(v, tuple):
                out[k] = ()  # a namedtuple cannot be built empty; a plain empty tuple keeps "no rows"
            elif isinstance(v, int) and not isinstance(v, bool) and _COUNT_KEY.search(str(k)):
                out[k] = 0
            else:
                out[k] = v
        return out
    return None


def truncate(value: Any, keep: float, items: int | None) -> Any:
    if isinstance(value, str | bytes):
        return value[: int(len(value) * keep)]
    if isinstance(value, list | tuple):
        n = items if items is not None else int(len(value) * keep)
        return value[: min(n, max(len(value) - 1, 0))]
    if isinstance(value, dict):
        n = max(1, math.floor(len(value) * keep)) if len(value) > 1 else 0
        return dict(list(value.items())[:n])
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


_RETYPE: dict[str, Callable[[Any], Any]] = {
    "str": lambda v: str(v),
    "int": lambda v: int(v) if isinstance(v, int | float) or (isinstance(v, str) and v.isdigit()) else 0,
    "float": lambda v: float(v) if isinstance(v, int | float) else 0.0,
    "bool": lambda v: bool(v),
    "list": lambda v: v if isinstance(v, list) else [v],
    "null": lambda v: None,
}


def drift(value: Any, drop: list[str], rename: dict[str, str], retype: dict[str, str], *, deep: bool = True) -> Any:
    """``value``'s records with fields dropped, renamed or retyped; ``deep`` reaches the records nested in
    lists and dicts at any depth (``{"results": [{"status": ...}]}``), as real APIs return them."""
    if not (drop or rename or retype):
        # the unconfigured default: a "v2" API that switched its keys to camelCase, or wraps its payload
        if isinstance(value, list):
            return [drift(v, drop, rename, retype, deep=deep) for v in value]
        renamed = _camel_keys(value, deep)
        if isinstance(value, dict) and _same_keys(renamed, value):
            return {"data": value, "apiVersion": "2"}
        return renamed
    return _drift(value, drop, rename, retype, deep)


def _drift(value: Any, drop: list[str], rename: dict[str, str], retype: dict[str, str], deep: bool) -> Any:
    if isinstance(value, list):
        return [_drift(v, drop, rename, retype, deep) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for k, v in value.items():
        if k in drop:
            continue
        if k in retype:
            v = _RETYPE[retype[k]](v)
        elif deep:
            v = _drift(v, drop, rename, retype, deep)
        out[rename.get(k, k)] = v
    return out


def _camel_keys(value: Any, deep: bool) -> Any:
    if isinstance(value, list):
        return [_camel_keys(v, deep) for v in value]
    if not isinstance(value, dict):
        return value
    return {_camel(k) if isinstance(k, str) else k: _camel_keys(v, deep) if deep else v for k, v in value.items()}


def _same_keys(a: Any, b: Any) -> bool:
    """Whether two equal values also spell every key alike (camelCase changed nothing at any depth)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same_keys(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return all(_same_keys(x, y) for x, y in zip(a, b, strict=True))
    return True


def off_by_one(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, dict):
        return {k: off_by_one(v) for k, v in value.items()}
    if isinstance(value, list):
        return [off_by_one(v) for v in value]
    if isinstance(value, tuple):
        return tuple(off_by_one(v) for v in value)
    if isinstance(value, str):
        # numbers written in text shift too ("order 4832" -> "order 4833"): what a stale cache looks like
        # a decimal shifts by its whole part ("19.99" -> "20.99"), never digit run by digit run ("20.100")
        return re.sub(r"(\d{1,4000})(\.\d{1,4000})?", lambda m: str(int(m.group(1)) + 1) + (m.group(2) or ""), value)
    return value


def inject(value: Any, text: str) -> Any:
    if isinstance(value, str):
        return f"{value}\n\n{text}"
    if isinstance(value, dict):
        return {**value, "note": text}
    if isinstance(value, list):
        return [*value, text]
    return f"{value}\n\n{text}"


def stale_state(value: Any, fields: dict[str, Any], where: dict[str, Any] | None, path: str | None) -> Any:
    """``value`` with ``fields`` forced in its records: without ``path``, in every record (a dict, at any
    depth) that already has one of them; with ``path``, in the records it selects (a list selected: its
    dicts), added where missing. ``where`` keeps only records whose fields equal it. Raises ValueError when
    no value changes, so a fault that altered nothing is reported as skipped, never as injected."""
    changed = 0

    def force(rec: Any, add: bool) -> Any:
        nonlocal changed
        if not isinstance(rec, dict) or (where and any(rec.get(k, _UNSET) != v for k, v in where.items())):
            return rec
        new = {k: v for k, v in fields.items() if (add or k in rec) and rec.get(k, _UNSET) != v}
        if not new:
            return rec
        changed += 1
        return {**rec, **copy.deepcopy(new)}

    def deep(v: Any) -> Any:
        if isinstance(v, list | tuple):
            return type(v)(deep(x) for x in v) if isinstance(v, list) else tuple(deep(x) for x in v)
        if isinstance(v, dict):
            return force({k: deep(x) for k, x in v.items()}, False)
        return v

    if path is None:
        out = deep(value)
    else:
        out = apply_at(
            value,
            parse_path(path),
            lambda v: [force(x, True) for x in v] if isinstance(v, list) else force(v, True),
        )
    if not changed:
        scope = f" at {path}" if path else ""
        raise ValueError(f"no record{scope} has {', '.join(fields)} to make stale (or it already has that value)")
    return out
