"""``ChaosMiddleware`` for ``langchain.agents.create_agent(middleware=[...])``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from ._intercept import CallInterceptor

__all__ = ["ChaosMiddleware"]


class ChaosMiddleware(CallInterceptor, AgentMiddleware):
    """Inject chaoskit faults into every tool call of a ``create_agent`` agent.

    ``ChaosMiddleware(plan=None, *, irreversible=(), idempotency_args=None, order_parallel_calls=True,
    idempotent=(), error_result=None)``: ``idempotent`` names tools whose repeats change nothing,
    ``error_result`` (one value, or a mapping by tool name) says which returned values are errors besides an
    error ``ToolMessage`` (see ``@chaos``).
    Each call that passes through this middleware is one attempt (one ``execute_tool`` span carrying
    ``gen_ai.tool.call.id``). Error faults are raised from the middleware, so the middleware outside it and
    the ToolNode's ``handle_tool_errors`` see them; data faults rewrite the ``ToolMessage`` content.

    Order matters: the first middleware in the list is the outermost. ``[ToolRetryMiddleware(), chaos]``
    puts chaos inside the retry loop (each retry is a new attempt, and the retry middleware sees the
    faults); ``[chaos, ToolRetryMiddleware()]`` makes one attempt per model tool call and the fault skips
    the retry middleware entirely.
    """

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run one tool call through an attempt (``create_agent``'s sync hook)."""
        out: ToolMessage | Command[Any] = self(request, handler)
        return out

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Run one tool call through an attempt (``create_agent``'s async hook)."""
        out: ToolMessage | Command[Any] = await self.acall(request, handler)
        return out
