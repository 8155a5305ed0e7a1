"""Plan field types: each parser takes what a plan may say and raises one sentence saying what is allowed."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BeforeValidator

from chaoskit.plan._paths import PATH_SYNTAX, parse_path
from chaoskit.plan._triggers import window

__all__ = [
    "DataPath",
    "ExceptionName",
    "Fraction",
    "HTTPStatus",
    "OnCall",
    "PositiveInt",
    "Probability",
    "Retypes",
    "Seconds",
    "Seed",
    "ToolSelector",
    "Window",
]


# --- the triggers, shared by every fault ------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: object) -> object:
    # YAML 1.1 reads 1e-3 (no dot) as a string; a number written that way is still meant as a number
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _parse_on_call(v: object) -> object:
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return (v,)
    if isinstance(v, list | tuple) and v and all(_is_int(i) and i >= 1 for i in v):
        return tuple(v)
    raise ValueError(f"must be a call number (1 is the first call) or a list of them, got {v!r}")


def _parse_positive_int(v: object) -> object:
    if v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
        return v
    raise ValueError(f"must be a whole number >= 1, got {v!r}")


def _parse_calls(v: object) -> object:
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return str(v)
    if isinstance(v, str):
        try:
            lo, hi = window(v)
        except ValueError:
            pass
        else:
            if lo >= 1 and (hi is None or hi >= lo):
                return v.strip()
    raise ValueError(f'must be a window of call numbers such as "2-5" (calls 2 to 5) or "3-" (3 onwards), got {v!r}')


def _parse_probability(v: object) -> object:
    v = _number(v)
    if v is None:
        return None
    if isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v <= 1.0:
        return float(v)
    raise ValueError(f"must be a number from 0 to 1, got {v!r}")


def _parse_tool(v: object) -> object:
    if isinstance(v, str) and v:
        return v
    if isinstance(v, list | tuple) and v and all(isinstance(i, str) and i for i in v):
        return tuple(v)
    raise ValueError(f'must be a tool name, a list of tool names, or "*" for every tool, got {v!r}')


#: ``on_call``: one call number or a list of them, kept as a tuple
OnCall = Annotated[tuple[int, ...] | None, BeforeValidator(_parse_on_call)]
#: ``every``, ``times`` (and a fault's ``items``): a whole number >= 1
PositiveInt = Annotated[int | None, BeforeValidator(_parse_positive_int)]
#: ``calls``: a window of call numbers, kept as its text ("2-5", "3-", "4")
Window = Annotated[str | None, BeforeValidator(_parse_calls)]
#: ``probability``: a number from 0 to 1
Probability = Annotated[float | None, BeforeValidator(_parse_probability)]
#: ``tool``: a name, a glob, ``*``, or a list of them
ToolSelector = Annotated[str | tuple[str, ...], BeforeValidator(_parse_tool)]


# --- the faults' own parameters -------------------------------------------------------------------------


def _parse_seconds(v: object) -> object:
    v = _number(v)
    if v is None or (isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < math.inf):
        return v
    raise ValueError(f"must be a finite number of seconds >= 0, got {v!r}")


#: ``after_s``, ``delay_s``, ``retry_after``: a finite number of seconds >= 0
Seconds = Annotated[float | None, BeforeValidator(_parse_seconds)]


_EXCEPTIONS: dict[str, type[BaseException]] = {
    cls.__name__: cls
    for cls in (
        ConnectionError,
        ConnectionResetError,
        ConnectionRefusedError,
        ConnectionAbortedError,
        BrokenPipeError,
        TimeoutError,
        OSError,
        PermissionError,
        FileNotFoundError,
        RuntimeError,
        ValueError,
        KeyError,
        LookupError,
        MemoryError,
    )
}


def _parse_exception(v: object) -> object:
    if isinstance(v, str) and v in _EXCEPTIONS:
        return v
    raise ValueError(f"must be one of {', '.join(sorted(_EXCEPTIONS))}, got {v!r}")


#: ``exception``: the name of one of the exception classes above
ExceptionName = Annotated[str, BeforeValidator(_parse_exception)]


def _parse_status(v: object) -> object:
    if isinstance(v, int) and not isinstance(v, bool) and 400 <= v <= 599:
        return v
    raise ValueError(f"must be an HTTP error status from 400 to 599, got {v!r}")


#: ``status``: an HTTP error status, 400 to 599
HTTPStatus = Annotated[int, BeforeValidator(_parse_status)]


def _parse_fraction(v: object) -> object:
    if isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v < 1.0:
        return float(v)
    raise ValueError(f"must be the fraction to keep, from 0 up to (not including) 1, got {v!r}")


#: ``keep``: the fraction of a result to keep, from 0 up to (not including) 1
Fraction = Annotated[float, BeforeValidator(_parse_fraction)]


def _parse_data_path(v: object) -> object:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"must be a path ({PATH_SYNTAX}), got {v!r}")
    parse_path(v)
    return v


#: where in a nested result a data fault acts (see chaoskit.plan._paths); None = the top level
DataPath = Annotated[str | None, BeforeValidator(_parse_data_path)]


_RETYPES = ("str", "int", "float", "bool", "list", "null")


def _parse_retype(v: object) -> object:
    if isinstance(v, dict) and all(isinstance(k, str) and t in _RETYPES for k, t in v.items()):
        return v
    raise ValueError(f"must map field names to one of {', '.join(_RETYPES)}, got {v!r}")


#: ``retype``: field names mapped to the type their values turn into
Retypes = Annotated[dict[str, str], BeforeValidator(_parse_retype)]


# --- the plan's own ----------------------------------------------------------------------------------------


def _parse_seed(v: object) -> object:
    if _is_int(v):
        return v
    raise ValueError(f"must be a whole number, got {v!r}")


#: ``seed``: a whole number
Seed = Annotated[int, BeforeValidator(_parse_seed)]
