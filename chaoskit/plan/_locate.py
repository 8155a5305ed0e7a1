"""Plan errors that a person can act on: pydantic's error list turned into one PlanError naming the file, the
line, the field and what is allowed, with a "did you mean" that knows other harnesses' words."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from chaoskit._errors import PlanError

__all__ = ["format_loc", "validation_to_plan_error"]


#: what other agent-test harnesses call chaoskit's keys and fault types: the "did you mean" for each
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "prompt": ("task",), "input": ("task",), "query": ("task",), "instruction": ("task",), "question": ("task",),
    "id": ("name",), "title": ("name",), "expect": ("success",), "expected": ("success",),
    "criteria": ("success",), "assertions": ("success",), "assert": ("success",), "chaos": ("faults",),
    "injections": ("faults",), "fault": ("faults", "type"), "kind": ("type",), "fault_type": ("type",),
    "tools": ("tool",), "target": ("tool",), "message": ("error",), "msg": ("error",), "value": ("garbage",),
    "call": ("on_call",), "nth_call": ("on_call",), "on_calls": ("on_call",), "after_calls": ("calls",),
    "rate": ("probability",), "chance": ("probability",), "p": ("probability",), "max_times": ("times",),
    "contains": ("output_contains",), "output_includes": ("output_contains",),
    "expected_output": ("output_contains",), "response_contains": ("output_contains",),
    "not_contains": ("output_not_contains",), "output_excludes": ("output_not_contains",),
    "retries": ("max_retries",), "max_retry": ("max_retries",), "max_tool_calls": ("max_attempts",),
    "max_calls": ("max_attempts",), "min_calls": ("min_attempts",), "end_state": ("state",),
    "oracle": ("state",), "must_call": ("required_tools",), "required": ("required_tools",),
    "exception_type": ("exception",), "delay": ("delay_s", "after_s"), "status_code": ("status",),
    "error_rate": ("probability",), "exception_message": ("error",), "fail": ("error",),
    "timeout_s": ("after_s", "timeout"), "network_error": ("error",), "server_error": ("http",),
    "http_500": ("http",), "slow": ("latency",), "delay_response": ("latency",), "truncate": ("partial",),
    "truncated": ("partial",), "drift": ("schema_drift",), "stale": ("garbage",), "injection": ("prompt_injection",),
}


def _suggest(word: str, choices: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" for ``word`` among ``choices``, or ""."""
    options = list(choices)
    for synonym in _SYNONYMS.get(word.lower(), ()):
        if synonym in options:
            return f" (did you mean {synonym!r}?)"
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _fault_classes() -> Mapping[str, type[BaseModel]]:
    from chaoskit.plan._model import _FAULT_CLASSES  # _plan imports this module: look the classes up when needed

    return _FAULT_CLASSES


def _line_for(loc: tuple[Any, ...], lines: Mapping[tuple[Any, ...], int]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def format_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic puts the discriminator tag (right after a fault's list index) and validator names into the
    # location; users never wrote those. A field that shares a type's name (``error``) is kept.
    out: list[Any] = []
    for i, p in enumerate(loc):
        if isinstance(p, str) and p.startswith("function-"):
            continue
        if isinstance(p, str) and p in _fault_classes() and i >= 1 and isinstance(loc[i - 1], int):
            continue
        out.append(p)
    return tuple(out)


def _allowed_keys(model: type[BaseModel]) -> str:
    return ", ".join(model.model_fields)


def validation_to_plan_error(
    exc: ValidationError,
    *,
    source: str,
    lines: Mapping[tuple[Any, ...], int],
    model: type[BaseModel],
    prefix: tuple[Any, ...] = (),
    data: Any = None,
) -> PlanError:
    """Turn pydantic's error list into one PlanError naming source, line, field and what is allowed."""
    errors = exc.errors(include_url=False)
    # a misspelt key also shows up as its field "missing": name the misspelling, it says how to fix both
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = (*prefix, *_clean_loc(tuple(first["loc"])))
    field = format_loc(loc) or None
    msg = str(first["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _owner_model(model, loc[len(prefix):], first)
        name = str(loc[-1])
        allowed = list(owner.model_fields) if owner is not None else []
        msg = f"unknown key {name!r}{_suggest(name, allowed)}"
        if allowed:
            msg += f"; allowed here: {', '.join(allowed)}"
    elif kind == "missing":
        msg = "this field is required"
    elif "input" in first and kind not in ("value_error", "assertion_error"):
        msg += f" (got {first['input']!r})"
    more = len(errors) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return PlanError(msg, source=source, line=_line_for(loc, lines), field=field)


def _owner_model(model: type[BaseModel], loc: tuple[Any, ...], err: Any) -> type[BaseModel] | None:
    """The model class that owns the field at ``loc[:-1]`` (for listing allowed keys)."""
    raw = tuple(err["loc"])
    for p in raw:
        if isinstance(p, str) and p in _fault_classes():
            return _fault_classes()[p]
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        ann = field.annotation
        current = _first_model(ann)
        if current is None:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _first_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None
