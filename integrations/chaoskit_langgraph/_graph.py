"""ToolNode-level chaos: ``chaos_interceptor``, ``ChaosToolNode``, ``instrument_graph``."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskit_langchain._callbacks import StepRecorder
from chaoskit_langchain._common import SpecTable
from chaoskit_langchain._intercept import CallInterceptor, PendingInterceptor
from chaoskit_langchain._tool import rechaos_tool
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode

from chaoskit import ChaosWarning, Plan
from chaoskit.engine import ErrorResult, explain_crash, injected_fault

from ._compat import (
    AWrapper,
    Wrapper,
    add_graph_callback,
    error_content,
    error_policy,
    handled_types,
    handles_errors,
    interceptors,
    policy_content,
    policy_name,
    remove_graph_callback,
    set_error_policy,
    set_interceptors,
    tools_of,
)
from ._reach import Reach, Unreached, marked, reach

__all__ = [
    "ChaosInterceptor",
    "ChaosToolNode",
    "chaos_interceptor",
    "find_tool_nodes",
    "instrument_graph",
    "is_instrumented",
    "uninstrument_graph",
]


class ChaosInterceptor(CallInterceptor):
    """``ToolNode(tools, wrap_tool_call=i, awrap_tool_call=i.acall)`` with ``i = chaos_interceptor(plan)``."""


def chaos_interceptor(
    plan: Plan | None = None,
    *,
    irreversible: Collection[str] = (),
    idempotency_args: Mapping[str, str] | None = None,
    order_parallel_calls: bool = True,
    idempotent: Collection[str] = (),
    error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
) -> ChaosInterceptor:
    """A ``wrap_tool_call`` interceptor for ``ToolNode``: one attempt per call through it.

    Pass the object as ``wrap_tool_call`` and its ``acall`` as ``awrap_tool_call`` (without ``acall``,
    ``ainvoke`` falls back to the sync interceptor and sleeps block the event loop). Error faults are raised
    from the interceptor (the ToolNode's ``handle_tool_errors`` decides what happens next); data faults
    rewrite the ToolMessage content. To fault the raw result inside the tool, use :class:`ChaosToolNode`.
    """
    return ChaosInterceptor(
        plan,
        irreversible=irreversible,
        idempotency_args=idempotency_args,
        order_parallel_calls=order_parallel_calls,
        idempotent=idempotent,
        error_result=error_result,
    )


# -- the layers instrument_graph and ChaosToolNode add to a ToolNode ------------------------------------------

_STATE = "_chaoskit_state"
#: the StepRecorder instrument_graph attached to a graph
_STEPS = "_chaoskit_steps"
#: the Unreached watcher instrument_graph attached to a graph
_WATCH = "_chaoskit_unreached"


@dataclass
class _Saved:
    tools: dict[str, BaseTool]
    wrap: Wrapper | None
    awrap: AWrapper | None
    #: the node's own ``handle_tool_errors`` (replaced by :func:`_faithful` on a node that had no interceptor)
    policy: Any = None


#: set on a tool error the node's own ``handle_tool_errors`` let through (the run ends, as without chaoskit)
_LET_THROUGH = "__chaoskit_let_through__"


def _crash_reason(node: ToolNode, flag: Any, exc: BaseException) -> str:
    injected = injected_fault(exc)
    what = f"injected {injected} fault" if injected else "tool error"
    return (
        f"agent crashed on a tool error: {type(exc).__name__}: {exc} ({what}); ToolNode "
        f"{node.name!r} re-raised it (handle_tool_errors={policy_name(flag)}), which ends the run. "
        f"Set handle_tool_errors=True (or a handler) to hand tool errors to the model."
    )


def _leaves(node: ToolNode, flag: Any, exc: BaseException) -> None:
    # LangGraph's default handle_tool_errors re-raises every tool exception: if nothing above catches it, the
    # agent crashed. The episode records that (with this reason) only when the exception ends its block.
    explain_crash(exc, _crash_reason(node, flag, exc))


def _handled(node: ToolNode, saved: _Saved, request: Any, exc: Exception) -> ToolMessage:
    """What the ToolNode does with ``exc`` raised by the user's interceptor: the same, so that adding our
    layer inside it changes nothing (the ToolNode applies ``handle_tool_errors`` to what an interceptor
    raises)."""
    if not handles_errors(node, exc):
        _leaves(node, saved.policy, exc)
        raise exc
    try:
        content = error_content(node, exc)
    except Exception as again:
        _leaves(node, saved.policy, again)
        raise
    call = request.tool_call
    return ToolMessage(content=content, name=call["name"], tool_call_id=call["id"], status="error")


def _faithful(flag: Any) -> Callable[[Exception], str]:
    """The ``handle_tool_errors`` of a node that had no interceptor before ours, with the node's own answers.

    A ToolNode applies ``handle_tool_errors`` twice: around the tool, to the exceptions it handles (the types
    a tuple or a typed handler names), and around an interceptor, to everything the interceptor raises. Without
    an interceptor only the first applies: a ``ConnectionResetError`` under ``(ValueError,)`` ends the run.
    This policy answers the first as ``flag`` does and re-raises what reaches the second, so adding our
    interceptor changes nothing.
    """

    def handle_tool_errors(e: Exception) -> str:
        if getattr(e, _LET_THROUGH, False) or isinstance(e, GraphBubbleUp):
            raise e  # the node's own policy let it through (or an interrupt): it leaves the node, as before
        if not isinstance(e, handled_types(flag)):
            raise e
        return policy_content(flag, e)

    return handle_tool_errors


def _layers(node: ToolNode, saved: _Saved, pending: PendingInterceptor) -> tuple[Wrapper, AWrapper | None]:
    user_wrap, user_awrap = saved.wrap, saved.awrap

    def let_through(exc: Exception) -> None:
        # the node's handle_tool_errors already chose not to handle it around the tool
        try:
            object.__setattr__(exc, _LET_THROUGH, True)
        except (AttributeError, TypeError):
            pass
        _leaves(node, saved.policy, exc)

    def wrap(request: Any, execute: Callable[[Any], Any]) -> Any:
        def inner(req: Any) -> Any:
            return pending(req, execute)

        if user_wrap is None:
            try:
                return inner(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                let_through(exc)
                raise
        try:
            return user_wrap(request, inner)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return _handled(node, saved, request, exc)

    async def awrap(request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        async def inner(req: Any) -> Any:
            return await pending.acall(req, execute)

        if user_wrap is None and user_awrap is None:
            try:
                return await inner(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                let_through(exc)
                raise
        try:
            return await user_awrap(request, inner) if user_awrap is not None else await inner(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return _handled(node, saved, request, exc)

    # a user sync-only wrapper stays sync-only: under ainvoke ToolNode falls back to it, as before
    return wrap, (awrap if user_awrap is not None or user_wrap is None else None)


def _instrument_node(node: ToolNode, table: SpecTable) -> bool:
    if getattr(node, _STATE, None) is not None:
        return False  # already instrumented: never wrap twice
    tools = tools_of(node)
    saved = _Saved(dict(tools), *interceptors(node), policy=error_policy(node))
    er = table.error_result
    for name, tool in list(tools.items()):
        # a tool already through chaoskit (chaos_tool, or @chaos under @tool) gets this plan and options on
        # top of its own, still one attempt per call
        tools[name] = rechaos_tool(
            tool,
            table.plan,
            irreversible=name in table.irreversible,
            idempotency_arg=table.idempotency_args.get(name),
            idempotent=name in table.idempotent,
            error_result=er.get(name) if isinstance(er, Mapping) else er,
        )
    for name, tool in list(tools.items()):
        tools[name] = marked(tool)  # so that Unreached tells these runs from ones that went around chaoskit
    set_interceptors(node, *_layers(node, saved, PendingInterceptor()))
    if saved.wrap is None and saved.awrap is None and saved.policy:
        set_error_policy(node, _faithful(saved.policy))
    object.__setattr__(node, _STATE, saved)
    return True


def _uninstrument_node(node: ToolNode) -> bool:
    saved: _Saved | None = getattr(node, _STATE, None)
    if saved is None:
        return False
    tools = tools_of(node)
    tools.clear()
    tools.update(saved.tools)
    set_interceptors(node, saved.wrap, saved.awrap)
    set_error_policy(node, saved.policy)
    object.__setattr__(node, _STATE, None)
    return True


def find_tool_nodes(graph: Any) -> list[ToolNode]:
    """Every ToolNode of a compiled graph at any depth: in subgraphs used as nodes, in graphs that node functions
    or tools hold (supervisor workers, deepagents subagents run by the ``task`` tool)."""
    return reach(graph).nodes


def _warn_blind(found: Reach) -> None:
    for part in found.blind:
        warnings.warn(part.message(), ChaosWarning, stacklevel=3)
    for where, tool in found.loose:
        warnings.warn(
            f"instrument_graph(): {where}: tool {tool.name!r} is called outside every ToolNode of the graph, so "
            f"instrument_graph cannot reach it and it runs without chaoskit. Wrap it where it is defined: "
            f"chaos_tool({tool.name}) (or @chaos under @tool).",
            ChaosWarning,
            stacklevel=3,
        )


def instrument_graph(
    graph: Any,
    plan: Plan | None = None,
    *,
    irreversible: Collection[str] = (),
    idempotency_args: Mapping[str, str] | None = None,
    idempotent: Collection[str] = (),
    error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
    record_steps: bool = True,
    capture_content: bool | None = None,
    model_faults: bool = False,
) -> Any:
    """Route every tool of every ToolNode in ``graph`` through chaoskit, in place; returns ``graph``.

    The ToolNodes are found at any depth: in subgraphs used as nodes, in graphs that node functions hold
    (langgraph-supervisor workers) and in graphs that tools hold (deepagents subagents run by ``task``). A part it
    cannot reach (a graph a node builds while it runs, a ``RemoteGraph``, a tool called outside every ToolNode)
    gets a :class:`chaoskit.ChaosWarning` naming it and the attachment that would reach it; at run time, a tool
    that runs under the graph without chaoskit gets one too.

    Supports every fault type, made inside the tool's run. Without ``plan`` the tools use the active plan
    (``chaoskit.episode(plan=...)``). Calling it again does nothing; :func:`uninstrument_graph` restores
    the original tools and interceptors. Raises ValueError when the graph has no ToolNode.
    ``idempotent`` lists tools whose repeats change nothing; ``error_result`` (one value, or a mapping by tool
    name) says which returned values are errors, besides an error ``ToolMessage`` (see ``@chaos``).

    With ``record_steps`` (the default) a :class:`~chaoskit_langchain.StepRecorder` joins the graph's callbacks,
    so every chat model call of a run inside an open episode is recorded as a model step; ``capture_content``
    is handed to it (content is recorded only when True, or with
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``). ``model_faults=True`` makes that recorder
    inject the plan's model error faults into the graph's model calls too (see docs/faults.md).
    """
    table = SpecTable(
        plan,
        irreversible=irreversible,
        idempotency_args=idempotency_args,
        idempotent=idempotent,
        error_result=error_result,
    )
    found = reach(graph)
    nodes = found.nodes
    _warn_blind(found)
    if not nodes:
        raise ValueError(
            "instrument_graph(): no ToolNode found in this graph; wrap tools with chaos_tool "
            "or attach ChaosCallbackHandler instead"
        )
    for node in nodes:
        _instrument_node(node, table)
    if (record_steps or model_faults) and getattr(graph, _STEPS, None) is None:
        recorder = StepRecorder(capture_content=capture_content, model_faults=model_faults)
        if add_graph_callback(graph, recorder):
            object.__setattr__(graph, _STEPS, recorder)
    if getattr(graph, _WATCH, None) is None:
        watcher = Unreached(repr(getattr(graph, "name", None) or type(graph).__name__))
        if add_graph_callback(graph, watcher):
            object.__setattr__(graph, _WATCH, watcher)
    return graph


def uninstrument_graph(graph: Any) -> Any:
    """Undo :func:`instrument_graph`; returns ``graph``."""
    for node in find_tool_nodes(graph):
        _uninstrument_node(node)
    recorder = getattr(graph, _STEPS, None)
    if recorder is not None:
        remove_graph_callback(graph, recorder)
        object.__setattr__(graph, _STEPS, None)
    watcher = getattr(graph, _WATCH, None)
    if watcher is not None:
        remove_graph_callback(graph, watcher)
        object.__setattr__(graph, _WATCH, None)
    return graph


def is_instrumented(graph: Any) -> bool:
    """Whether :func:`instrument_graph` instrumented a ToolNode of ``graph`` (and it was not undone)."""
    return any(getattr(n, _STATE, None) is not None for n in find_tool_nodes(graph))


class ChaosToolNode(ToolNode):
    """A ``ToolNode`` whose tools go through chaoskit (every fault type, made inside the tool's run), with
    parallel calls opened in the model's order and crashes on unhandled tool errors recorded on the episode.
    Takes ToolNode's arguments plus ``plan``, ``irreversible``, ``idempotency_args``, ``idempotent`` and
    ``error_result`` (as for :func:`instrument_graph`).
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        plan: Plan | None = None,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        idempotent: Collection[str] = (),
        error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
        **kwargs: Any,
    ) -> None:
        table = SpecTable(
            plan,
            irreversible=irreversible,
            idempotency_args=idempotency_args,
            idempotent=idempotent,
            error_result=error_result,
        )
        super().__init__(tools, **kwargs)
        _instrument_node(self, table)
