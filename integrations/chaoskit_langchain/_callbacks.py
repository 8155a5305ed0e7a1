"""``ChaosCallbackHandler``: chaos for any run that accepts LangChain callbacks, with no change to its code."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from chaoskit import Episode, Plan, current_episode
from chaoskit.engine import Attempt, ErrorResult, ModelCall, begin, begin_model_call
from chaoskit.faults import DATA_FAULTS as DATA

from ._common import SpecTable, read_since_last_step, record_step
from ._compat import ARGUMENT_ERRORS, chat_model_name
from ._genai import call_context, provider_name
from ._modelfaults import lc_error

__all__ = ["ChaosCallbackHandler", "StepRecorder"]

log = logging.getLogger("chaoskit")

_CANNOT = (
    "a LangChain callback cannot replace a tool's output (callback return values are ignored); "
    "use chaoskit_langchain.chaos_tool, ChaosMiddleware or chaoskit_langgraph.instrument_graph to inject {t}"
)


def _cannot_inject(fault: Any) -> str | None:
    if fault.type in DATA:
        return f"ChaosCallbackHandler cannot inject {fault.type}: " + _CANNOT.format(t=fault.type)
    return None


#: the model error this context's handler is raising on purpose (LangChain logs it as it re-raises it)
_RAISING: contextvars.ContextVar[str | None] = contextvars.ContextVar("chaoskit_raising_model_fault", default=None)


class _InjectedModelFault(logging.Filter):
    """Drops LangChain's "Error in StepRecorder.on_chat_model_start callback" warning for a model fault the
    handler raised on purpose (LangChain logs every exception a callback raises before it re-raises it): the
    fault is on the call's span, and one warning line per injected fault would read as a bug in the handler
    and flood the terminal of a battery run. Any other callback error is logged as LangChain logs it."""

    def filter(self, record: logging.LogRecord) -> bool:
        raising = _RAISING.get()
        args = record.args
        if raising is None or not isinstance(args, tuple) or len(args) != 3:
            return True
        return not (args[1] == "on_chat_model_start" and args[2] == raising)


_FILTER = _InjectedModelFault()
logging.getLogger("langchain_core.callbacks.manager").addFilter(_FILTER)


class _StepHooks:
    """The chat-model hooks that record each model call as a step (``chat {model}`` span) of the open episode."""

    capture_content: bool | None
    record_steps: bool
    model_faults: bool

    def _init_steps(self, capture_content: bool | None, record_steps: bool, model_faults: bool = False) -> None:
        self.capture_content = capture_content
        self.record_steps = record_steps
        self.model_faults = model_faults
        #: per model run: its episode, start, model, what it reads anew and its provider
        self._steps: dict[UUID, tuple[Episode, float, str | None, list[dict[str, Any]], str | None]] = {}
        self._steps_lock = threading.Lock()
        #: the model calls counted by a handler that injects model faults, by run, for their steps' attributes
        self._calls: dict[UUID, ModelCall] = {}

    @property
    def injects_model_faults(self) -> bool:
        """Whether this handler injects the plan's model faults (``model_faults=True``): ``chaoskit suggest``
        proposes model-fault cases for an agent that holds one."""
        return bool(getattr(self, "model_faults", False))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Note when the model call started, in which episode, for which model, and what it reads anew; with
        ``model_faults``, count the call and sleep or raise its fault (see :meth:`_model_fault`)."""
        episode = current_episode() if self.record_steps else None
        if episode is not None:
            try:
                model = chat_model_name(serialized, metadata, kwargs.get("invocation_params"))
                provider = provider_name((metadata or {}).get("ls_provider"))
                call_context(metadata)  # the conversation, for the episode
                read = read_since_last_step(messages[0] if messages else [])
            except Exception:  # recording must never stop the model call (raise_error is on for the tool hooks)
                log.exception("chaoskit: could not read a model call's start; its step is not recorded")
            else:
                with self._steps_lock:
                    self._steps[run_id] = (episode, time.time(), model, read, provider)
        if self.model_faults:
            self._model_fault(run_id, chat_model_name(serialized, metadata, kwargs.get("invocation_params")))

    def _model_fault(self, run_id: UUID, model: str | None) -> None:
        """Count the model call and apply its fault: a model error is raised before the model is called
        (LangChain re-raises it when ``raise_error`` is on); a completion fault cannot be injected here."""
        call = begin_model_call(model)
        if call.delay_s:
            time.sleep(call.delay_s)
        exc = call.error(lc_error)
        if exc is not None:
            with self._steps_lock:
                started = self._steps.pop(run_id, None)
            if started is not None:  # LangChain fires no on_llm_error after a raising start: the step ends here
                started[0].step(
                    model=call.model,
                    start_time=started[1],
                    attributes=call.attributes(),
                    error=exc,
                    provider=started[4],
                )
            _RAISING.set(repr(exc))
            raise exc
        if call.fault is not None and call.fault.type != "latency":
            call.skip(f"a callback handler cannot change a model's answer ({call.fault.type}): use ChaosMiddleware")
        with self._steps_lock:
            self._calls[run_id] = call

    def on_llm_end(self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        """Record the finished model call as a step: its message, usage and model."""
        with self._steps_lock:
            started = self._steps.pop(run_id, None)
            call = self._calls.pop(run_id, None)
        if started is None:
            return
        episode, start, model, read, provider = started
        try:
            generation = response.generations[0][0]
            record_step(
                episode,
                getattr(generation, "message", None),
                read=read,
                # a counted call is recorded under the name it was counted under, as its failed calls are: the
                # checks group a model's calls by that name, and a retry under another name would go unseen
                model=model if call is None else call.model,
                provider=provider,
                start=start,
                capture=self.capture_content,
                attributes=None if call is None else call.attributes(),
            )
        except Exception:  # recording must never break the agent's run (raise_error is on for the tool hooks)
            log.exception("chaoskit: could not record a model step; ignored")

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a model call that failed: it produced no step."""
        with self._steps_lock:
            self._steps.pop(run_id, None)
            self._calls.pop(run_id, None)


class StepRecorder(_StepHooks, BaseCallbackHandler):
    """A callback handler that only records model steps (no tool chaos): ``config={"callbacks": [StepRecorder()]}``.

    Each chat model call inside an open ``chaoskit.episode`` becomes a ``chat {model}`` span under it, with its
    usage (``gen_ai.usage.*``) and model; its text, tool calls and the tool results it read only with
    ``capture_content=True`` (or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``). Outside an episode
    it records nothing. ``instrument_graph`` attaches one to the graph. With ``model_faults=True`` it also
    injects the plan's model error faults and ``latency`` into each model call, as
    ``ChaosCallbackHandler(model_faults=True)`` does (``instrument_graph(model_faults=True)``).
    """

    raise_error: bool = False
    run_inline: bool = True

    def __init__(self, *, capture_content: bool | None = None, model_faults: bool = False) -> None:
        super().__init__()
        self._init_steps(capture_content, True, model_faults)
        # LangChain re-raises only what a handler with raise_error raises: an injected model error must get out
        self.raise_error = model_faults


class ChaosCallbackHandler(_StepHooks, BaseCallbackHandler):
    """Attach to any LangChain/LangGraph run: one attempt span per tool run it observes, with faults.

    It works on an existing compiled graph too: ``graph.invoke(x, config={"callbacks": [handler]})``. A
    callback can honestly do three things to a tool run: delay it, fail it before it runs (LangChain re-raises
    what ``on_tool_start`` raises because ``raise_error`` is True), and fail it after it ran. It cannot replace
    the tool's output: LangChain ignores callback return values.

    Supported: ``error``, ``timeout``, ``http``, ``rate_limit``, ``auth_expired`` (raised from
    ``on_tool_start``: the tool does not run), ``latency`` (slept in ``on_tool_start``) and ``http`` with
    ``after_write`` (raised from ``on_tool_end``: the tool ran). ``empty``, ``partial``, ``schema_drift``,
    ``garbage`` and ``prompt_injection`` are not injected, with a :class:`chaoskit.ChaosWarning` that names the
    entry points that can inject them, and the span records ``chaoskit.fault.skipped``.

    ``idempotent`` names tools whose repeats change nothing; ``error_result`` (one value, or a mapping by tool
    name) says which returned values are errors, on top of an error ``ToolMessage`` (see ``@chaos``).

    It also records each chat model call inside the open episode as a model step (see :class:`StepRecorder`;
    ``record_steps=False`` turns that off, ``capture_content=True`` records the steps' text and tool calls).

    Ordering: LangChain calls handlers in list order and stops at the first that raises. Handlers listed
    *before* this one see ``on_tool_start`` and then nothing for an injected pre-run fault; handlers
    *after* it never see the run. Put it last so tracers at least record the start.
    """

    raise_error: bool = True  # without it LangChain logs and swallows what we raise
    run_inline: bool = False

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        idempotent: Collection[str] = (),
        error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
        capture_content: bool | None = None,
        record_steps: bool = True,
        model_faults: bool = False,
    ) -> None:
        super().__init__()
        self._init_steps(capture_content, record_steps, model_faults)
        self.specs = SpecTable(
            plan,
            irreversible=irreversible,
            idempotency_args=idempotency_args,
            idempotent=idempotent,
            error_result=error_result,
        )
        self._open: dict[UUID, Attempt] = {}
        self._lock = threading.Lock()

    # -- LangChain callback hooks --------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open the run's attempt; sleep or raise the fault that applies before the tool runs."""
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        spec = self.specs.get(str(name), description=(serialized or {}).get("description"))
        args = dict(inputs) if isinstance(inputs, Mapping) else {"input": input_str}
        caller = call_context(metadata)
        attempt = begin(
            spec, args, call_id=kwargs.get("tool_call_id"), attach=False, cannot_inject=_cannot_inject, caller=caller
        )
        pre = attempt.before
        try:
            if pre.sleep:
                time.sleep(pre.sleep)
            if pre.exc is not None:
                # LangChain fires neither on_tool_error nor on_tool_end after a raising on_tool_start
                raise pre.exc
        except BaseException as exc:
            attempt.fail(exc)
            raise
        with self._lock:
            self._open[run_id] = attempt

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        """Close the run's attempt with the tool's output, raising an ``after_write`` fault first."""
        attempt = self._pop(run_id)
        if attempt is None:
            return
        try:
            # only after_write can act here: it raises, with the write done. An error ToolMessage (the tool's
            # handle_tool_error turned its failure into one) is a returned error: transform records it and
            # skips the fault, which would claim a write that did not happen
            attempt.transform(output)
        except BaseException as exc:
            attempt.fail(exc)
            raise
        attempt.succeed(output)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Close the run's attempt with the tool's error."""
        attempt = self._pop(run_id)
        if attempt is None:
            return
        # as under @chaos, a tool that raised its own error did run (it may have written before failing);
        # only arguments LangChain rejected before calling it mean it did not
        attempt.executed = not isinstance(error, ARGUMENT_ERRORS)
        attempt.fail(error)

    def _pop(self, run_id: UUID) -> Attempt | None:
        with self._lock:
            return self._open.pop(run_id, None)
