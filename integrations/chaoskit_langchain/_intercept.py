"""Tool-call interceptors: ``(request, execute) -> ToolMessage | Command``, the shape shared by
``create_agent`` middleware (``wrap_tool_call``) and LangGraph's ``ToolNode(wrap_tool_call=...)``.

Two kinds:

- :class:`CallInterceptor` makes the attempt at the interceptor: every call through it is one attempt,
  error faults are raised from it, data faults rewrite the ``ToolMessage`` content the model will read.
- :class:`PendingInterceptor` only opens the attempt (in call order) and leaves the fault to a
  :func:`chaos_tool` below it, so the fault still happens inside the tool's run (used by
  ``instrument_graph`` and ``ChaosToolNode``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from opentelemetry import trace

import chaoskit
from chaoskit import ChaosWarning, Plan
from chaoskit._engine import Attempt

from ._common import PENDING, Pending, Sequencer, SpecTable, ToolErrorMessage, parse_content, render_content

__all__ = ["CallInterceptor", "PendingInterceptor"]

Execute = Callable[[Any], Any]
AExecute = Callable[[Any], Awaitable[Any]]


def _call_of(request: Any) -> tuple[str, dict[str, Any], str | None]:
    call = request.tool_call
    args = call.get("args")
    return call["name"], dict(args) if isinstance(args, Mapping) else {"input": args}, call.get("id")


class CallInterceptor:
    """One attempt per call through it; faults happen here, around ``execute``."""

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        order_parallel_calls: bool = True,
    ) -> None:
        self.specs = SpecTable(plan, irreversible=irreversible, idempotency_args=idempotency_args)
        self.sequencer = Sequencer() if order_parallel_calls else None

    def __call__(self, request: Any, execute: Execute) -> Any:
        name, args, call_id = _call_of(request)
        spec = self.specs.get(name, request.tool)
        ticket = self.sequencer.ticket(call_id, request.state) if self.sequencer else None
        if ticket is not None:
            ticket.wait()
        try:
            attempt = chaoskit.begin(spec, args, call_id=call_id, attach=True)
        finally:
            if ticket is not None:
                ticket.release()
        try:
            pre = attempt.before
            if pre.sleep:
                time.sleep(pre.sleep)
            if pre.exc is not None:
                raise pre.exc
            out = _finish(attempt, execute(request)) if pre.call else _faked(attempt, request, pre.value)
        except BaseException as exc:
            attempt.fail(exc)
            raise
        return out

    async def acall(self, request: Any, execute: AExecute) -> Any:
        import asyncio

        name, args, call_id = _call_of(request)
        spec = self.specs.get(name, request.tool)
        ticket = self.sequencer.ticket(call_id, request.state) if self.sequencer else None
        if ticket is not None:
            await ticket.await_turn()
        try:
            attempt = chaoskit.begin(spec, args, call_id=call_id, attach=True)
        finally:
            if ticket is not None:
                ticket.release()
        try:
            pre = attempt.before
            if pre.sleep:
                await asyncio.sleep(pre.sleep)
            if pre.exc is not None:
                raise pre.exc
            out = _finish(attempt, await execute(request)) if pre.call else _faked(attempt, request, pre.value)
        except BaseException as exc:
            attempt.fail(exc)
            raise
        return out


def _faked(attempt: Attempt, request: Any, value: Any) -> ToolMessage:
    """The ToolMessage for a fault that replaces the call (``empty`` with a value, ``garbage``)."""
    call = request.tool_call
    msg = ToolMessage(content=render_content(value), name=call["name"], tool_call_id=call.get("id") or "")
    attempt.succeed(value)
    return msg


def _finish(attempt: Attempt, out: Any) -> Any:
    if isinstance(out, ToolMessage):
        if out.status == "error":
            # the tool failed and something below (ToolNode's handle_tool_errors, a middleware) turned
            # the exception into a message: the attempt failed all the same
            attempt.fail(ToolErrorMessage(_text(out.content)))
            return out
        value = parse_content(out.content)
        new = attempt.transform(value)  # raises for after_write, with the real write done
        attempt.succeed(new)
        if new is value:
            return out
        return out.model_copy(update={"content": render_content(new)})
    fault = attempt.fault
    if fault is not None and fault.type in chaoskit._effects.DATA:
        warnings.warn(
            f"chaoskit: {fault.type} on {attempt.spec.name} call {attempt.n} was not applied: the tool returned "
            f"a {type(out).__name__}, not a ToolMessage; wrap the tool with chaoskit_langchain.chaos_tool to "
            f"fault its raw result", ChaosWarning, stacklevel=3,
        )
        attempt.executed = True
        attempt.succeed(out)
        return out
    return attempt_result(attempt, out)


def attempt_result(attempt: Attempt, out: Any) -> Any:
    new = attempt.transform(out)
    attempt.succeed(new)
    return new


def _text(content: Any) -> str:
    return content if isinstance(content, str) else str(content)


class PendingInterceptor:
    """Opens the attempt for a :func:`chaos_tool` below it, in call order, and keeps its span current.

    The tool's wrapper picks the attempt up and makes the fault inside ``BaseTool.run``. If the call never
    reaches the tool (bad arguments, an unknown tool name, an interceptor that answered itself), the
    attempt is closed here with what happened instead.
    """

    def __init__(self, *, max_wait_s: float = 0.25) -> None:
        self.sequencer = Sequencer(max_wait_s=max_wait_s)

    def _open(self, request: Any) -> tuple[Attempt, Any] | None:
        tool = request.tool
        spec = getattr(type(tool), "__chaoskit_spec__", None) if tool is not None else None
        if spec is None:
            return None
        name, args, call_id = _call_of(request)
        return chaoskit.begin(spec, _keep(tool, args), call_id=call_id, attach=False), name

    def __call__(self, request: Any, execute: Execute) -> Any:
        tool = request.tool
        if tool is None or getattr(type(tool), "__chaoskit_spec__", None) is None:
            return execute(request)
        ticket = self.sequencer.ticket(request.tool_call.get("id"), request.state)
        if ticket is not None:
            ticket.wait()
        try:
            opened = self._open(request)
        finally:
            if ticket is not None:
                ticket.release()
        assert opened is not None
        attempt, name = opened
        pending = Pending(attempt, name)
        token = PENDING.set(pending)
        try:
            with trace.use_span(attempt.span, end_on_exit=False, record_exception=False,
                                set_status_on_exception=False):
                out = execute(request)
        except BaseException as exc:
            attempt.fail(exc)  # a no-op when the tool already closed it
            raise
        finally:
            PENDING.reset(token)
        _close_unreached(attempt, pending, out)
        return out

    async def acall(self, request: Any, execute: AExecute) -> Any:
        tool = request.tool
        if tool is None or getattr(type(tool), "__chaoskit_spec__", None) is None:
            return await execute(request)
        ticket = self.sequencer.ticket(request.tool_call.get("id"), request.state)
        if ticket is not None:
            await ticket.await_turn()
        try:
            opened = self._open(request)
        finally:
            if ticket is not None:
                ticket.release()
        assert opened is not None
        attempt, name = opened
        pending = Pending(attempt, name)
        token = PENDING.set(pending)
        try:
            with trace.use_span(attempt.span, end_on_exit=False, record_exception=False,
                                set_status_on_exception=False):
                out = await execute(request)
        except BaseException as exc:
            attempt.fail(exc)
            raise
        finally:
            PENDING.reset(token)
        _close_unreached(attempt, pending, out)
        return out


def _keep(tool: Any, args: dict[str, Any]) -> dict[str, Any]:
    from ._tool import _model_arg_keys

    keys = _model_arg_keys(tool)
    return args if keys is None else {k: v for k, v in args.items() if k in keys}


def _close_unreached(attempt: Attempt, pending: Pending, out: Any) -> None:
    if pending.consumed:
        return
    if isinstance(out, ToolMessage) and out.status == "error":
        attempt.fail(ToolErrorMessage(_text(out.content)))
    else:
        attempt.succeed(out)
