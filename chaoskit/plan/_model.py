"""The Plan: a frozen seed and list of faults, loaded from YAML or built in Python, and the pure fault decision."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.plan._faults import _UNSET, Fault, GarbageFault, _FaultBase
from chaoskit.plan._fields import Seed
from chaoskit.plan._locate import _line_for, _PlanErrorsInit, _suggest, raw_validation, validation_to_plan_error
from chaoskit.plan._triggers import CallState, Trigger, call_gate, match, times, uses
from chaoskit.plan._yaml import load_yaml, read_source

__all__ = ["MODEL_KEY", "Plan", "PlanRuntime", "ToolRules", "model_key", "set_runtime"]

#: the prefix of the name a model's calls are counted and decided under: no tool name holds a NUL, so a
#: model's counter, ``times`` budget and ``probability`` draws never mix with a tool's
MODEL_KEY = "\x00model:"


def model_key(model: str) -> str:
    """The name the calls of ``model`` are counted and decided under (see :data:`MODEL_KEY`)."""
    return MODEL_KEY + model


class PlanRuntime(Protocol):
    """What runs plans: the engine keeps each plan's call counters and makes a plan active.

    The plan layer holds no run state, so ``Plan.activate`` and ``Plan.reset`` ask the runtime that
    ``chaoskit.engine`` installs with :func:`set_runtime` when it is imported.
    """

    def activate(self, plan: Plan) -> AbstractContextManager[Plan]:
        """Make ``plan`` active in the current context (thread / asyncio task), with fresh call counters."""
        ...

    def reset(self, plan: Plan) -> None:
        """Forget the call counters kept for uses of ``plan`` outside any episode or activation."""
        ...


_runtime: PlanRuntime | None = None


def set_runtime(runtime: PlanRuntime) -> None:
    """Install the runtime that activates plans and keeps their counters; ``chaoskit.engine`` calls it once."""
    global _runtime
    _runtime = runtime


def _get_runtime() -> PlanRuntime:
    if _runtime is None:
        raise ChaoskitError(
            "no plan runtime is installed: import chaoskit (its engine runs plans) before "
            "plan.activate() or plan.reset()"
        )
    return _runtime


class Plan(_PlanErrorsInit):
    """A fault plan: a seed and an ordered list of faults. The first fault whose triggers all hold fires.

    A plan is frozen and holds no run state: call counters live in the engine, per episode, per
    activation, or per plan for calls outside both. Plans compare and hash by identity, as each one keys
    its own counters.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: Seed = 0
    name: str | None = None
    faults: list[Fault] = Field(default_factory=list)

    _source: str | None = PrivateAttr(default=None)

    # identity, as before the split, when each plan held its own lock and so never equalled another one;
    # hashable, so the engine can key a plan's counters by the plan
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    # A plain attribute, not a pydantic private one: reading one of those costs microseconds, and decide() and
    # rules() run on every tool call.
    @functools.cached_property
    def _memo(self) -> dict[str, ToolRules]:
        return {}

    def __getstate__(self) -> dict[Any, Any]:
        """The plan's state for pickling, without its memos (they hold functions, and are rebuilt on use)."""
        state = super().__getstate__()
        state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k != "_memo"}
        return state

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Plan:
        """A copy with its own memos (``update`` may change the faults they were computed from)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("_memo", None)
        return copied

    @classmethod
    def _validate(cls, data: Mapping[Any, Any], source: str, lines: Mapping[tuple[Any, ...], int]) -> Plan:
        bad = [k for k in data if not isinstance(k, str)]
        if bad:
            raise PlanError(f"keys must be names, got {bad[0]!r}", source=source, line=_line_for((bad[0],), lines))
        with raw_validation():
            try:
                plan = cls(**data)
            except ValidationError as exc:
                raise validation_to_plan_error(exc, source=source, lines=lines, model=cls) from None
        plan._source = source
        return plan

    # -- loading -------------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<dict>") -> Plan:
        """A plan from a mapping with ``seed`` and ``faults``; a bad one raises :class:`PlanError`."""
        if not isinstance(data, Mapping):
            raise PlanError(
                f"a plan must be a mapping with 'seed' and 'faults', got {type(data).__name__}", source=source
            )
        return cls._validate(data, source, {})

    @classmethod
    def from_yaml(cls, path_or_text: str | bytes | os.PathLike[str], *, source: str | None = None) -> Plan:
        """Load a plan from a YAML file path, or from YAML text (a str containing a newline or ':', or UTF-8
        bytes). Anything else raises :class:`PlanError` saying what is allowed."""
        text, src = read_source(path_or_text, source)
        data, lines = load_yaml(text, src)
        if data is None:
            # a file of comments only is a mistake (a wrong file, a failed template), not a plan of no faults
            raise PlanError(
                "holds no plan (the document is empty); a plan is a mapping with 'seed' and 'faults', "
                "e.g. 'faults: []' for none",
                source=src,
                line=1,
            )
        if not isinstance(data, Mapping):
            raise PlanError(
                f"a plan must be a mapping with 'seed' and 'faults', got {type(data).__name__}", source=src, line=1
            )
        return cls._validate(data, src, lines)

    load = from_yaml

    @property
    def source(self) -> str | None:
        """The file (or ``<yaml>``, ``<dict>``) the plan was loaded from; None when built in Python."""
        return self._source

    # -- deciding ------------------------------------------------------------------------------------

    def candidates(self, tool: str) -> tuple[tuple[int, _FaultBase], ...]:
        """The faults (with their plan index) that can ever fire for ``tool``; cached per tool name."""
        return self.rules(tool).candidates

    def rules(self, tool: str) -> ToolRules:
        """Everything the decision for ``tool`` needs, worked out on its first call and kept (plans are frozen)."""
        memo = self._memo
        found = memo.get(tool)
        if found is None:
            # a race builds it twice, with the same answer
            if tool.startswith(MODEL_KEY):
                model = tool[len(MODEL_KEY) :]
                found = ToolRules(tuple((i, f) for i, f in enumerate(self.faults) if f.targets_model(model)))
            else:
                found = ToolRules(tuple((i, f) for i, f in enumerate(self.faults) if f.targets(tool)))
            memo[tool] = found
        return found

    def model_rules(self, model: str) -> ToolRules:
        """The decision for the calls of ``model``: the faults with ``target: model`` whose ``model`` names it,
        under the name :func:`model_key` gives (the same triggers, counted apart from every tool)."""
        return self.rules(model_key(model))

    def model_names(self) -> set[str]:
        """The exact model names the model faults name (patterns such as ``*`` excluded)."""
        out: set[str] = set()
        for f in self.faults:
            if f.target == "model" and f.model is not None:
                names = (f.model,) if isinstance(f.model, str) else f.model
                out.update(n for n in names if not any(c in n for c in "*?["))
        return out

    def decide(
        self,
        tool: str,
        call: int,
        args: Mapping[str, Any] | None,
        fired: Mapping[tuple[int, str], int],
    ) -> tuple[int, _FaultBase] | None:
        """Which fault fires for call ``call`` (1-based) of ``tool``; pure: no I/O, no clock, no RNG state.

        ``fired`` counts earlier fires per (fault index, tool): ``times`` is a budget per tool, so that calls
        to other tools, in whatever order they run in parallel, never change this tool's faults.
        """
        return self.rules(tool).decide(self.seed, tool, call, args, fired)

    # -- activation: the engine's, through the runtime it installs -------------------------------------

    def activate(self) -> AbstractContextManager[Plan]:
        """Make this plan active in the current context (thread / asyncio task), with fresh call counters."""
        return _get_runtime().activate(self)

    def reset(self) -> None:
        """Forget the call counters kept for uses of this plan outside any episode or activation."""
        _get_runtime().reset(self)

    # -- helpers -------------------------------------------------------------------------------------

    def with_faults(self, faults: Iterable[Any], *, seed: int | None = None) -> Plan:
        """A new plan with ``faults`` appended (they fire only where no earlier fault fires)."""
        plan = Plan(seed=self.seed if seed is None else seed, name=self.name, faults=[*self.faults, *faults])
        plan._source = self._source
        return plan

    def tool_names(self) -> set[str]:
        """The exact tool names the faults name (patterns such as ``*`` excluded)."""
        return {n for f in self.faults for n in f.tool_names()}

    def check_tools(self, tools: Iterable[str]) -> None:
        """Raise :class:`PlanError` when a fault names a tool that is not among ``tools``."""
        known = sorted(set(tools))
        for i, fault in enumerate(self.faults):
            for name in fault.tool_names():
                if name not in known:
                    raise PlanError(
                        f"names tool {name!r}, which this agent does not have{_suggest(name, known)}; "
                        f"its tools are: {', '.join(known) or '(none)'}",
                        source=self._source,
                        field=f"faults[{i}].tool",
                    )

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data (defaults left out), as a plan file would write it."""
        return {
            "seed": self.seed,
            **({"name": self.name} if self.name else {}),
            "faults": [_fault_to_dict(f) for f in self.faults],
        }


class ToolRules:
    """The faults of a plan that target one tool, prepared for the per-call decision (built once per tool).

    ``steps`` holds, per candidate fault in plan order, its index, the fault, its trigger, a test on the call
    number alone that must hold first (see :func:`~chaoskit.plan._triggers.call_gate`) and whether that test
    is the whole trigger. ``needs_args``: a ``match`` trigger reads the call's arguments. ``budgeted``: a
    ``times`` trigger reads the earlier fires, so counting and deciding must happen together.
    """

    __slots__ = ("budgeted", "candidates", "history", "needs_args", "steps", "targeted")

    def __init__(self, candidates: tuple[tuple[int, _FaultBase], ...]) -> None:
        self.candidates = candidates
        self.targeted = bool(candidates)
        self.steps: tuple[tuple[int, _FaultBase, Trigger | None, Any, bool], ...] = tuple(
            (i, f, f.trigger, *call_gate(f.trigger)) for i, f in candidates
        )
        self.needs_args = any(uses(f.trigger, match) for _, f in candidates)
        self.budgeted = any(uses(f.trigger, times) for _, f in candidates)
        self.history = any(isinstance(f, GarbageFault) and f.stale for _, f in candidates)

    def decide(
        self, seed: int, tool: str, call: int, args: Mapping[str, Any] | None, fired: Mapping[tuple[int, str], int]
    ) -> tuple[int, _FaultBase] | None:
        """:meth:`Plan.decide` for this tool, with the plan's ``seed``."""
        for index, fault, trigger, gate, exact in self.steps:
            if gate is not None:
                if not gate(call):
                    continue
                if exact:
                    return index, fault
            if trigger is None or trigger(CallState(seed, index, tool, call, args, fired)):
                return index, fault
        return None


def _fault_to_dict(f: _FaultBase) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in f.model_dump(exclude_defaults=True).items():
        if v is _UNSET:
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    out["type"] = f.type
    return out
