"""The base of every fault type, and the registry of fault types other packages add to plans.

A package adds fault types under the entry-point group ``chaoskit.faults``: each entry point is named after
its type and points to a :class:`FaultType` (its parameters, their check, what acts on it). They are loaded
lazily, the first time a plan names a type the core does not know, so a plan of core faults loads no plugin.
A plan keeps such a fault as an :class:`ExtensionFault` at its index: the core's engine never fires it (in
process it is inert); the package that registered it decides and injects it (``chaoskit mcp-proxy`` the MCP
protocol faults). A type whose package cannot load (its extra is not installed) is a plan error that says
what to install.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from chaoskit.plan._fields import OnCall, PositiveInt, Probability, ToolSelector, Window
from chaoskit.plan._locate import _PlanErrorsInit
from chaoskit.plan._triggers import Trigger, tool_matches, trigger_of

__all__ = [
    "ENTRY_POINT_GROUP",
    "STREAM_CUT_TYPES",
    "ExtensionFault",
    "FaultParameterError",
    "FaultType",
    "MissingExtra",
    "extension_entry",
    "registered_types",
    "require_modules",
    "settle_target",
]

#: the entry-point group of the fault types other packages add
ENTRY_POINT_GROUP = "chaoskit.faults"
#: the key an extension entry carries its real type name under while it is validated
_NAME_KEY = "__fault_type__"


class _Unset:
    """ "Not given", where None is a value a user may give (``value: null`` returns None); one instance, which
    stays the same one across pickling (plans cross process boundaries to the runner's workers)."""

    def __reduce__(self) -> str:
        return "_UNSET"

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()

# the keys every fault type has (``after_chunks`` says where a streamed model answer is cut, not what the fault
# is, so it is kept out of a fault's parameters as the triggers are)
_TRIGGER_KEYS = frozenset(
    {"type", "tool", "on_call", "every", "calls", "probability", "match", "times", "target", "model", "after_chunks"}
)
#: the fault types ``after_chunks`` may cut a streamed model answer with (an error event, or a stall then a cut)
STREAM_CUT_TYPES = ("rate_limit", "overloaded", "http", "timeout")
#: the targets a fault may have: the agent's tools, or its model calls (``target: model`` or ``model: "*"``)
TARGETS = ("tool", "model")


class _FaultBase(_PlanErrorsInit):
    """Trigger fields shared by every fault. All given triggers must hold (AND); none = every call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    tool: ToolSelector = "*"
    on_call: OnCall = None
    every: PositiveInt = None
    calls: Window = None
    probability: Probability = None
    match: dict[str, Any] | None = None
    times: PositiveInt = None
    target: Literal["tool", "model"] = "tool"
    model: ToolSelector | None = None
    after_chunks: PositiveInt = None

    _trigger: Trigger | None = PrivateAttr(default=None)

    # the fault types whose effect needs the real tool to run first set this; some decide per fault, below
    _RUNS_TOOL: ClassVar[bool] = False
    # what a fault of this type may target: tools only, unless the type says otherwise (model faults)
    _TARGETS: ClassVar[frozenset[str]] = frozenset({"tool"})

    @model_validator(mode="before")
    @classmethod
    def _target(cls, data: Any) -> Any:
        """Settle ``target``: ``model: ...`` or a model-only type means ``model``; refuse a mix of the two."""
        try:
            return settle_target(cls, data)
        except FaultParameterError as exc:
            raise ValueError(f"{exc.param}: {exc}") from None

    @model_validator(mode="after")
    def _cut_a_stream(self) -> Any:
        if self.after_chunks is not None and (self.target != "model" or self.type not in STREAM_CUT_TYPES):
            raise ValueError(
                "after_chunks: cuts a streamed model answer after that many chunks; it is for model faults "
                f"(target: model) of type {', '.join(STREAM_CUT_TYPES)}"
            )
        return self

    def model_post_init(self, __context: Any) -> None:
        """Build the fault's trigger once, when the fault is made, not on every call."""
        self._trigger = trigger_of(self)

    @property
    def runs_tool(self) -> bool:
        """Whether the real tool runs before this fault's effect (latency, data faults, ``after_write``)."""
        return self._RUNS_TOOL

    @property
    def trigger(self) -> Trigger | None:
        """The AND of this fault's triggers (see :mod:`chaoskit.plan._triggers`); None fires on every call."""
        return self._trigger

    def targets(self, tool: str) -> bool:
        """Whether this fault's ``tool`` selector names ``tool`` (exactly, by ``*``, or by a glob)."""
        return self.target == "tool" and tool_matches(self.tool, tool)

    def targets_model(self, model: str) -> bool:
        """Whether this is a model fault whose ``model`` selector (``*`` when not given) names ``model``."""
        return self.target == "model" and tool_matches("*" if self.model is None else self.model, model)

    def tool_names(self) -> tuple[str, ...]:
        """Exact tool names this fault names (patterns such as ``*`` excluded)."""
        if self.target != "tool":
            return ()
        names = (self.tool,) if isinstance(self.tool, str) else self.tool
        return tuple(n for n in names if not any(c in n for c in "*?["))

    def params(self) -> dict[str, Any]:
        """The fault's own parameters (not its triggers, nor one left unset: ``empty``'s ``value``, ``garbage``'s
        ``garbage``), for spans and reports."""
        dumped = self.model_dump(exclude_defaults=False).items()
        return {k: v for k, v in dumped if k not in _TRIGGER_KEYS and v is not _UNSET}

    def describe(self) -> str:
        """A short phrase for reports: ``http on refund call 2 p=0.5``."""
        parts = [self.type]
        if self.target == "model":
            model = "*" if self.model is None else self.model
            parts.append(
                "on model" if model == "*" else f"on model {model if isinstance(model, str) else ','.join(model)}"
            )
        elif self.tool != "*":
            parts.append(f"on {self.tool if isinstance(self.tool, str) else ','.join(self.tool)}")
        if self.on_call:
            parts.append("call " + ",".join(map(str, self.on_call)))
        if self.every:
            parts.append(f"every {self.every}")
        if self.calls:
            parts.append(f"calls {self.calls}")
        if self.probability is not None:
            parts.append(f"p={self.probability:g}")
        if self.times:
            parts.append(f"at most {self.times}x")
        if self.after_chunks:
            parts.append(f"after {self.after_chunks} chunks")
        return " ".join(parts)


def settle_target(cls: type[_FaultBase], data: Any) -> Any:
    """``data`` with its ``target`` filled in (``model`` when it names a ``model`` or its type acts on model
    calls only); :class:`FaultParameterError` naming the field when the target, ``tool`` and ``model`` clash."""
    if not isinstance(data, Mapping) or data.get("target", "tool") not in TARGETS:
        return data  # not a mapping, or a target the Literal will refuse with the allowed values
    allowed = cls._TARGETS
    target = data.get("target")
    named = "target" if target is not None else "model"  # the field that made it a model fault
    if target is None and "tool" in data and data.get("model") is not None:
        raise FaultParameterError("model", "give either 'tool' (a tool fault) or 'model' (a model fault), not both")
    if target is None:
        target = "model" if data.get("model") is not None or "tool" not in allowed else "tool"
        data = {**data, "target": target}
    kind = data.get("type", cls.__name__)
    if target not in allowed:
        if target == "model":
            raise FaultParameterError(
                named, f"fault type {kind!r} acts on tool calls only, not on model calls; {_MODEL_HINT}"
            )
        raise FaultParameterError("target", f"fault type {kind!r} acts on model calls only, not on tool calls")
    if target == "model" and "tool" in data:
        raise FaultParameterError("tool", "a model fault names its model with 'model' (\"*\", a name or a glob)")
    if target == "tool" and data.get("model") is not None:
        raise FaultParameterError("model", "only a fault with 'target: model' names a model; this one targets tools")
    return data


_MODEL_HINT = (
    "the types for model calls are: rate_limit, overloaded, http, timeout, empty_completion, truncated, "
    "malformed_tool_call, unknown_tool_call, refusal, latency"
)


class FaultParameterError(ValueError):
    """A registered fault type's parameter ``param`` is wrong (a :class:`FaultType` check raises it): the plan
    error then names the field ``faults[i].param``."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class FaultType:
    """A fault type another package adds to plans, the object its ``chaoskit.faults`` entry point names.

    ``name`` is the ``type:`` plans write (the entry point's name too); ``params`` the type's own parameters
    and their defaults (every other key of the entry must be a trigger); ``check`` gets the parameters with
    the defaults filled in and the whole entry, and raises :class:`FaultParameterError` for a wrong one;
    ``acts_in`` says what injects it (``chaoskit mcp-proxy``), for the docs and for errors.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[dict[str, Any], Mapping[str, Any]], None] | None = None
    acts_in: str = ""
    doc: str = ""

    def validate(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """The entry's own parameters, defaults filled in; :class:`FaultParameterError` for an unknown or bad one."""
        params = dict(self.params)
        for key, value in entry.items():
            if key == "type" or key in _TRIGGER_KEYS:
                continue
            if key not in self.params:
                allowed = ", ".join([*sorted(_TRIGGER_KEYS - {"type"}), *self.params])
                raise FaultParameterError(key, f"fault type {self.name!r} has no parameter {key!r}; allowed: {allowed}")
            params[key] = value
        if self.check is not None:
            self.check(params, entry)
        return params


def require_modules(*names: str) -> None:
    """Raise ``ModuleNotFoundError`` for the first of ``names`` that is not installed (without importing it):
    a plugin's fault types call this so that a plan naming them says which extra to install."""
    for name in names:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


class MissingExtra(ValueError):
    """A registered fault type whose package cannot load here: the message says what to install."""


_lock = threading.Lock()
_loaded: dict[str, FaultType] = {}


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def registered_types() -> tuple[str, ...]:
    """The names of the fault types other packages register, without loading them."""
    return tuple(sorted(_entry_points()))


def _install_hint(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else ep.module.split(".")[0]
    target = f"{dist}[{','.join(ep.extras)}]" if ep.extras else dist
    return f"install {target} (pip install '{target}')"


def _load(name: str) -> FaultType | None:
    with _lock:
        if name in _loaded:
            return _loaded[name]
        ep = _entry_points().get(name)
        if ep is None:
            return None
        try:
            found = ep.load()
        except ImportError as exc:
            missing = exc.name or str(exc)
            raise MissingExtra(
                f"fault type {name!r} comes from {ep.module.split('.')[0]}, which needs {missing}, not "
                f"installed here: {_install_hint(ep)}"
            ) from None
        if not isinstance(found, FaultType) or found.name != name:
            raise ValueError(
                f"the {ENTRY_POINT_GROUP} entry point {name!r} ({ep.value}) is no FaultType named {name!r}"
            )
        _loaded[name] = found
        return found


def extension_entry(name: str, entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The entry of a registered fault type ``name``, checked by its package and ready for
    :class:`ExtensionFault`; None when no package registers ``name``. A ``ValueError`` says what is wrong
    (a bad parameter, or the package's extra to install)."""
    kind = _load(name)
    if kind is None:
        return None
    params = kind.validate(entry)
    triggers = {k: v for k, v in entry.items() if k in _TRIGGER_KEYS and k != "type"}
    return {**triggers, **params, "type": "extension", _NAME_KEY: name}


@dataclass(frozen=True, slots=True)
class _nowhere(Trigger):
    """Holds on no call: the core never fires an extension fault."""

    def __call__(self, state: Any) -> bool:
        return False


class ExtensionFault(_FaultBase):
    """A fault of a type another package registered (see :class:`FaultType`): its triggers, its own parameters
    (checked by that package) and its ``type`` name. The core's engine never fires it: the package that
    registered it decides and injects it, so in process (``@chaos``) it is inert."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # "extension" while validated (the tag of the fault union); the registered name once made
    type: Literal["extension"] = Field("extension", exclude=True)

    def model_post_init(self, __context: Any) -> None:
        """Take the registered type name; no trigger the core evaluates."""
        extra = self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}
        object.__setattr__(self, "type", extra.pop(_NAME_KEY, "extension"))  # a frozen model: set once, here
        self._trigger = _nowhere()

    def targets(self, tool: str) -> bool:
        """Never: the core's decision skips it (its package decides it with the same triggers)."""
        return False

    def as_entry(self) -> dict[str, Any]:
        """The fault as a plan entry (``{type: tool_disappears, tool: search, ...}``)."""
        data = self.model_dump(exclude_defaults=True)
        return {"type": self.type, **{k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}}
