"""Scenario files: a task, an optional agent, the core's fault entries and what success means.

A directory or glob of scenario files is a battery. Errors name the file, the line and the key.
"""

from __future__ import annotations

import glob
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ._errors import PlanError
from ._plan import (
    Fault,
    Plan,
    _line_for,
    _suggest,
    load_yaml,
    raw_validation,
    read_source,
    validation_to_plan_error,
)

__all__ = ["Scenario", "Success", "check_registry", "load_battery", "load_scenario", "resolve_ref"]

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

#: check names known when chaoskit.checks cannot be imported (kept in step with chaoskit.checks)
_FALLBACK_CHECKS = (
    "max_attempts", "min_attempts", "no_duplicate_writes", "honors_retry_after", "no_retry_storm", "no_bluff",
    "no_fabrication", "reports_failure", "no_injection_followed",
)


def check_registry() -> dict[str, Callable[..., Any]] | None:
    """chaoskit.checks.REGISTRY, or None when that module is not available."""
    try:
        from . import checks
    except ImportError:
        return None
    return dict(checks.REGISTRY)


def _known_checks() -> list[str]:
    reg = check_registry()
    return sorted(reg) if reg is not None else list(_FALLBACK_CHECKS)


#: the runner passes these itself, from the scenario's other keys
_RUNNER_PARAMS = frozenset({"required_tools", "success"})


def _check_params(name: str, fn: Callable[..., Any], params: dict[str, Any]) -> None:
    """Reject parameters the check does not take, or of a kind it cannot use, when the file is loaded: a
    silently dropped parameter would grade the battery with a different check than the one written."""
    sig = inspect.signature(fn)
    allowed = [p for p in list(sig.parameters)[1:] if p not in _RUNNER_PARAMS]
    for key, value in params.items():
        if key not in allowed:
            hint = " (set it with success.required_tools)" if key == "required_tools" else ""
            raise ValueError(f"check {name!r} has no parameter {key!r}{hint}; "
                             + (f"allowed: {', '.join(allowed)}" if allowed else "it takes none"))
        default = sig.parameters[key].default
        if isinstance(default, bool | int | float) and (
                isinstance(value, bool) != isinstance(default, bool) or not isinstance(value, int | float)):
            kind = {bool: "true or false", int: "whole number"}.get(type(default), "number")
            raise ValueError(f"check {name!r}: {key} must be a {kind}, got {value!r}")
    try:
        fn(_EMPTY_TRACE, **params)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise ValueError(text if text.startswith(f"{name}:") else f"check {name!r}: {text}") from None


class _NoEpisodes:
    episodes: tuple[()] = ()
    attempts: tuple[()] = ()


_EMPTY_TRACE: Any = _NoEpisodes()


def _is_ref(v: object) -> bool:
    return isinstance(v, str) and bool(_REF.match(v))


class Success(BaseModel):
    """What a passing episode looks like."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    output_contains: list[str] = Field(default_factory=list)
    output_not_contains: list[str] = Field(default_factory=list)
    max_attempts: dict[str, int] = Field(default_factory=dict)
    min_attempts: dict[str, int] = Field(default_factory=dict)
    checks: list[str | dict[str, dict[str, Any]]] | None = None
    state: str | None = None
    required_tools: list[str] | None = None

    @field_validator("checks")
    @classmethod
    def _known(cls, v: list[str | dict[str, dict[str, Any]]] | None) -> list[str | dict[str, dict[str, Any]]] | None:
        if v is None:
            return v
        known = _known_checks()
        registry = check_registry()
        for item in v:
            names = [item] if isinstance(item, str) else list(item)
            if isinstance(item, dict) and len(item) != 1:
                raise ValueError(f"a check with parameters is written {{name: {{param: value}}}}, got {item!r}")
            for name in names:
                if name not in known:
                    raise ValueError(f"unknown check {name!r}{_suggest(name, known)}; known checks: {', '.join(known)}")
                if name in ("max_attempts", "min_attempts"):
                    raise ValueError(f"{name} takes a limit per tool: write it as success.{name}: {{tool: n}}")
                params = item.get(name) if isinstance(item, dict) else None
                if registry is not None:
                    _check_params(name, registry[name], dict(params or {}))
        return v

    @field_validator("max_attempts", "min_attempts")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        for tool, n in v.items():
            if n < 0:
                raise ValueError(f"attempt count for {tool!r} must be >= 0, got {n}")
        return v

    @field_validator("state")
    @classmethod
    def _ref(cls, v: str | None) -> str | None:
        if v is not None and not _is_ref(v):
            raise ValueError(f"must be a 'module:function' reference, got {v!r}")
        return v

    def check_specs(self) -> list[tuple[str, dict[str, Any]]] | None:
        """The scenario's checks as (name, params); None = the default checks."""
        if self.checks is None:
            return None
        out: list[tuple[str, dict[str, Any]]] = []
        for item in self.checks:
            if isinstance(item, str):
                out.append((item, {}))
            else:
                for name, params in item.items():
                    out.append((name, dict(params or {})))
        return out


class Scenario(BaseModel):
    """One scenario: ``name``, ``task``, optional ``agent``, ``faults``, ``success``, ``tags``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    task: str
    agent: str | None = None
    seed: int = 0
    faults: list[Fault] = Field(default_factory=list)
    success: Success = Field(default_factory=Success)
    tags: list[str] = Field(default_factory=list)
    timeout: float | None = None
    description: str | None = None

    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file the scenario came from."""
        return self._source

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    def plan(self, *, seed: int | None = None) -> Plan:
        """The scenario's own faults as a Plan."""
        plan = Plan(seed=self.seed if seed is None else seed, name=self.name, faults=list(self.faults))
        plan._source = self.source
        return plan

    def oracle(self) -> Callable[[Any], Any] | None:
        if not self.success.state:
            return None
        fn: Callable[[Any], Any] = resolve_ref(self.success.state, source=self.source, field="success.state")
        return fn


def resolve_ref(ref: str, *, source: str | None = None, field: str | None = None,
                line: int | None = None) -> Any:
    """Import ``module:attr`` (attr may be dotted); errors name the source and field."""
    if not _is_ref(ref):
        raise PlanError(f"must be a 'module:attr' reference, got {ref!r}", source=source, field=field, line=line)
    module_name, _, attr = ref.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlanError(f"cannot import module {module_name!r} for {ref!r}: {exc}", source=source, field=field,
                        line=line) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise PlanError(f"{ref!r}: {module_name} has no attribute {part!r}{_suggest(part, names)}",
                            source=source, field=field, line=line) from None
    return obj


def load_scenario(path_or_text: str | os.PathLike[str], *, source: str | None = None,
                  resolve: bool = True) -> Scenario:
    """Load and validate one scenario file; ``resolve`` also imports its ``agent`` and ``state`` references."""
    text, src = read_source(path_or_text, source)
    data, lines = load_yaml(text, src)
    if not isinstance(data, Mapping):
        raise PlanError("a scenario must be a mapping with at least 'name' and 'task'", source=src, line=1)
    try:
        with raw_validation():
            scenario = Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise validation_to_plan_error(exc, source=src, lines=lines, model=Scenario) from None
    scenario._source = src
    if resolve:
        if scenario.agent is not None and _is_ref(scenario.agent):
            resolve_ref(scenario.agent, source=src, field="agent", line=_line_for(("agent",), lines))
        if scenario.success.state:
            fn = resolve_ref(scenario.success.state, source=src, field="success.state",
                             line=_line_for(("success", "state"), lines))
            if not callable(fn):
                raise PlanError(f"{scenario.success.state!r} is not callable", source=src, field="success.state",
                                line=_line_for(("success", "state"), lines))
    return scenario


def _expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted([*p.rglob("*.yaml"), *p.rglob("*.yml")])
            if not found:
                raise PlanError("no scenario files (*.yaml, *.yml) in this directory", source=str(p))
            files.extend(found)
        elif p.exists():
            files.append(p)
        elif any(c in str(raw) for c in "*?["):
            matched = sorted(Path(m) for m in glob.glob(str(raw), recursive=True))
            if not matched:
                raise PlanError("no file matches this pattern", source=str(raw))
            files.extend(m for m in matched if m.is_file())
        else:
            raise PlanError("file not found", source=str(raw))
    seen: set[Path] = set()
    out = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def load_battery(paths: Iterable[str | os.PathLike[str]], *, resolve: bool = True) -> list[Scenario]:
    """Every scenario under the given files, directories and globs, in path order; names must be unique."""
    scenarios: list[Scenario] = []
    names: dict[str, str] = {}
    for f in _expand(paths):
        sc = load_scenario(f, resolve=resolve)
        if sc.name in names:
            raise PlanError(f"scenario name {sc.name!r} is already used by {names[sc.name]}", source=str(f),
                            field="name")
        names[sc.name] = str(f)
        scenarios.append(sc)
    return scenarios
