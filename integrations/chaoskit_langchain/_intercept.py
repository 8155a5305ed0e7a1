"""Tool-call interceptors, ``(request, execute) -> ToolMessage | Command``, for middleware and ToolNode."""

# Both kinds carry an attempt out with Attempt.run_sync / run_async: the fault steps live in the engine only.

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from opentelemetry import trace

from chaoskit import Plan
from chaoskit.engine import Attempt, ErrorResult, ToolSpec, begin

from ._common import (
    PENDING,
    Pending,
    Sequencer,
    SpecTable,
    Ticket,
    ToolErrorMessage,
    parse_content,
    render_content,
    tool_spec,
)
from ._compat import model_arg_keys
from ._genai import request_context

__all__ = ["CallInterceptor", "PendingInterceptor"]

Execute = Callable[[Any], Any]
AExecute = Callable[[Any], Awaitable[Any]]

_NOT_RUN = object()


def _call_of(request: Any) -> tuple[str, dict[str, Any], str | None]:
    call = request.tool_call
    args = call.get("args")
    return call["name"], dict(args) if isinstance(args, Mapping) else {"input": args}, call.get("id")


def _begin(
    ticket: Ticket | None, spec: ToolSpec, args: dict[str, Any], call_id: str | None, request: Any, *, attach: bool
) -> Attempt:
    # the ticket orders only the counting (inside begin); releasing it at once lets the calls run in parallel
    try:
        return begin(spec, args, call_id=call_id, attach=attach, caller=request_context(request))
    finally:
        if ticket is not None:
            ticket.release()


class CallInterceptor:
    """One attempt per call through it; faults happen here, around ``execute``.

    Error faults are raised from the interceptor, data faults rewrite the ``ToolMessage`` content the model
    will read. Used by ``ChaosMiddleware`` and ``chaoskit_langgraph.chaos_interceptor``.
    """

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        order_parallel_calls: bool = True,
        idempotent: Collection[str] = (),
        error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
    ) -> None:
        self.specs = SpecTable(
            plan,
            irreversible=irreversible,
            idempotency_args=idempotency_args,
            idempotent=idempotent,
            error_result=error_result,
        )
        self.sequencer = Sequencer() if order_parallel_calls else None

    def _ticket(self, request: Any) -> Ticket | None:
        return self.sequencer.ticket(request.tool_call.get("id"), request.state) if self.sequencer else None

    def _open(self, request: Any, ticket: Ticket | None) -> _Call:
        name, args, call_id = _call_of(request)
        attempt = _begin(ticket, self.specs.get(name, request.tool), args, call_id, request, attach=True)
        return _Call(attempt, request)

    def __call__(self, request: Any, execute: Execute) -> Any:
        """Run one tool call through an attempt (the sync ``wrap_tool_call``)."""
        ticket = self._ticket(request)
        if ticket is not None:
            ticket.wait()
        call = self._open(request, ticket)
        value = call.attempt.run_sync(call.run, (execute,), {})
        return call.result(value)

    async def acall(self, request: Any, execute: AExecute) -> Any:
        """Run one tool call through an attempt (the async ``awrap_tool_call``)."""
        ticket = self._ticket(request)
        if ticket is not None:
            await ticket.await_turn()
        call = self._open(request, ticket)
        value = await call.attempt.run_async(call.arun, (execute,), {})
        return call.result(value)


class _Call:
    """Translates between what ``execute`` returns (a ``ToolMessage``) and the value a data fault works on
    (its decoded content), so that the engine sees a plain tool call."""

    __slots__ = ("attempt", "out", "request", "value")

    def __init__(self, attempt: Attempt, request: Any) -> None:
        self.attempt = attempt
        self.request = request
        self.out: Any = _NOT_RUN
        self.value: Any = _NOT_RUN

    def run(self, execute: Execute) -> Any:
        return self._unwrap(execute(self.request))

    async def arun(self, execute: AExecute) -> Any:
        return self._unwrap(await execute(self.request))

    def _unwrap(self, out: Any) -> Any:
        self.out = out
        if isinstance(out, ToolMessage):
            if out.status == "error":
                # the tool failed or refused, and the answer is a message (ToolNode's handle_tool_errors, a
                # middleware, the tool itself): the engine records it as a returned error, the model reads it
                self.value = out
                return out
            self.value = parse_content(out.content)
            return self.value
        # a Command (handoff, state update): the engine skips a data fault on it (ToolSpec.opaque_result)
        self.value = out
        return out

    def result(self, value: Any) -> Any:
        out = self.out
        if out is _NOT_RUN:
            # a fault that replaces the call (``empty`` with a value, ``garbage``): answer in the tool's place
            call = self.request.tool_call
            return ToolMessage(content=render_content(value), name=call["name"], tool_call_id=call.get("id") or "")
        if value is self.value or not isinstance(out, ToolMessage):
            return out
        return out.model_copy(update={"content": render_content(value)})


def _text(content: Any) -> str:
    return content if isinstance(content, str) else str(content)


class PendingInterceptor:
    """Opens the attempt for a :func:`chaos_tool` below it, in call order, and keeps its span current.

    The fault still happens inside the tool's run (used by ``instrument_graph`` and ``ChaosToolNode``).
    The tool's wrapper picks the attempt up and makes the fault inside ``BaseTool.run``. If the call never
    reaches the tool (bad arguments, an unknown tool name, an interceptor that answered itself), the
    attempt is closed here with what happened instead.
    """

    def __init__(self, *, max_wait_s: float = 0.25) -> None:
        self.sequencer = Sequencer(max_wait_s=max_wait_s)

    def _ticket(self, request: Any) -> Ticket | None:
        return self.sequencer.ticket(request.tool_call.get("id"), request.state)

    def _open(self, request: Any, spec: ToolSpec, ticket: Ticket | None) -> Pending:
        name, args, call_id = _call_of(request)
        # attach=False: the tool may finish the attempt in another context (a sync tool under ainvoke runs
        # in an executor), so the span is made current here with use_span instead
        return Pending(_begin(ticket, spec, _keep(request.tool, args), call_id, request, attach=False), name)

    def __call__(self, request: Any, execute: Execute) -> Any:
        """Open the attempt of a chaos tool's call and let the tool carry it out (sync)."""
        spec = tool_spec(request.tool)
        if spec is None:
            return execute(request)
        ticket = self._ticket(request)
        if ticket is not None:
            ticket.wait()
        pending = self._open(request, spec, ticket)
        with _carrying(pending):
            out = execute(request)
        return _close_unreached(pending, out)

    async def acall(self, request: Any, execute: AExecute) -> Any:
        """Open the attempt of a chaos tool's call and let the tool carry it out (async)."""
        spec = tool_spec(request.tool)
        if spec is None:
            return await execute(request)
        ticket = self._ticket(request)
        if ticket is not None:
            await ticket.await_turn()
        pending = self._open(request, spec, ticket)
        with _carrying(pending):
            out = await execute(request)
        return _close_unreached(pending, out)


@contextlib.contextmanager
def _carrying(pending: Pending) -> Iterator[None]:
    attempt = pending.attempt
    token = PENDING.set(pending)
    try:
        with trace.use_span(attempt.span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield
    except BaseException as exc:
        if not pending.consumed:
            _unreached(attempt, f"the call never reached the tool ({type(exc).__name__})")
        attempt.fail(exc)  # a no-op when the tool already closed it
        raise
    finally:
        PENDING.reset(token)


def _keep(tool: Any, args: dict[str, Any]) -> dict[str, Any]:
    keys = model_arg_keys(tool)
    return args if keys is None else {k: v for k, v in args.items() if k in keys}


def _unreached(attempt: Attempt, why: str) -> None:
    # a fault decided for a call that never reached the tool did not happen: say so, never record it as decided
    if attempt.fault is not None:
        attempt.skip(why, stacklevel=4)


def _close_unreached(pending: Pending, out: Any) -> Any:
    if not pending.consumed:
        _unreached(pending.attempt, "the call never reached the tool (answered before it ran)")
        if isinstance(out, ToolMessage) and out.status == "error":
            pending.attempt.fail(ToolErrorMessage(_text(out.content)))
        else:
            pending.attempt.succeed(out)
    return out
