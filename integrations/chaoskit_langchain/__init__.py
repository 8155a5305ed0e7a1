"""chaoskit for LangChain 1.x: chaos tools, ``create_agent`` middleware and a callback handler."""

# Every entry point goes through chaoskit's attempt engine: the same plans, faults and execute_tool spans as
# @chaos. See docs/langchain.md for which entry point can inject which fault.

from __future__ import annotations

# first: refuse an unsupported LangChain release before anything imports it
from . import _compat  # noqa: F401

# isort: split

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool

from chaoskit import ConfigError, Plan
from chaoskit.engine import ErrorResult

from ._callbacks import ChaosCallbackHandler, StepRecorder
from ._common import ToolErrorMessage
from ._middleware import ChaosMiddleware
from ._reference import ReActAgent, ReflexionAgent
from ._tool import chaos_tool, chaos_tools, is_chaos_tool, unwrap_tool

__all__ = [
    "ChaosCallbackHandler",
    "ChaosMiddleware",
    "ReActAgent",
    "ReflexionAgent",
    "StepRecorder",
    "ToolErrorMessage",
    "chaos_tool",
    "chaos_tools",
    "chaoskit_adapter",
    "is_chaos_tool",
    "unwrap_tool",
]


def _is_tool(obj: Any) -> bool:
    return isinstance(obj, BaseTool)


def _wrap(
    tool: Any,
    *,
    name: str | None = None,
    description: str | None = None,
    plan: Plan | None = None,
    irreversible: bool = False,
    idempotency_arg: str | None = None,
    idempotent: bool = False,
    error_result: ErrorResult | None = None,
) -> Any:
    if name is not None or description is not None:
        raise ConfigError("chaos(): name= and description= do not apply to a LangChain tool; it keeps its own")
    return chaos_tool(
        tool,
        plan,
        irreversible=irreversible,
        idempotency_arg=idempotency_arg,
        idempotent=idempotent,
        error_result=error_result,
    )


def chaoskit_adapter() -> tuple[Callable[[Any], bool], Callable[..., Any]]:
    """The ``chaoskit.adapters`` entry point: ``(is_tool, wrap)`` for ``@chaos`` on a LangChain tool.

    The contract is in ``chaoskit.adapters`` (``ENTRY_POINT_GROUP``, ``AdapterFactory``). ``is_tool(obj)`` is true
    for a LangChain ``BaseTool``; ``wrap(tool, *, name, description, plan, irreversible, idempotency_arg,
    idempotent, error_result)`` takes ``@chaos``'s keyword arguments and returns :func:`chaos_tool`'s copy of the
    tool, whose own run makes the attempt so that LangChain's callbacks and error handling see it. ``name`` and
    ``description`` raise :class:`chaoskit.ConfigError`: a LangChain tool keeps its own.
    """
    return _is_tool, _wrap
