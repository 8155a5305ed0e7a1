"""Plan errors a person can act on: pydantic's errors as one PlanError with file, line, field, "did you mean"."""

from __future__ import annotations

import contextlib
import difflib
import functools
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from chaoskit._errors import PlanError

__all__ = ["format_loc", "raw_validation", "validation_to_plan_error"]

# set while a loader validates: models then let pydantic's errors through, for the loader to locate
_raw_errors = threading.local()


#: what other agent-test harnesses call chaoskit's keys and fault types: the "did you mean" for each
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "prompt": ("task",),
    "input": ("task",),
    "query": ("task",),
    "instruction": ("task",),
    "question": ("task",),
    "id": ("name",),
    "title": ("name",),
    "expect": ("success",),
    "expected": ("success",),
    "criteria": ("success",),
    "assertions": ("success",),
    "assert": ("success",),
    "chaos": ("faults",),
    "injections": ("faults",),
    "fault": ("faults", "type"),
    "kind": ("type",),
    "fault_type": ("type",),
    "tools": ("tool",),
    "target": ("tool",),
    "message": ("error",),
    "msg": ("error",),
    "value": ("garbage",),
    "call": ("on_call",),
    "nth_call": ("on_call",),
    "on_calls": ("on_call",),
    "after_calls": ("calls",),
    "rate": ("probability",),
    "chance": ("probability",),
    "p": ("probability",),
    "max_times": ("times",),
    "contains": ("output_contains",),
    "output_includes": ("output_contains",),
    "expected_output": ("output_contains",),
    "response_contains": ("output_contains",),
    "not_contains": ("output_not_contains",),
    "output_excludes": ("output_not_contains",),
    "retries": ("max_retries",),
    "max_retry": ("max_retries",),
    "max_tool_calls": ("max_attempts",),
    "max_calls": ("max_attempts",),
    "min_calls": ("min_attempts",),
    "end_state": ("state",),
    "oracle": ("state",),
    "must_call": ("required_tools",),
    "required": ("required_tools",),
    "exception_type": ("exception",),
    "delay": ("delay_s", "after_s"),
    "status_code": ("status",),
    "error_rate": ("probability",),
    "exception_message": ("error",),
    "fail": ("error",),
    "timeout_s": ("after_s", "timeout"),
    "network_error": ("error",),
    "server_error": ("http",),
    "http_500": ("http",),
    "slow": ("latency",),
    "delay_response": ("latency",),
    "truncate": ("partial",),
    "truncated": ("partial",),
    "drift": ("schema_drift",),
    "stale": ("garbage",),
    "injection": ("prompt_injection",),
}


def _suggest(word: str, choices: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" for ``word`` among ``choices``, or ""."""
    options = list(choices)
    for synonym in _SYNONYMS.get(word.lower(), ()):
        if synonym in options:
            return f" (did you mean {synonym!r}?)"
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@functools.cache
def _tagged(model: type[BaseModel]) -> Mapping[str, type[BaseModel]]:
    """The members of every tagged union under ``model`` (the fault types under a plan), by tag.

    pydantic puts a member's tag into an error's location; found from the model's own fields, so that this
    module needs no list of fault types.
    """
    found: dict[str, type[BaseModel]] = {}
    seen: set[type[BaseModel]] = set()

    def union(members: Any, tag: str) -> None:
        for member in typing.get_args(members):
            if isinstance(member, type) and issubclass(member, BaseModel) and tag in member.model_fields:
                for value in typing.get_args(member.model_fields[tag].annotation):
                    if isinstance(value, str):
                        found[value] = member
                walk(member)

    def walk(ann: Any) -> None:
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if ann in seen:
                return
            seen.add(ann)
            for field in ann.model_fields.values():
                if isinstance(field.discriminator, str):
                    union(field.annotation, field.discriminator)
                walk(field.annotation)
            return
        if typing.get_origin(ann) is Annotated:
            inner, *meta = typing.get_args(ann)
            tags = [m.discriminator for m in meta if isinstance(m, FieldInfo) and isinstance(m.discriminator, str)]
            for tag in tags:
                union(inner, tag)
            walk(inner)
            return
        for arg in typing.get_args(ann):
            walk(arg)

    walk(model)
    return found


def _line_for(loc: tuple[Any, ...], lines: Mapping[tuple[Any, ...], int]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def format_loc(loc: Iterable[Any]) -> str:
    """A field location as a user writes it: ``("faults", 0, "status")`` is ``faults[0].status``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _clean_loc(loc: tuple[Any, ...], tagged: Mapping[str, type[BaseModel]]) -> tuple[Any, ...]:
    # pydantic puts the discriminator tag (right after a fault's list index) and validator names into the
    # location; users never wrote those. A field that shares a type's name (``error``) is kept.
    out: list[Any] = []
    for i, p in enumerate(loc):
        if isinstance(p, str) and p.startswith("function-"):
            continue
        if isinstance(p, str) and p in tagged and i >= 1 and isinstance(loc[i - 1], int):
            continue
        out.append(p)
    return tuple(out)


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
    loc = (*prefix, *_clean_loc(tuple(first["loc"]), _tagged(model)))
    field = format_loc(loc) or None
    msg = str(first["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _owner_model(model, loc[len(prefix) :], first)
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
    tagged = _tagged(model)
    for i, p in enumerate(raw):
        # a discriminated fault's tag follows its list index (faults[0].http); a field that happens to share a
        # fault type's name (a scenario's http: key) is no tag
        if isinstance(p, str) and p in tagged and i >= 1 and isinstance(raw[i - 1], int):
            return tagged[p]
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


@contextlib.contextmanager
def raw_validation() -> Iterator[None]:
    """While a loader validates data that contains plans or faults, let pydantic's errors through so that
    the loader can turn them into one PlanError with its file and line."""
    before = getattr(_raw_errors, "on", False)
    _raw_errors.on = True
    try:
        yield
    finally:
        _raw_errors.on = before


class _PlanErrorsInit(BaseModel):
    """Models built directly in Python (``Plan(...)``, ``faults.HTTP(status=200)``) raise the same PlanError a
    plan file would, naming the field; inside a loader's validation the raw errors pass through to it."""

    def __init__(self, **data: Any) -> None:
        if getattr(_raw_errors, "on", False):
            super().__init__(**data)
            return
        with raw_validation():
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise validation_to_plan_error(exc, source="<python>", lines={}, model=type(self)) from None

    # pydantic's own constructors skip __init__; they raise the same PlanError (``Plan.model_validate(d)``)
    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """pydantic's ``model_validate``, raising :class:`PlanError` instead of ``ValidationError``."""
        return _checked(cls, obj, lambda: super(_PlanErrorsInit, cls).model_validate(obj, *args, **kwargs))

    @classmethod
    def model_validate_json(cls, json_data: Any, *args: Any, **kwargs: Any) -> Self:
        """pydantic's ``model_validate_json``, raising :class:`PlanError` instead of ``ValidationError``."""
        return _checked(cls, None, lambda: super(_PlanErrorsInit, cls).model_validate_json(json_data, *args, **kwargs))

    @classmethod
    def model_validate_strings(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """pydantic's ``model_validate_strings``, raising :class:`PlanError` instead of ``ValidationError``."""
        return _checked(cls, obj, lambda: super(_PlanErrorsInit, cls).model_validate_strings(obj, *args, **kwargs))


_M = TypeVar("_M", bound=BaseModel)


def _checked(model: type[BaseModel], obj: Any, build: Callable[[], _M]) -> _M:
    """Run a pydantic constructor; outside a loader, turn its ValidationError into a PlanError."""
    if isinstance(obj, Mapping):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:  # pydantic would pass them to __init__ as keywords: a TypeError, not a validation error
            raise PlanError(
                f"keys must be names, got {bad[0]!r}; allowed: {', '.join(model.model_fields)}", source="<python>"
            )
    if getattr(_raw_errors, "on", False):
        return build()
    with raw_validation():
        try:
            return build()
        except ValidationError as exc:
            raise validation_to_plan_error(exc, source="<python>", lines={}, model=model) from None
