"""``@chaos``: one decorator for sync and async tools; the path is chosen once, at decoration time."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import wrapt

from ._engine import ToolSpec, call_async, call_sync
from ._plan import Plan

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


@overload
def chaos(func: F, /) -> F: ...


@overload
def chaos(
    plan: Plan | None = None,
    /,
    *,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    description: str | None = None,
) -> Callable[[F], F]: ...


def chaos(
    func_or_plan: Any = None,
    /,
    *,
    plan: Plan | None = None,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    description: str | None = None,
) -> Any:
    """Route every call of a tool function through chaoskit.

    Applied to a LangChain tool (a ``BaseTool``, e.g. made by ``@tool``), it returns
    ``chaoskit_langchain.chaos_tool(tool, plan, ...)``.

    ``@chaos`` alone takes faults from the active plan (episode, ``plan.activate()``, ``CHAOSKIT_PLAN``);
    ``@chaos(plan)`` pins a plan to this tool. With no plan anywhere, the call runs unchanged and is only
    recorded as a span. ``irreversible`` marks a tool whose calls write (refund, send, delete);
    ``idempotency_arg`` names the argument that carries its idempotency key.
    """
    if isinstance(func_or_plan, Plan):
        if plan is not None:
            raise TypeError("chaos(): give the plan once, positionally or as plan=")
        plan = func_or_plan
        func_or_plan = None
    elif func_or_plan is not None and not (
        callable(func_or_plan)
        or isinstance(func_or_plan, classmethod | staticmethod)
        or _is_langchain_tool(func_or_plan)
    ):
        raise TypeError(f"chaos(): expected a function or a Plan, got {type(func_or_plan).__name__}")

    def decorate(func: F) -> F:
        if _is_langchain_tool(func):
            # the tool's own run must make the attempt so LangChain's callbacks and error handling see it;
            # chaoskit_langchain does that, and it is importable whenever such an object exists
            from chaoskit_langchain import chaos_tool

            if name is not None or description is not None:
                raise TypeError("chaos(): name= and description= do not apply to a LangChain tool; it keeps its own")
            lc_tool: Any = func
            tool: Any = chaos_tool(lc_tool, plan, irreversible=irreversible, idempotency_arg=idempotency_arg)
            return tool  # type: ignore[no-any-return]
        static = isinstance(func, staticmethod)
        target = func.__func__ if isinstance(func, staticmethod | classmethod) else func
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            raise TypeError(
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
            plan=plan,
        )
        if idempotency_arg is not None:
            try:
                params = inspect.signature(target).parameters
            except (TypeError, ValueError):
                params = None
            if params is not None and idempotency_arg not in params and not any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
            ):
                raise TypeError(
                    f"chaos(idempotency_arg={idempotency_arg!r}): {tool_name}() has no such parameter; "
                    f"its parameters are: {', '.join(params)}"
                )
        binder = _Binder(target, static=static)

        call_method = type(target).__call__ if not inspect.isroutine(target) else None
        if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(call_method):

            @wrapt.decorator
            async def async_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
                return await call_async(spec, wrapped, args, kwargs,
                                        bound=lambda: binder.bind(instance, args, kwargs))

            wrapped_func = async_wrapper(func)
        else:

            @wrapt.decorator
            def sync_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
                return call_sync(spec, wrapped, args, kwargs, bound=lambda: binder.bind(instance, args, kwargs))

            wrapped_func = sync_wrapper(func)
        wrapped_func.__chaoskit_spec__ = spec  # type: ignore[attr-defined]
        return wrapped_func  # type: ignore[return-value]

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
