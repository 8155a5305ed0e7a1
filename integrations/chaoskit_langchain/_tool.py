"""``chaos_tool``: a LangChain tool whose runs go through chaoskit's attempt engine."""

# The fault happens inside BaseTool.run, where the real tool would fail: on_tool_start has fired, the tool's own
# handle_tool_error applies, on_tool_error reaches every callback and tracer, and a ToolNode sees an ordinary
# tool exception.

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

import wrapt
from langchain_core.tools import BaseTool, StructuredTool, Tool

from chaoskit import ConfigError, Plan
from chaoskit.adapters import ArgBinder, spec_of
from chaoskit.engine import ErrorResult, ToolSpec, as_plan, begin, call_async, call_sync

from ._common import CALL_ID, SUSPENDS, SpecTable, lc_error_result, not_data, take_pending, tool_spec
from ._compat import model_arg_keys, own_run_methods, retype, sync_run

__all__ = ["chaos_tool", "chaos_tools", "is_chaos_tool", "rechaos_tool", "unwrap_tool"]

T = TypeVar("T", bound=BaseTool)

# what LangChain passes to a tool function that the model never wrote
_RUNTIME_KEYS = frozenset({"callbacks", "run_manager", "config"})


def _same_options(name: str, spec: ToolSpec, **asked: Any) -> None:
    """Refuse options for an already wrapped tool that differ from the ones it was wrapped with."""
    differ = [k for k, v in asked.items() if v not in (None, False) and v != getattr(spec, k, None)]
    if differ:
        raise ConfigError(
            f"chaos_tool(): {name!r} already goes through chaoskit, wrapped with other options "
            f"({', '.join(f'{k}={getattr(spec, k, None)!r}' for k in differ)}); give "
            f"{', '.join(differ)} where it was first wrapped (@chaos under @tool, or the first chaos_tool call)"
        )


def is_chaos_tool(tool: Any) -> bool:
    """True when ``tool`` already routes its runs through chaoskit (made by :func:`chaos_tool`)."""
    return tool_spec(tool) is not None


def unwrap_tool(tool: T) -> T:
    """The tool :func:`chaos_tool` wrapped (``tool`` itself when it is not a chaos tool)."""
    original = getattr(type(tool), "__chaoskit_original__", None)
    return original if original is not None else tool


def chaos_tools(
    tools: Iterable[BaseTool | Callable[..., Any]],
    plan: Plan | None = None,
    *,
    irreversible: Iterable[str] = (),
    idempotency_args: Mapping[str, str] | None = None,
    idempotent: Iterable[str] = (),
    error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
) -> list[BaseTool]:
    """:func:`chaos_tool` for a list; ``irreversible`` / ``idempotent`` are lists of tool names,
    ``idempotency_args`` maps a tool name to its key argument, ``error_result`` is one value for every tool or
    a mapping by tool name."""
    # the same checks as every entry point that sees many tools, done once for the whole list
    table = SpecTable(
        plan,
        irreversible=_collected(irreversible),
        idempotency_args=idempotency_args,
        idempotent=_collected(idempotent),
        error_result=error_result,
    )
    out: list[BaseTool] = []
    for t in tools:
        base = t if isinstance(t, BaseTool) else _as_tool(t)
        own = error_result.get(base.name) if isinstance(error_result, Mapping) else error_result
        out.append(
            chaos_tool(
                base,
                table.plan,
                irreversible=base.name in table.irreversible,
                idempotency_arg=table.idempotency_args.get(base.name),
                idempotent=base.name in table.idempotent,
                error_result=own,
            )
        )
    return out


def _collected(names: Iterable[str]) -> Any:
    # a generator of names is fine; a bare string stays one, for SpecTable to refuse
    return names if isinstance(names, Collection) else list(names)


def _as_tool(fn: Callable[..., Any]) -> BaseTool:
    from langchain_core.tools import tool as make_tool

    return make_tool(fn)


def chaos_tool(
    tool: T,
    plan: Plan | None = None,
    *,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    idempotent: bool = False,
    error_result: ErrorResult | None = None,
) -> T:
    """Return a copy of ``tool`` whose calls go through chaoskit.

    Name, description, args schema, ``response_format``, ``handle_tool_error``, injected ``config`` /
    ``InjectedToolCallId`` / ``InjectedState`` parameters and ``tool_call_id`` handling are kept; the
    attempt span carries ``gen_ai.tool.call.id`` when the tool is invoked with a ToolCall. With ``plan`` (a
    Plan or a dict) the faults come from that plan; without, from the active one
    (``chaoskit.episode(plan=...)``). ``idempotent`` and ``error_result`` are as for ``@chaos``; a returned
    ``ToolMessage`` with ``status="error"`` is always a returned error. Wrapping a chaos tool again returns
    it unchanged; options that differ from the ones it was first wrapped with are a ``ConfigError``. A
    ``@tool`` over a ``@chaos`` function becomes a chaos tool with the function's options (one attempt per
    call, now with the tool call id).
    """
    if not isinstance(tool, BaseTool):
        raise ConfigError(f"chaos_tool(): expected a LangChain BaseTool, got {type(tool).__name__}")
    inner = _function_spec(tool)
    existing = tool_spec(tool) or inner
    if existing is not None:
        # already a chaos tool (or @chaos under @tool): a second layer would double every attempt, and
        # silently dropping irreversible=True here would hide duplicate writes
        _same_options(
            tool.name,
            existing,
            plan=plan,
            irreversible=irreversible,
            idempotency_arg=idempotency_arg,
            idempotent=idempotent,
            error_result=error_result,
        )
        return tool if inner is None else rechaos_tool(tool)
    desc = tool.description or ""
    spec = ToolSpec(
        name=tool.name,
        irreversible=irreversible,
        idempotency_arg=idempotency_arg,
        description=desc.splitlines()[0] if desc else None,
        plan=as_plan(plan, "chaos_tool(plan)"),
        idempotent=idempotent,
        error_result=lc_error_result(error_result),
        suspends=SUSPENDS,
        opaque_result=not_data,
    )
    ns, update = _chaos_members(tool, spec, _model_args(tool, idempotency_arg))
    # one class per wrapped tool: the spec lives on the class, so the pydantic instance keeps its fields only
    new: T = retype(tool, type(f"Chaos{type(tool).__name__}", (type(tool),), ns), update)
    return new


def _model_args(tool: BaseTool, idempotency_arg: str | None) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """What of a call's bound arguments the model wrote (the tool's args schema keys, else all but LangChain's
    runtime ones); a ConfigError when ``idempotency_arg`` is none of the schema's keys."""
    model_keys = model_arg_keys(tool)
    if idempotency_arg is not None and model_keys is not None and idempotency_arg not in model_keys:
        raise ConfigError(
            f"chaos_tool(idempotency_arg={idempotency_arg!r}): tool {tool.name!r} has no such argument; "
            f"its arguments are: {', '.join(sorted(model_keys))}"
        )

    def keep(args: Mapping[str, Any]) -> dict[str, Any]:
        if model_keys is None:
            return {k: v for k, v in args.items() if k not in _RUNTIME_KEYS}
        return {k: v for k, v in args.items() if k in model_keys}

    return keep


def _chaos_members(
    tool: BaseTool, spec: ToolSpec, keep: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chaos tool's class namespace (its spec, the original, the run methods that carry the call id and the
    wrapped ``_run``/``_arun`` of a subclass) and the field update of its instance (wrapped ``func``/``coroutine``)."""
    cls = type(tool)
    ns: dict[str, Any] = {
        "__chaoskit_spec__": spec,
        "__chaoskit_original__": tool,
        "__module__": cls.__module__,
        "__qualname__": f"Chaos{cls.__qualname__}",
        "run": _run_with_call_id(cls),
        "arun": _arun_with_call_id(cls),
    }
    update: dict[str, Any] = {}
    if isinstance(tool, StructuredTool | Tool):
        func = getattr(tool, "func", None)
        coro = getattr(tool, "coroutine", None)
        if func is not None:
            update["func"] = _wrap(func, spec, keep, static=True)
        if coro is not None:
            update["coroutine"] = _wrap(coro, spec, keep, static=True)
        if func is None and coro is not None:
            # a coroutine-only tool under sync invoke: LangChain's own NotImplementedError, as one attempt
            ns["_run"] = _sync_unsupported(sync_run(cls), spec, keep)
    else:
        # a hand-written subclass: wrap only the methods it defines, so BaseTool's default _arun (which
        # runs _run in an executor) stays the default and a call is never counted twice
        run, arun = own_run_methods(cls)
        if run is not None:
            ns["_run"] = _wrap(run, spec, keep, static=False)
        if arun is not None:
            ns["_arun"] = _wrap(arun, spec, keep, static=False)
    return ns, update


def _function_spec(tool: BaseTool) -> ToolSpec | None:
    """The spec of a ``@chaos`` function under ``@tool`` (its ``func`` or ``coroutine``), else None."""
    for fn in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
        spec = spec_of(fn) if fn is not None else None
        if spec is not None:
            return spec
    return None


def _without_chaoskit(tool: T) -> T:
    """``tool`` as it was before chaoskit: the original of a chaos tool, the plain functions of a ``@tool``
    over ``@chaos``."""
    tool = unwrap_tool(tool)
    update = {}
    for attr in ("func", "coroutine"):
        fn = getattr(tool, attr, None)
        if fn is not None and spec_of(fn) is not None:
            update[attr] = fn.__wrapped__
    return tool.model_copy(update=update) if update else tool


def rechaos_tool(
    tool: T,
    plan: Plan | None = None,
    *,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    idempotent: bool = False,
    error_result: ErrorResult | None = None,
) -> T:
    """:func:`chaos_tool`, also for a tool already through chaoskit (a chaos tool, or ``@tool`` over
    ``@chaos``): the options given here are added to its own (``plan``, ``idempotency_arg`` and
    ``error_result`` replace its own when given), and the result is one chaos tool, so each call is still
    one attempt, with the tool call id. What ``instrument_graph`` and ``ChaosToolNode`` do to every tool."""
    own = tool_spec(tool) or _function_spec(tool)
    if own is None:
        return chaos_tool(
            tool,
            plan,
            irreversible=irreversible,
            idempotency_arg=idempotency_arg,
            idempotent=idempotent,
            error_result=error_result,
        )
    if tool_spec(tool) is not None and plan is None and error_result is None:
        same = (irreversible <= own.irreversible, idempotent <= own.idempotent)
        if all(same) and idempotency_arg in (None, own.idempotency_arg):
            return tool  # a chaos tool that these options change nothing in
    return chaos_tool(
        _without_chaoskit(tool),
        plan if plan is not None else own.plan,
        irreversible=irreversible or own.irreversible,
        idempotency_arg=idempotency_arg or own.idempotency_arg,
        idempotent=idempotent or own.idempotent,
        error_result=error_result if error_result is not None else own.error_result,
    )


def _run_with_call_id(cls: type[BaseTool]) -> Callable[..., Any]:
    def run(self: BaseTool, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = CALL_ID.set(tool_call_id)
        try:
            return cls.run(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            CALL_ID.reset(token)

    return run


def _arun_with_call_id(cls: type[BaseTool]) -> Callable[..., Any]:
    async def arun(self: BaseTool, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = CALL_ID.set(tool_call_id)
        try:
            return await cls.arun(self, tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            CALL_ID.reset(token)

    return arun


def _sync_unsupported(
    run: Callable[..., Any], spec: ToolSpec, keep: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> Any:
    """The ``_run`` of a tool that has only a coroutine: LangChain's, which raises NotImplementedError, run as
    one attempt recorded as that error; a fault decided for it is skipped (the call cannot happen)."""
    why = f"{spec.name} has no sync implementation (only a coroutine): call it with ainvoke"

    @wrapt.decorator
    def sync_unsupported(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        attempt = take_pending(spec.name)
        if attempt is None:
            attempt = begin(spec, lambda: keep(kwargs), call_id=CALL_ID.get(), cannot_inject=lambda fault: why)
        else:
            attempt.skip(why)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            attempt.fail(exc)
            raise
        attempt.succeed(result)
        return result

    return sync_unsupported(run)


def _wrap(
    fn: Callable[..., Any], spec: ToolSpec, keep: Callable[[Mapping[str, Any]], dict[str, Any]], *, static: bool
) -> Any:
    # wrapt keeps signature and type hints: LangChain reads them to inject config/callbacks/run_manager
    binder = ArgBinder(fn, static=static)
    if inspect.iscoroutinefunction(fn):

        @wrapt.decorator
        async def async_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            attempt = take_pending(spec.name)
            if attempt is not None:
                return await attempt.run_async(wrapped, args, kwargs)
            return await call_async(
                spec,
                wrapped,
                args,
                kwargs,
                bound=lambda: keep(binder.bind(instance, args, kwargs)),
                call_id=CALL_ID.get(),
            )

        return async_wrapper(fn)

    @wrapt.decorator
    def sync_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        attempt = take_pending(spec.name)
        if attempt is not None:
            return attempt.run_sync(wrapped, args, kwargs)
        return call_sync(
            spec, wrapped, args, kwargs, bound=lambda: keep(binder.bind(instance, args, kwargs)), call_id=CALL_ID.get()
        )

    return sync_wrapper(fn)
