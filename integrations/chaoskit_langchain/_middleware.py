"""``ChaosMiddleware`` for ``langchain.agents.create_agent(middleware=[...])``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from chaoskit import Plan, current_episode
from chaoskit.engine import ErrorResult, ModelCall, begin_model_call

from ._common import read_since_last_step, record_step
from ._genai import model_provider
from ._intercept import CallInterceptor
from ._modelfaults import fault_response, lc_error
from ._replay import answer_model, answer_model_async

__all__ = ["ChaosMiddleware"]

log = logging.getLogger("chaoskit")


def _model_of(request: Any) -> str | None:
    model = getattr(request, "model", None)
    for attr in ("model_name", "model"):
        name = getattr(model, attr, None)
        if isinstance(name, str) and name:
            return name
    return None


def _answer(response: Any) -> Any:
    """The model's message in what a model handler returned (a ``ModelResponse`` or the message itself)."""
    result = getattr(response, "result", None)
    if isinstance(result, list):
        return next((m for m in reversed(result) if getattr(m, "type", None) == "ai"), None)
    return response


class ChaosMiddleware(CallInterceptor, AgentMiddleware):
    """Inject chaoskit faults into every tool call of a ``create_agent`` agent, and record its model steps.

    ``ChaosMiddleware(plan=None, *, irreversible=(), idempotency_args=None, order_parallel_calls=True,
    idempotent=(), error_result=None, capture_content=None, record_steps=True)``: ``idempotent`` names tools
    whose repeats change nothing, ``error_result`` (one value, or a mapping by tool name) says which returned
    values are errors besides an error ``ToolMessage`` (see ``@chaos``).
    Each call that passes through this middleware is one attempt (one ``execute_tool`` span carrying
    ``gen_ai.tool.call.id``). Error faults are raised from the middleware, so the middleware outside it and
    the ToolNode's ``handle_tool_errors`` see them; data faults rewrite the ``ToolMessage`` content.

    Each model call inside an open episode is recorded as a step (``chat {model}`` span: usage and model; its
    text, tool calls and the tool results it read with ``capture_content=True`` or
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``); ``record_steps=False`` turns that off (use it
    when a ``ChaosCallbackHandler`` or ``StepRecorder`` on the same run records them already).

    Order matters: the first middleware in the list is the outermost. ``[ToolRetryMiddleware(), chaos]``
    puts chaos inside the retry loop (each retry is a new attempt, and the retry middleware sees the
    faults); ``[chaos, ToolRetryMiddleware()]`` makes one attempt per model tool call and the fault skips
    the retry middleware entirely.
    """

    #: it wraps every model call with the plan's model faults: ``chaoskit suggest`` reads this
    injects_model_faults = True

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        order_parallel_calls: bool = True,
        idempotent: Collection[str] = (),
        error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
        capture_content: bool | None = None,
        record_steps: bool = True,
    ) -> None:
        super().__init__(
            plan,
            irreversible=irreversible,
            idempotency_args=idempotency_args,
            order_parallel_calls=order_parallel_calls,
            idempotent=idempotent,
            error_result=error_result,
        )
        self.capture_content = capture_content
        self.record_steps = record_steps

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

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run one model call, with the plan's model fault, and record it as a step (``create_agent``'s sync
        hook). An error fault raises before the model is called; chaoskit never retries the call."""
        call = begin_model_call(_model_of(request))
        start = time.time()
        try:
            if call.delay_s:
                time.sleep(call.delay_s)
            injected = call.error(lc_error)
            if injected is not None:
                raise injected
            # answered from the episode's cassette when it replays one (and kept when it records one)
            response = fault_response(call, answer_model(request, handler, current_episode()))
        except GraphBubbleUp:
            raise  # an interrupt or a handoff inside the model call: no failed call
        except Exception as exc:
            self._record(request, None, start, call, exc)
            raise
        self._record(request, response, start, call)
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run one model call, with the plan's model fault, and record it as a step (``create_agent``'s async
        hook)."""
        call = begin_model_call(_model_of(request))
        start = time.time()
        try:
            if call.delay_s:
                await asyncio.sleep(call.delay_s)
            injected = call.error(lc_error)
            if injected is not None:
                raise injected
            response = fault_response(call, await answer_model_async(request, handler, current_episode()))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            self._record(request, None, start, call, exc)
            raise
        self._record(request, response, start, call)
        return response

    def _record(
        self, request: Any, response: Any, start: float, call: ModelCall, error: BaseException | None = None
    ) -> None:
        episode = current_episode() if self.record_steps else None
        if episode is None:
            return
        try:
            if error is not None:
                # a failed model call is a step too: a retry storm or an ignored Retry-After shows in the trace
                episode.step(
                    model=call.model,
                    start_time=start,
                    end_time=time.time(),
                    attributes=call.attributes(),
                    error=error,
                    provider=model_provider(getattr(request, "model", None)),
                )
                return
            record_step(
                episode,
                _answer(response),
                read=read_since_last_step(getattr(request, "messages", [])),
                # the name the call was counted under, as its failed calls are recorded (see the callbacks)
                model=call.model,
                start=start,
                capture=self.capture_content,
                attributes=call.attributes(),
                provider=model_provider(getattr(request, "model", None)),
            )
        except Exception:  # recording a step must never break the agent's run
            log.exception("chaoskit: could not record a model step; ignored")
