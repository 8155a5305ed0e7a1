"""``@chaos``: one decorator for sync and async tools; the path is chosen once, at decoration time."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast, overload

import wrapt

import chaoskit.engine._config as _config
from chaoskit._errors import ConfigError
from chaoskit.adapters._binding import ArgBinder
from chaoskit.adapters._registry import find_adapter
from chaoskit.engine._attempt import call_async, call_sync
from chaoskit.engine._config import as_plan
from chaoskit.engine._spec import ErrorResult, ToolSpec, check_flag, refusal_check
from chaoskit.plan._model import Plan

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["chaos", "spec_of"]


class _BoundToolFunction(wrapt.BoundFunctionWrapper[Any, Any]):
    """The wrapper of a ``@chaos`` method bound to its instance: the parent's spec."""

    @property
    def __chaoskit_spec__(self) -> ToolSpec:
        return cast(ToolSpec, self._self_parent._self_chaoskit_spec)


class _ToolFunction(wrapt.FunctionWrapper[Any, Any]):
    """The wrapper ``@chaos`` returns. The spec lives on the wrapper itself (never set on the wrapped object:
    a bound method or a ``__slots__`` object cannot take attributes, and the user's own function must stay
    unmarked so that wrapping it again elsewhere still works)."""

    __bound_function_wrapper__ = _BoundToolFunction

    # no class-level annotation: it would hide the wrapped function's __annotations__
    def __init__(self, wrapped: Any, wrapper: Any, spec: ToolSpec, bind: Any, driver: Any) -> None:
        super().__init__(wrapped, wrapper)
        self._self_chaoskit_spec = spec
        # what wrapt's own call would do (``wrapper(wrapped, instance, args, kwargs)``), settled now: the
        # receiver of a wrapped bound method is fixed
        found = getattr(wrapped, "__self__", None) if self._self_binding in _SELF_BINDINGS else None
        self._self_chaoskit_fast = (spec, wrapped, bind, found, driver)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        # wrapt's call asks the wrapped function for a ``__self__`` on every call (a failed attribute
        # look-up, an exception made and cleared) and then calls the wrapper: this asked once, at decoration,
        # and calls the engine's driver itself
        spec, wrapped, bind, instance, driver = self._self_chaoskit_fast
        if _config.CONFIG.trace:
            # traced, the arguments are always described: bound now, with no partial to make and then call
            return driver(spec, wrapped, args, kwargs, bound=bind(instance, args, kwargs))
        return driver(spec, wrapped, args, kwargs, bound=_partial(bind, instance, args, kwargs))

    @property
    def __chaoskit_spec__(self) -> ToolSpec:
        return self._self_chaoskit_spec


#: the bindings for which wrapt's call passes the wrapped callable's ``__self__`` as the instance
_SELF_BINDINGS = frozenset({"function", "instancemethod", "callable", "classmethod"})


@overload
def chaos(func: F, /) -> F: ...


@overload
def chaos(
    plan: Plan | Mapping[str, Any] | None = None,
    /,
    *,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    error_result: ErrorResult | None = None,
) -> Callable[[F], F]: ...


def chaos(
    func_or_plan: Any = None,
    /,
    *,
    plan: Plan | Mapping[str, Any] | None = None,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    error_result: ErrorResult | None = None,
) -> Any:
    """Route every call of a tool function through chaoskit.

    Works on functions, bound methods, ``@staticmethod`` / ``@classmethod`` (above or below ``@chaos``),
    methods decorated in a class body, ``functools.partial`` objects and callable objects, sync or async; the
    receiver (``self`` / ``cls``) is never recorded as an argument. Applied to a framework's tool object (a
    LangChain ``BaseTool``, e.g. made by ``@tool``), it returns what that framework's adapter makes of it
    (see :mod:`chaoskit.adapters`); without the adapter installed, a ConfigError names the extra to install.

    ``@chaos`` alone takes faults from the active plan (episode, ``plan.activate()``, ``CHAOSKIT_PLAN``);
    ``@chaos(plan)`` pins a plan (a :class:`Plan`, or a dict checked now with ``Plan.from_dict``) to this tool.
    With no plan anywhere, the call runs unchanged and is only recorded as a span. ``irreversible`` marks a
    tool whose calls write (refund, send, delete); ``idempotency_arg`` names the argument that carries its
    idempotency key; ``idempotent=True`` declares that repeating a call with the same arguments changes
    nothing. ``error_result`` says which *returned* values are the tool refusing the call: a predicate
    ``(result) -> bool | str`` (a string is the message) or a key name (a dict result with that key truthy);
    by default a dict whose only key is ``error``, an MCP result with ``isError`` true and a LangChain
    ``ToolMessage`` with ``status="error"`` (see :func:`chaoskit.engine.default_refusal`); ``False`` for none.
    Bad arguments raise :class:`chaoskit.ConfigError` (or :class:`chaoskit.PlanError` for a bad plan dict)
    here, at decoration time.

    Wrapping a tool that is already ``@chaos`` (``chaos(irreversible=True)(refund)``, or ``chaos(obj.method)``
    for a method decorated in its class body) replaces the old wrapper instead of nesting in it: the result
    calls the original function, one attempt per call. Its options are the old ones with the new ones added:
    a flag given as True, or a name, plan, ``idempotency_arg``, description or ``error_result`` given, wins;
    what is not given keeps its old value (re-wrapping never silently drops ``irreversible=True``). The old
    wrapper keeps working as it was.
    """
    if isinstance(func_or_plan, Plan | Mapping):
        if plan is not None:
            raise ConfigError("chaos(): give the plan once, positionally or as plan=")
        plan = func_or_plan
        func_or_plan = None
    elif func_or_plan is not None and not (
        callable(func_or_plan)
        or isinstance(func_or_plan, classmethod | staticmethod)
        or find_adapter(func_or_plan) is not None
    ):
        raise ConfigError(f"chaos(): expected a function or a Plan (or a plan dict), got {type(func_or_plan).__name__}")
    options = _Options.checked(
        plan=plan,
        name=name,
        irreversible=irreversible,
        idempotency_arg=idempotency_arg,
        description=description,
        idempotent=idempotent,
        error_result=error_result,
    )

    def decorate(func: F) -> F:
        return cast(F, _decorate(func, options))

    if func_or_plan is not None:
        return decorate(func_or_plan)
    return decorate


@dataclass(frozen=True, slots=True)
class _Options:
    """What ``@chaos(...)`` was given, checked once, at decoration time."""

    plan: Plan | None
    name: str | None
    irreversible: bool
    idempotency_arg: str | None
    description: str | None
    idempotent: bool
    error_result: ErrorResult | None

    @classmethod
    def checked(cls, *, plan: Plan | Mapping[str, Any] | None, **given: Any) -> _Options:
        """The options, or a ConfigError (a PlanError for a bad plan dict) naming the bad one."""
        checked_plan = as_plan(plan, "chaos(plan)")
        name, description = given["name"], given["description"]
        if name is not None and (not isinstance(name, str) or not name):
            raise ConfigError(f"chaos(name=...): expected a non-empty string, got {name!r}")
        if description is not None and not isinstance(description, str):
            raise ConfigError(f"chaos(description=...): expected a string, got {type(description).__name__}")
        check_flag(given["irreversible"], "chaos(irreversible=...)")
        check_flag(given["idempotent"], "chaos(idempotent=...)")
        refusal_check(given["error_result"])  # raises ConfigError now, not at the first call
        return cls(plan=checked_plan, **given)

    def spec(self, target: Any, inner: Any, prior: ToolSpec | None) -> ToolSpec:
        """The ToolSpec of ``target`` (``inner``: the function under a partial); a re-wrapped tool's old
        declaration ``prior`` with what is given now added: never a silent loss of ``irreversible=True``."""
        if prior is None:
            doc = self.description or inspect.getdoc(target)
            return ToolSpec(
                name=self.name or getattr(inner, "__name__", None) or type(inner).__name__,
                irreversible=self.irreversible,
                idempotency_arg=self.idempotency_arg,
                description=doc.splitlines()[0] if doc else None,
                plan=self.plan,
                idempotent=self.idempotent,
                error_result=self.error_result,
            )
        return ToolSpec(
            name=self.name or prior.name,
            irreversible=self.irreversible or prior.irreversible,
            idempotency_arg=self.idempotency_arg if self.idempotency_arg is not None else prior.idempotency_arg,
            description=self.description.splitlines()[0] if self.description else prior.description,
            plan=self.plan if self.plan is not None else prior.plan,
            idempotent=self.idempotent or prior.idempotent,
            error_result=self.error_result if self.error_result is not None else prior.error_result,
        )


def _decorate(func: Any, options: _Options) -> Any:
    """``func`` wrapped by ``@chaos(...)`` with ``options``: a framework's tool handed to its adapter, else a
    :class:`_ToolFunction` whose sync or async driver is chosen here, once."""
    if not (inspect.isroutine(func) or isinstance(func, classmethod | staticmethod)):
        adapted = _adapt(
            func,
            name=options.name,
            description=options.description,
            plan=options.plan,
            irreversible=options.irreversible,
            idempotency_arg=options.idempotency_arg,
            idempotent=options.idempotent,
            error_result=options.error_result,
        )
        if adapted is not _NOT_A_FRAMEWORK_TOOL:
            return adapted
    if not (callable(func) or isinstance(func, classmethod | staticmethod)):
        raise ConfigError(f"chaos(): expected a function to decorate, got {type(func).__name__}")
    # wrapping a @chaos tool again replaces its wrapper: two layers would make two attempts of one call
    func, prior = _unwrap(func)
    static = isinstance(func, staticmethod)
    target = func.__func__ if isinstance(func, staticmethod | classmethod) else func
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise ConfigError(
            f"chaos(): {getattr(target, '__name__', target)!r} is a generator; a tool must return its result "
            "(wrap a function that collects the items, e.g. returns list(...))"
        )
    inner = target.func if isinstance(target, functools.partial) else target
    spec = options.spec(target, inner, prior)
    _check_idempotency_arg(target, spec)
    # a bound method (or a partial of one) already carries its receiver: its signature leaves it out
    bind = ArgBinder(target, static=static or inspect.ismethod(inner)).bind
    call_method = type(target).__call__ if not inspect.isroutine(target) else None
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(call_method):

        async def async_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            return await call_async(spec, wrapped, args, kwargs, bound=_partial(bind, instance, args, kwargs))

        return _ToolFunction(func, async_wrapper, spec, bind, call_async)

    def sync_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        # call_sync, not an Attempt: with no fault it builds none, and with tracing off binds nothing
        # (a partial, not a lambda: no closure cells to make per call, one frame less to bind)
        return call_sync(spec, wrapped, args, kwargs, bound=_partial(bind, instance, args, kwargs))

    return _ToolFunction(func, sync_wrapper, spec, bind, call_sync)


def _check_idempotency_arg(target: Any, spec: ToolSpec) -> None:
    """A ConfigError if ``spec.idempotency_arg`` names no parameter of ``target`` (one taking ``**kwargs`` takes
    any name; a signature that cannot be read is not checked)."""
    key = spec.idempotency_arg
    if key is None:
        return
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if key not in params and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        raise ConfigError(
            f"chaos(idempotency_arg={key!r}): {spec.name}() has no such parameter; "
            f"its parameters are: {', '.join(params)}"
        )


_NOT_A_FRAMEWORK_TOOL: Any = object()
_partial = functools.partial


def _unwrap(func: Any) -> tuple[Any, ToolSpec | None]:
    """``func`` without its ``@chaos`` wrappers, and the spec of the outermost one (None if it had none).

    Looks through a wrapper, a method decorated in its class body and read from the instance or class, a
    ``functools.partial`` or a ``staticmethod`` / ``classmethod`` of one, and a callable object whose
    ``__call__`` is ``@chaos`` (then the original ``__call__`` bound to the object).
    """
    prior: ToolSpec | None = None
    while True:
        if isinstance(func, _ToolFunction | _BoundToolFunction):
            prior = prior or func.__chaoskit_spec__
            func = func.__wrapped__
        elif isinstance(func, functools.partial) and isinstance(func.func, _ToolFunction | _BoundToolFunction):
            inner, spec = _unwrap(func.func)
            prior = prior or spec
            func = functools.partial(inner, *func.args, **func.keywords)
        elif isinstance(func, staticmethod | classmethod) and isinstance(func.__func__, _ToolFunction):
            inner, spec = _unwrap(func.__func__)
            prior = prior or spec
            func = type(func)(inner)
        elif not inspect.isroutine(func) and isinstance(
            call := inspect.getattr_static(type(func), "__call__", None), _ToolFunction
        ):
            prior = prior or call.__chaoskit_spec__
            func = call.__wrapped__.__get__(func, type(func))
        else:
            return func, prior


def _adapt(obj: Any, **options: Any) -> Any:
    """What the framework adapter makes of ``obj``; ``_NOT_A_FRAMEWORK_TOOL`` when no framework claims it."""
    found = find_adapter(obj)
    if found is None:
        return _NOT_A_FRAMEWORK_TOOL
    framework, wrap = found
    if wrap is None:
        raise ConfigError(
            f"chaos(): {type(obj).__name__} is a {framework} tool, and chaoskit's {framework} adapter "
            f"is not installed; install it with: pip install chaoskit[{framework}]"
        )
    # the tool's own run must make the attempt so the framework's callbacks and error handling see it
    return wrap(obj, **options)


def spec_of(func: Any) -> ToolSpec | None:
    """The ToolSpec of a ``@chaos``-wrapped function, or None."""
    return getattr(func, "__chaoskit_spec__", None)
