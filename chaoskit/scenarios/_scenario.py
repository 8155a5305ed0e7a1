"""Scenario files: a task, an optional agent, the core's fault entries and what success means.

A directory or glob of scenario files is a battery. Errors name the file, the line and the key.
"""

from __future__ import annotations

import inspect
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from chaoskit._errors import PlanError
from chaoskit._refs import RefError, import_failure, import_ref
from chaoskit.plan._faults import Fault
from chaoskit.plan._fields import _is_int
from chaoskit.plan._locate import _line_for, _PlanErrorsInit, _suggest, raw_validation, validation_to_plan_error
from chaoskit.plan._model import Plan
from chaoskit.plan._yaml import load_yaml, read_source
from chaoskit.scenarios._files import expand
from chaoskit.scenarios._harness import success_from_list, success_list_with_lines, with_max_retries
from chaoskit.scenarios._servers import HttpUpstream, McpServer

__all__ = ["Scenario", "Success", "check_registry", "load_battery", "load_scenario", "load_scenarios", "resolve_ref"]

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_registry() -> dict[str, Callable[..., Any]]:
    """chaoskit.grading.checks.REGISTRY: the checks a scenario may name (one registry, no fallback list)."""
    import chaoskit.grading.checks as checks

    return dict(checks.REGISTRY)


def _known_checks() -> list[str]:
    return sorted(check_registry())


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
            raise ValueError(
                f"check {name!r} has no parameter {key!r}{hint}; "
                + (f"allowed: {', '.join(allowed)}" if allowed else "it takes none")
            )
        default = sig.parameters[key].default
        if isinstance(default, bool | int | float) and (
            isinstance(value, bool) != isinstance(default, bool) or not isinstance(value, int | float)
        ):
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


class Success(_PlanErrorsInit):
    """What a passing episode looks like. Also written as a list of one-key criteria (harness style,
    ``[{output_contains: "8080"}, {max_retries: 4}]``); ``max_retries: n`` bounds every tool to n + 1 attempts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    output_contains: list[str] = Field(default_factory=list)
    output_not_contains: list[str] = Field(default_factory=list)
    max_attempts: dict[str, int] = Field(default_factory=dict)
    min_attempts: dict[str, int] = Field(default_factory=dict)
    max_retries: int | None = None
    checks: list[str | dict[str, dict[str, Any]]] | None = None
    state: str | None = None
    required_tools: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _harness_style(cls, data: Any) -> Any:
        if isinstance(data, list):
            data = success_from_list(data)
        return with_max_retries(data)

    @field_validator("output_contains", "output_not_contains", "required_tools", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        # a single string is one entry; pydantic would reject it, and a user writing one needle means one
        return [v] if isinstance(v, str) else v

    @field_validator("output_contains", "output_not_contains", "required_tools")
    @classmethod
    def _not_blank(cls, v: list[str] | None) -> list[str] | None:
        for item in v or ():
            if not item.strip():
                # "" is in every output: a criterion that always holds would grade every episode a pass
                raise ValueError("an entry is empty; give the text (or tool name) it must match")
        return v

    @field_validator("max_retries", mode="before")
    @classmethod
    def _retries(cls, v: Any) -> Any:
        if v is None or (_is_int(v) and v >= 0):
            return v
        raise ValueError(
            f"must be a whole number of retries >= 0 (each tool may then be called that many times + 1), got {v!r}"
        )

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

    @field_validator("max_attempts", "min_attempts", mode="before")
    @classmethod
    def _counts(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for tool, n in v.items():
                if not isinstance(tool, str) or not tool.strip():
                    raise ValueError(f'keys are tool names (or "*" for every tool), got {tool!r}')
                if not _is_int(n):
                    raise ValueError(f"attempt count for {tool!r} must be a whole number, got {n!r}")
        return v

    @field_validator("max_attempts")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        for tool, n in v.items():
            if n < 0:
                raise ValueError(f"attempt count for {tool!r} must be >= 0, got {n}")
        return v

    @field_validator("min_attempts")
    @classmethod
    def _at_least_one(cls, v: dict[str, int]) -> dict[str, int]:
        for tool, n in v.items():
            if n < 1:
                # at least 0 attempts always holds: a criterion that can never fail
                raise ValueError(f"attempt count for {tool!r} must be >= 1, got {n}")
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


def _positive_seconds(v: Any) -> Any:
    if v is None:
        return v
    if isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < math.inf:
        return v
    raise ValueError(f"must be a number of seconds > 0, got {v!r}")


class Scenario(_PlanErrorsInit):
    """One scenario: ``name``, ``task``, optional ``agent``, ``faults``, ``success``, ``tags``; ``mcp`` names an
    MCP server whose tools the (command-line) agent reaches through ``chaoskit mcp-proxy``, ``http`` a REST API
    it reaches through ``chaoskit http-proxy``."""

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
    mcp: McpServer | None = None
    http: HttpUpstream | None = None

    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file the scenario came from."""
        return self._source

    @field_validator("success", mode="before")
    @classmethod
    def _success_keys(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            bad = [k for k in v if not isinstance(k, str)]
            if bad:  # pydantic would hand them to Success.__init__ as keywords: a TypeError
                raise ValueError(f"keys must be names, got {bad[0]!r}; allowed: {', '.join(Success.model_fields)}")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty; give the scenario a name, e.g. 'refund-after-500'")
        return v

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty; give the request the agent gets, e.g. 'Refund order 4832'")
        return v

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, v: Any) -> Any:
        if _is_int(v):
            return v
        raise ValueError(f"must be a whole number, got {v!r}")

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> Any:
        return _positive_seconds(v)

    @field_validator("agent")
    @classmethod
    def _agent(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty; give a 'module:factory' reference or leave it out")
        return v

    def plan(self, *, seed: int | None = None) -> Plan:
        """The scenario's own faults as a Plan."""
        plan = Plan(seed=self.seed if seed is None else seed, name=self.name, faults=list(self.faults))
        plan._source = self.source
        return plan

    def oracle(self) -> Callable[[Any], Any] | None:
        """The ``success.state`` end-state check, imported; None when the scenario has none."""
        if not self.success.state:
            return None
        fn: Callable[[Any], Any] = resolve_ref(self.success.state, source=self.source, field="success.state")
        return fn


def resolve_ref(ref: str, *, source: str | None = None, field: str | None = None, line: int | None = None) -> Any:
    """Import ``module:attr`` (attr may be dotted); errors name the source and field."""
    if not _is_ref(ref):
        raise PlanError(f"must be a 'module:attr' reference, got {ref!r}", source=source, field=field, line=line)
    module_name, _, attr = ref.partition(":")
    try:
        return import_ref(module_name, attr)
    except RefError as exc:
        if exc.error is not None:
            msg = f"cannot import module {module_name!r} for {ref!r}: {import_failure(exc.error)}"
        else:
            names = [n for n in dir(exc.owner) if not n.startswith("_")]
            msg = f"{ref!r}: {module_name} has no attribute {exc.missing!r}{_suggest(exc.missing, names)}"
        raise PlanError(msg, source=source, field=field, line=line) from None


def load_scenario(
    path_or_text: str | bytes | os.PathLike[str], *, source: str | None = None, resolve: bool = True
) -> Scenario:
    """Load and validate one scenario file (a path, or YAML text as str or UTF-8 bytes); ``resolve`` also
    imports its ``agent`` and ``state`` references. Bad input raises :class:`PlanError`."""
    text, src = read_source(path_or_text, source)
    data, lines = load_yaml(text, src)
    if not isinstance(data, Mapping):
        raise PlanError("a scenario must be a mapping with at least 'name' and 'task'", source=src, line=1)
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise PlanError(
            f"keys must be names, got {bad[0]!r}; allowed: {', '.join(Scenario.model_fields)}",
            source=src,
            line=_line_for((str(bad[0]),), lines) or 1,
        )
    data = success_list_with_lines(data, lines, src)
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
            fn = resolve_ref(
                scenario.success.state, source=src, field="success.state", line=_line_for(("success", "state"), lines)
            )
            if not callable(fn):
                raise PlanError(
                    f"{scenario.success.state!r} is not callable",
                    source=src,
                    field="success.state",
                    line=_line_for(("success", "state"), lines),
                )
    return scenario


def load_battery(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, resolve: bool = True
) -> list[Scenario]:
    """Every scenario under the given files, directories and globs, in path order; names must be unique.

    Under a directory, only YAML files in a ``scenarios/`` folder or with a top-level ``task:`` key are
    scenarios (see :func:`load_scenarios` for the count of the others)."""
    return load_scenarios(paths, resolve=resolve)[0]


def load_scenarios(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, resolve: bool = True
) -> tuple[list[Scenario], list[Path]]:
    """:func:`load_battery`, and the YAML files under the directories that were skipped as not scenarios."""
    found = expand(paths)
    scenarios: list[Scenario] = []
    names: dict[str, str] = {}
    for f in found.files:
        sc = load_scenario(f, resolve=resolve)
        if sc.name in names:
            raise PlanError(
                f"scenario name {sc.name!r} is already used by {names[sc.name]}", source=str(f), field="name"
            )
        names[sc.name] = str(f)
        scenarios.append(sc)
    return scenarios, found.skipped
