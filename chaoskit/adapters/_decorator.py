"""``@chaos``: one decorator for sync and async tools; the path is chosen once, at decoration time."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast, overload

import wrapt

from chaoskit._errors import ConfigError
from chaoskit.engine._attempt import ToolSpec, call_async, call_sync
from chaoskit.engine._config import as_plan
from chaoskit.engine._spec import ErrorResult, check_flag, refusal_check
from chaoskit.plan._model import Plan

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["chaos"]


class _Binder:
    """Maps a call's positional and keyword arguments to parameter names (for hashing, match, idempotency)."""

    __slots__ = ("first", "sig", "static")

    def __init__(self, func: Callable[..., Any], *, static: bool) -> None:
        try:
            self.sig: inspect.Signature | None = inspect.signature(func)
        except (TypeError, ValueError):
            self.sig = None
        self.static = static
        params = list(self.sig.parameters) if self.sig is not None else []
        self.first = params[0] if params else None

    def bind(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Mapping[str, Any]:
        sig = self.sig
        if sig is None:
            return {"args": list(args), **kwargs}
        # wrapt passes the instance (or class) apart from the arguments of a bound call; whatever the first
        # parameter is called, it is the receiver then, and it is not part of what the tool was asked
        receiver = instance is not None and not self.static and self.first is not None
        try:
            bound = sig.bind(instance, *args, **kwargs) if receiver else sig.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), **kwargs}
        bound.apply_defaults()
        out = dict(bound.arguments)
        if receiver or (self.first in ("self", "cls") and out and not self.static):
            out.pop(self.first, None)  # type: ignore[arg-type]
        for name, param in sig.parameters.items():
            if param.kind is inspect.Parameter.VAR_KEYWORD and name in out:
                out.update(out.pop(name))
        return out


# typed as Any: wrapt's stubs make these generic over the wrapped callable, which a subclass cannot name
_FunctionWrapper: Any = wrapt.FunctionWrapper
_BoundFunctionWrapper: Any = wrapt.BoundFunctionWrapper


class _ToolFunction(_FunctionWrapper):  # type: ignore[misc]
    """The wrapper ``@chaos`` returns. The spec lives on the wrapper itself (never set on the wrapped object:
    a bound method or a ``__slots__`` object cannot take attributes, and the user's own function must stay
    unmarked so that wrapping it again elsewhere still works)."""

    @property
    def __chaoskit_spec__(self) -> ToolSpec:
        return self._self_chaoskit_spec  # type: ignore[no-any-return]


class _BoundToolFunction(_BoundFunctionWrapper):  # type: ignore[misc]
    @property
    def __chaoskit_spec__(self) -> ToolSpec:
        return self._self_parent._self_chaoskit_spec  # type: ignore[no-any-return]


_ToolFunction.__bound_function_wrapper__ = _BoundToolFunction


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
    receiver (``self`` / ``cls``) is never recorded as an argument. Applied to a LangChain tool (a
    ``BaseTool``, e.g. made by ``@tool``), it returns ``chaoskit_langchain.chaos_tool(tool, plan, ...)``.

    ``@chaos`` alone takes faults from the active plan (episode, ``plan.activate()``, ``CHAOSKIT_PLAN``);
    ``@chaos(plan)`` pins a plan (a :class:`Plan`, or a dict checked now with ``Plan.from_dict``) to this tool.
    With no plan anywhere, the call runs unchanged and is only recorded as a span. ``irreversible`` marks a
    tool whose calls write (refund, send, delete); ``idempotency_arg`` names the argument that carries its
    idempotency key; ``idempotent=True`` declares that repeating a call with the same arguments changes
    nothing. ``error_result`` says which *returned* values are the tool refusing the call: a predicate
    ``(result) -> bool | str`` (a string is the message) or a key name (a dict result with that key truthy);
    by default a dict whose only key is ``error`` and an MCP result with ``isError`` true; ``False`` for none.
    Bad arguments raise :class:`chaoskit.ConfigError` (or :class:`chaoskit.PlanError` for a bad plan dict)
    here, at decoration time.
    """
    if isinstance(func_or_plan, Plan | Mapping):
        if plan is not None:
            raise ConfigError("chaos(): give the plan once, positionally or as plan=")
        plan = func_or_plan
        func_or_plan = None
    elif func_or_plan is not None and not (
        callable(func_or_plan)
        or isinstance(func_or_plan, classmethod | staticmethod)
        or _is_langchain_tool(func_or_plan)
    ):
        raise ConfigError(f"chaos(): expected a function or a Plan (or a plan dict), got {type(func_or_plan).__name__}")
    checked_plan = as_plan(plan, "chaos(plan)")
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError(f"chaos(name=...): expected a non-empty string, got {name!r}")
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"chaos(description=...): expected a string, got {type(description).__name__}")
    check_flag(irreversible, "chaos(irreversible=...)")
    check_flag(idempotent, "chaos(idempotent=...)")
    refusal_check(error_result)  # raises ConfigError now, not at the first call

    def decorate(func: F) -> F:
        if _is_langchain_tool(func):
            # the tool's own run must make the attempt so LangChain's callbacks and error handling see it;
            # chaoskit_langchain does that, and it is importable whenever such an object exists
            from chaoskit_langchain import chaos_tool

            if name is not None or description is not None:
                raise ConfigError("chaos(): name= and description= do not apply to a LangChain tool; it keeps "
                                  "its own")
            lc_tool: Any = func
            tool: Any = chaos_tool(lc_tool, checked_plan, irreversible=irreversible, idempotency_arg=idempotency_arg,
                                   idempotent=idempotent, error_result=error_result)
            return tool  # type: ignore[no-any-return]
        if not (callable(func) or isinstance(func, classmethod | staticmethod)):
            raise ConfigError(f"chaos(): expected a function to decorate, got {type(func).__name__}")
        static = isinstance(func, staticmethod)
        target = func.__func__ if isinstance(func, staticmethod | classmethod) else func
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            raise ConfigError(
                f"chaos(): {getattr(target, '__name__', target)!r} is a generator; a tool must return its result "
                "(wrap a function that collects the items, e.g. returns list(...))"
            )
        inner = target.func if isinstance(target, functools.partial) else target
        tool_name = name or getattr(inner, "__name__", None) or type(inner).__name__
        doc = description or inspect.getdoc(target)
        spec = ToolSpec(
            name=tool_name,
            irreversible=irreversible,
            idempotency_arg=idempotency_arg,
            description=doc.splitlines()[0] if doc else None,
            plan=checked_plan,
            idempotent=idempotent,
            error_result=error_result,
        )
        if idempotency_arg is not None:
            try:
                params = inspect.signature(target).parameters
            except (TypeError, ValueError):
                params = None
            if params is not None and idempotency_arg not in params and not any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
            ):
                raise ConfigError(
                    f"chaos(idempotency_arg={idempotency_arg!r}): {tool_name}() has no such parameter; "
                    f"its parameters are: {', '.join(params)}"
                )
        # a bound method (or a partial of one) already carries its receiver: its signature leaves it out
        binder = _Binder(target, static=static or inspect.ismethod(inner))

        call_method = type(target).__call__ if not inspect.isroutine(target) else None
        if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(call_method):

            async def async_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
                return await call_async(spec, wrapped, args, kwargs,
                                        bound=lambda: binder.bind(instance, args, kwargs))

            wrapped_func = _ToolFunction(func, async_wrapper)
        else:

            def sync_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
                return call_sync(spec, wrapped, args, kwargs, bound=lambda: binder.bind(instance, args, kwargs))

            wrapped_func = _ToolFunction(func, sync_wrapper)
        wrapped_func._self_chaoskit_spec = spec
        return cast(F, wrapped_func)

    if func_or_plan is not None:
        return decorate(func_or_plan)
    return decorate


def _is_langchain_tool(obj: Any) -> bool:
    return any(
        c.__name__ == "BaseTool" and c.__module__.startswith("langchain_core") for c in type(obj).__mro__
    )


def spec_of(func: Any) -> ToolSpec | None:
    """The ToolSpec of a ``@chaos``-wrapped function, or None."""
    return getattr(func, "__chaoskit_spec__", None)
