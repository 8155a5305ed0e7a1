"""The LangGraph releases this integration supports, and every use of LangGraph's internals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from chaoskit_langchain._compat import Supported, check_installed

if TYPE_CHECKING:
    # no LangGraph import at run time before check_installed below has checked the installed release
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt import ToolNode

__all__ = [
    "LANGGRAPH",
    "LANGGRAPH_PREBUILT",
    "SUPPORTED",
    "AWrapper",
    "Wrapper",
    "add_graph_callback",
    "error_content",
    "error_policy",
    "error_policy_name",
    "handled_types",
    "handles_errors",
    "interceptors",
    "node_functions",
    "policy_content",
    "policy_name",
    "remove_graph_callback",
    "set_error_policy",
    "set_interceptors",
    "tools_of",
]

#: the releases ``chaoskit_langgraph`` is tested with (``ToolNode`` lives in langgraph-prebuilt); widen a range
#: only after the tests pass against it. The minimums are the lowest the integration tests pass on (the ones
#: langchain 1.4 needs; ``tests/integrations/test_lowest_versions.py`` runs the tests there)
LANGGRAPH: Final = Supported("langgraph", (1, 2, 11), (2,))
LANGGRAPH_PREBUILT: Final = Supported("langgraph-prebuilt", (1, 1), (2,))
SUPPORTED: Final = (LANGGRAPH, LANGGRAPH_PREBUILT)

#: ``ToolNode(wrap_tool_call=...)`` and ``ToolNode(awrap_tool_call=...)``: ``(request, execute) -> result``
Wrapper = Callable[[Any, Callable[[Any], Any]], Any]
AWrapper = Callable[[Any, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]

# ToolNode keeps its constructor's interceptors and error policy in these attributes, with no public accessor
_WRAP, _AWRAP, _ERRORS = "_wrap_tool_call", "_awrap_tool_call", "_handle_tool_errors"


def _require(node: ToolNode) -> None:
    missing = [a for a in (_WRAP, _AWRAP, _ERRORS) if not hasattr(node, a)]
    if missing:
        raise RuntimeError(
            f"chaoskit_langgraph supports {LANGGRAPH_PREBUILT}: this ToolNode has no {', '.join(missing)}, so the "
            f"installed release is not one of them; install a supported one, or wrap the tools with "
            f"chaoskit_langchain.chaos_tool instead"
        )


def tools_of(node: ToolNode) -> dict[str, BaseTool]:
    """The node's tools by name: ToolNode's own (public) mapping, so replacing an entry changes the node."""
    return node.tools_by_name


def interceptors(node: ToolNode) -> tuple[Wrapper | None, AWrapper | None]:
    """The ``wrap_tool_call`` and ``awrap_tool_call`` the node was built with (or last given)."""
    _require(node)
    wrap: Wrapper | None = getattr(node, _WRAP)
    awrap: AWrapper | None = getattr(node, _AWRAP)
    return wrap, awrap


def set_interceptors(node: ToolNode, wrap: Wrapper | None, awrap: AWrapper | None) -> None:
    """Make ``wrap`` / ``awrap`` the node's interceptors, as if given to its constructor."""
    _require(node)
    setattr(node, _WRAP, wrap)
    setattr(node, _AWRAP, awrap)


def handles_errors(node: ToolNode, exc: BaseException) -> bool:
    """Whether the node turns ``exc``, raised by its interceptor, into an error ToolMessage (else it re-raises)."""
    _require(node)
    return bool(getattr(node, _ERRORS)) and not _invalid_resume(exc)


def _invalid_resume(exc: BaseException) -> bool:
    # a resume value that failed an interrupt's schema: ToolNode lets it through so the interrupt is asked again
    try:
        from langgraph.errors import is_invalid_resume
    except ImportError:  # a langgraph before is_invalid_resume never marks such errors
        return False
    return is_invalid_resume(exc)


def error_content(node: ToolNode, exc: Exception) -> str:
    """The error ToolMessage content the node makes of ``exc`` (raises what its ``handle_tool_errors`` raises)."""
    _require(node)
    return policy_content(getattr(node, _ERRORS), exc)


def policy_content(flag: Any, exc: Exception) -> str:
    """The error ToolMessage content a ToolNode with ``handle_tool_errors=flag`` makes of ``exc`` (raises what
    ``flag`` raises)."""
    from langgraph.prebuilt.tool_node import _handle_tool_error

    return _handle_tool_error(exc, flag=flag)


def error_policy(node: ToolNode) -> Any:
    """The node's ``handle_tool_errors``, as given to its constructor (or last set)."""
    _require(node)
    return getattr(node, _ERRORS)


def set_error_policy(node: ToolNode, flag: Any) -> None:
    """Make ``flag`` the node's ``handle_tool_errors``, as if given to its constructor."""
    _require(node)
    setattr(node, _ERRORS, flag)


def handled_types(flag: Any) -> tuple[type[Exception], ...]:
    """The exceptions a ToolNode hands to ``flag`` (its ``handle_tool_errors``) when the tool raises them,
    as ``ToolNode._execute_tool_sync`` works them out (a typed handler: the types it declares)."""
    from langgraph.prebuilt.tool_node import _infer_handled_types

    if isinstance(flag, type) and issubclass(flag, Exception):
        return (flag,)
    if isinstance(flag, tuple):
        return flag
    if callable(flag) and not isinstance(flag, type):
        return _infer_handled_types(flag)
    return (Exception,)


def error_policy_name(node: ToolNode) -> str:
    """The node's ``handle_tool_errors``, for a message: a handler's name, else its repr."""
    _require(node)
    return policy_name(getattr(node, _ERRORS))


def policy_name(flag: Any) -> str:
    """A ``handle_tool_errors`` value, for a message: a handler's name, else its repr."""
    return getattr(flag, "__name__", None) or repr(flag)


def node_functions(runnable: Any) -> list[Callable[..., Any]]:
    """The user's functions behind a graph node: LangGraph wraps each in a ``RunnableCallable`` that keeps them,
    with no public accessor, in ``func`` / ``afunc`` (empty for any other runnable)."""
    return [f for f in (getattr(runnable, "func", None), getattr(runnable, "afunc", None)) if callable(f)]


def add_graph_callback(graph: Any, handler: Any) -> bool:
    """Make ``handler`` a callback of every run of the compiled ``graph``, in place: the graph's own config
    (``Pregel.config``) is merged into each run's config, callbacks included. False when ``graph`` has none."""
    if not hasattr(graph, "config"):
        return False
    config = dict(graph.config or {})
    callbacks = config.get("callbacks")
    if callbacks is None or isinstance(callbacks, list):
        config["callbacks"] = [*(callbacks or []), handler]
    else:  # a callback manager
        callbacks.add_handler(handler, inherit=True)
    graph.config = config
    return True


def remove_graph_callback(graph: Any, handler: Any) -> None:
    """Undo :func:`add_graph_callback`."""
    config = dict(getattr(graph, "config", None) or {})
    callbacks = config.get("callbacks")
    if isinstance(callbacks, list):
        config["callbacks"] = [h for h in callbacks if h is not handler] or None
        graph.config = {k: v for k, v in config.items() if v is not None}
    elif callbacks is not None:
        callbacks.remove_handler(handler)


check_installed(SUPPORTED, integration="chaoskit_langgraph", extra="langgraph")
