"""Episodes: one run of an agent on one task, with fresh call counters and a root ``invoke_agent`` span."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, Status, StatusCode

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit._errors import ChaosWarning, ConfigError
from chaoskit.engine._context import ACTIVE, Active, Scope, live_active
from chaoskit.engine._digests import digested, salt_for, text_digests
from chaoskit.engine._effects import crash_reason, injected_fault
from chaoskit.engine._info import AttemptInfo, RawAttempt, from_raw, tool_name
from chaoskit.engine._span import record_error
from chaoskit.engine._tracing import traceparent_context
from chaoskit.plan._locate import _suggest
from chaoskit.plan._model import Plan
from chaoskit.telemetry import get_tracer, snapshot

__all__ = ["Episode", "current_episode", "episode"]

#: what stops an agent from outside: the generator running it was closed, its task cancelled, ^C
_STOPPED = (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt)


class Episode:
    """One agent run. Use as ``with chaoskit.episode(...) as ep:`` (or ``async with``).

    Inside, tool calls count from 1 again, the plan given here is active (with no ``plan=``, the plan that
    was already active stays active), and every attempt span is a child of this episode's ``invoke_agent``
    span. ``ep.finish(output)`` records the agent's final answer. An exception escaping the block is
    recorded as the outcome ``crashed`` and re-raised.

    A stop from outside is not a crash of the agent: ``GeneratorExit`` (a generator running the episode was
    closed instead of exhausted, e.g. a streaming consumer that stopped reading), ``asyncio.CancelledError``
    and ``KeyboardInterrupt``. The episode then ends ``completed`` when ``ep.finish(...)`` had been called
    (the agent had answered), else ``cancelled`` (it was stopped before it answered: not a success, and no
    check asks a stopped agent to have told the user anything).
    """

    #: what answers the tool calls instead of the real tools (a cassette, set by ``chaoskit.replay``): its
    #: ``lookup(spec, args, args_hash)`` returns the recorded answer (``.result()`` gives it back or raises it), or
    #: None to call the real tool
    answers: Any = None

    def __init__(
        self,
        name: str | None = None,
        plan: Plan | Mapping[str, Any] | None = None,
        *,
        capture_content: bool | None = None,
        agent_name: str | None = None,
        conversation_id: str | None = None,
        **attributes: Any,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"episode(name=...): expected a string or None, got {type(name).__name__}")
        for key, value in (("agent_name", agent_name), ("conversation_id", conversation_id)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"episode({key}=...): expected a non-empty string or None, got {value!r}")
        #: the application's agent (``gen_ai.agent.name``) and conversation (``gen_ai.conversation.id``), and
        #: the attributes they give every attempt span of the episode (string values: the hot path stores them)
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.tool_attributes: dict[str, str] = {}
        if agent_name:
            self.tool_attributes[sc.GEN_AI_AGENT_NAME] = agent_name
        if conversation_id:
            self.tool_attributes[sc.GEN_AI_CONVERSATION_ID] = conversation_id
        if capture_content is not None and not isinstance(capture_content, bool):
            raise ConfigError(f"episode(capture_content=...): expected True, False or None, got {capture_content!r}")
        #: whether :meth:`step` records the step's text and tool calls (None: the environment variable decides)
        self.capture_content = capture_content
        self.id = uuid.uuid4().hex
        self.name = name
        # a dict is checked here, where it is given, not at the first tool call
        self.plan: Plan | None = _config.as_plan(plan, "episode(plan)")
        self.attributes = attributes
        self.output: Any = None
        self._finished = False
        self.outcome: str | None = None
        self.error: BaseException | None = None
        # list.append and list() are atomic under the GIL: recording an attempt takes no lock
        self._attempts: list[RawAttempt | AttemptInfo] = []
        #: records one finished attempt: the list's own append, so that recording costs every call no frame
        self._record: Callable[[RawAttempt | AttemptInfo], None] = self._attempts.append
        self._span: trace.Span | None = None
        self._otel_token: Any = None
        self._active_token: Any = None
        self._outer: tuple[Active | None, otel_context.Context] | None = None
        self._ended = False
        self._held = False
        self._span_closed = False
        #: the tool calls the model asked for at the recorded steps, by name (see ``chaoskit.episode.tool_calls``)
        self._asked: dict[str, int] = {}
        #: the model calls seen through a model hook (``chaoskit.model.call`` given), for the root span
        self._model_calls: list[dict[str, Any]] = []

    # -- lifecycle -------------------------------------------------------------------------------------

    def __enter__(self) -> Episode:
        if self.plan is None:
            # an episode without its own plan runs under the one already active (plan.activate(), an outer
            # episode), as a tool call outside the episode would
            outer = live_active()
            if outer is not None:
                self.plan = outer.plan
        self._outer = (live_active(), otel_context.get_current())
        if _config.CONFIG.trace:
            self._span = self._start_span()
            self._otel_token = otel_context.attach(trace.set_span_in_context(self._span))
        else:
            # tracing off: no span, and the application's own spans keep their parent
            self._span = trace.INVALID_SPAN
        self._active_token = ACTIVE.set(Active(self.plan, Scope(), self))
        return self

    def _start_span(self) -> trace.Span:
        agent = self.agent_name
        if agent is None and not _config.CONFIG.latest_genai:
            # the earlier conventions' shape, kept by default: the episode's name, or the literal ``agent``
            agent = self.name or "agent"
        parent = None
        current = trace.get_current_span()
        if _ended_episode(current):
            # an episode exited in another thread left its span current here: a new episode is no child of it
            parent = traceparent_context() or otel_context.Context()
        elif not current.get_span_context().is_valid:
            parent = traceparent_context()
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.EPISODE_ID: self.id}
        if agent is not None:
            attrs[sc.GEN_AI_AGENT_NAME] = agent
        if self.conversation_id is not None:
            attrs[sc.GEN_AI_CONVERSATION_ID] = self.conversation_id
        if self.name:
            attrs[sc.SCENARIO] = self.name
        if self.plan is not None:
            attrs[sc.PLAN_SEED] = self.plan.seed
            attrs[sc.PLAN] = _attrs.to_attr_json(self.plan.to_dict(), 16384)
        for key, value in self.attributes.items():
            attrs[_attribute_name(key)] = (
                value if isinstance(value, bool | int | float | str) else _attrs.to_attr_json(value)
            )
        return get_tracer().start_span(
            f"{sc.OP_INVOKE_AGENT} {agent}" if agent else sc.OP_INVOKE_AGENT,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attrs,
        )

    def identify(self, *, agent_name: str | None = None, conversation_id: str | None = None) -> None:
        """Name the application's agent and conversation once known (the runner, once it built the agent; an
        integration, on LangGraph's ``thread_id``): on the root span (renamed ``invoke_agent {agent}``) and on
        the attempts that start from now on. What was given already, here or to :func:`episode`, is kept."""
        span = self._span
        recording = span is not None and not self._span_closed and span.is_recording()
        if agent_name and isinstance(agent_name, str) and self.agent_name is None:
            self.agent_name = agent_name
            self.tool_attributes = {**self.tool_attributes, sc.GEN_AI_AGENT_NAME: agent_name}
            if recording and span is not None:
                span.set_attribute(sc.GEN_AI_AGENT_NAME, agent_name)
                span.update_name(f"{sc.OP_INVOKE_AGENT} {agent_name}")
        if conversation_id and isinstance(conversation_id, str) and self.conversation_id is None:
            self.conversation_id = conversation_id
            self.tool_attributes = {**self.tool_attributes, sc.GEN_AI_CONVERSATION_ID: conversation_id}
            if recording and span is not None:
                span.set_attribute(sc.GEN_AI_CONVERSATION_ID, conversation_id)

    def _restore(self) -> None:
        """Undo what ``__enter__`` made current. A token can be reset only in the context that made it; an
        episode exited elsewhere (a generator resumed in another context, a callback thread, another
        asyncio task) restores the outer values in the current context instead, where they are ours."""
        otel_token, self._otel_token = self._otel_token, None
        active_token, self._active_token = self._active_token, None
        try:
            if active_token is None:
                raise RuntimeError("not entered")
            ACTIVE.reset(active_token)
        except (ValueError, RuntimeError):
            outer_active, outer_ctx = self._outer or (None, None)
            current = ACTIVE.get()
            if current is not None and current.episode is self:
                ACTIVE.set(outer_active)
            if outer_ctx is not None and trace.get_current_span() is self._span:
                otel_context.attach(outer_ctx)
            return
        if otel_token is not None:
            otel_context.detach(otel_token)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        span = self._span
        if span is None:
            raise RuntimeError("Episode.__exit__ without __enter__; use it as `with chaoskit.episode(...)`")
        self._ended = True
        self._restore()
        if exc is not None and self.outcome is None:
            if not isinstance(exc, _STOPPED):
                self.crash(exc)
            elif self._finished:
                self.outcome = "completed"
            else:
                self.outcome = "cancelled"
                self.error = exc
        elif self.outcome is None:
            self.outcome = "completed"
        try:
            if span.is_recording():
                attrs: dict[str, Any] = {sc.EPISODE_OUTCOME: self.outcome}
                if self.output is not None:
                    attrs[sc.EPISODE_OUTPUT] = _attrs.to_text(self.output, _config.CONFIG.max_output_chars)
                attrs[sc.EPISODE_ATTEMPTS] = len(self._attempts)
                # a redacted argument the user's own task gave is the user's, not an injected text's; written
                # only when an attempt carried digests, so an episode without secrets stays byte-for-byte the
                # same run to run (the salt is random), and costs nothing more
                task = self._task() if digested(self.id) else None
                if task:
                    attrs[sc.EPISODE_TASK_DIGESTS] = text_digests(task, salt_for(self.id))
                span.set_attributes(attrs)
        finally:
            if not self._held:
                self._end_span()
        self._warn_unknown_tools()

    def _task(self) -> str | None:
        """The task given as ``episode(..., task=...)``, if a string."""
        task = next((v for k, v in self.attributes.items() if _attribute_name(k) == sc.EPISODE_TASK), None)
        return task if isinstance(task, str) else None

    async def __aenter__(self) -> Episode:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- grading before the root span ends ---------------------------------------------------------------

    def keep_open(self) -> None:
        """Leave the root span open when the block ends, until :meth:`close`: for a runner that grades the
        episode in-process (from :meth:`snapshot` and the attempt spans) and puts the verdict on its root span.
        Call it inside the block; whoever calls it must call :meth:`close`."""
        self._held = True

    def snapshot(self) -> ReadableSpan | None:
        """The root span as it would be exported if it ended now (None with tracing off); after the block,
        with :meth:`keep_open`, it holds the outcome, the output and the attempt count."""
        return None if self._span is None or self._span_closed else snapshot(self._span)

    def close(self, **attributes: Any) -> None:
        """Set ``attributes`` on the root span (a bare key becomes ``chaoskit.episode.<key>``, as in
        :meth:`set_attribute`) and end it; after :meth:`keep_open`. Once; a no-op when it has ended."""
        if self._span is None or self._span_closed:
            return
        for key, value in attributes.items():
            self.set_attribute(key, value)
        self._end_span()

    def _end_span(self) -> None:
        if self._span is not None and not self._span_closed:
            self._span_closed = True
            self._span.end()

    # -- recording -------------------------------------------------------------------------------------

    def finish(self, output: Any, *, success: bool | None = None) -> None:
        """Record the agent's final output (size-capped on the span) and, when known, whether the task
        succeeded by your own criteria (``chaoskit.episode.success``, read by the checks and the score)."""
        self.output = output
        self._finished = True
        if success is not None:
            self.set_attribute(sc.EPISODE_SUCCESS, bool(success))

    def set_attribute(self, key: str, value: Any) -> None:
        """Record an attribute on the episode's root span (``key`` without a dot becomes
        ``chaoskit.episode.<key>``); for facts known only after the run."""
        span = self._span
        if span is not None and span.is_recording():
            plain = isinstance(value, bool | int | float | str)
            span.set_attribute(_attribute_name(key), value if plain else _attrs.to_attr_json(value))

    def crash(self, exc: BaseException, *, reason: str | None = None) -> None:
        """Record that the agent itself failed (e.g. a tool error it did not handle ended the run); without
        ``reason``, the one an entry point gave for ``exc`` (``chaoskit.engine.explain_crash``), if any."""
        reason = reason or crash_reason(exc)
        self.outcome = "crashed"
        self.error = exc
        span = self._span
        if span is not None and span.is_recording():
            attrs = {
                sc.ERROR_TYPE: type(exc).__qualname__,
                sc.EPISODE_ERROR: _attrs.cap(reason or f"agent crashed: {type(exc).__name__}: {exc}", 1024),
            }
            record_error(span, exc, attrs)

    def step(
        self,
        text: str | None = None,
        *,
        tool_calls: Iterable[Mapping[str, Any]] = (),
        tool_results: Iterable[Any] = (),
        model: str | None = None,
        response_model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        finish_reason: str | None = None,
        start_time: float | None = None,
        end_time: float | None = None,
        capture_content: bool | None = None,
        attributes: Mapping[str, Any] | None = None,
        error: BaseException | None = None,
        provider: str | None = None,
    ) -> None:
        """Record one model step as a ``chat {model}`` span under this episode's span.

        ``tool_calls`` are the calls the model asked for (``{"name": ..., "arguments": {...}, "id": ...}``;
        ``args`` is read as ``arguments``), ``tool_results`` the tool results it read at this step (values, or
        ``{"id": ..., "response": ...}``). Usage (``input_tokens``, ``output_tokens``) and the model name are
        always recorded; the text, the calls and the results only with content capture on
        (``capture_content=True`` here or on the episode, else ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
        =true``), redacted like tool arguments and capped. Times are epoch seconds (default: now). A no-op with
        tracing off or once the episode's span has ended. ``attributes`` are added to the span (a model fault's
        ``chaoskit.fault.*``); ``error``, the exception the call raised, makes it an ERROR span (``error.type``).
        ``provider`` is the model's provider (``gen_ai.provider.name``: ``openai``, ``anthropic``, ...).
        """
        parent = self._span
        if parent is None or self._span_closed or not parent.is_recording():
            return
        calls = [_tool_call(c) for c in tool_calls]
        self._note_calls(parent, calls)
        attrs = _step_attributes(
            self.conversation_id, provider, model, response_model, usage=(input_tokens, output_tokens)
        )
        reason = "error" if error is not None else finish_reason or ("tool_calls" if calls else "stop")
        attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = [reason]
        if attributes:
            attrs.update(attributes)
        if error is not None:
            attrs[sc.ERROR_TYPE] = type(error).__qualname__
            attrs[sc.FAULT_INJECTED] = injected_fault(error) is not None
        if _captures(capture_content, self.capture_content):
            cfg = _config.CONFIG
            # the calls get half the room at most (a huge argument is cut inside its call), the text what they
            # leave: neither a long text nor large arguments can push the other out of the attribute
            limit = cfg.max_output_chars
            kept_calls = _attrs.bounded(calls, limit // 2)
            room = limit - min(256, limit // 4) - len(_attrs.canonical_json(kept_calls)) - 96  # the JSON around
            parts: list[Any] = [{"type": "text", "content": _attrs.cap(text, max(room, 32))}] if text else []
            out = [{"role": "assistant", "parts": parts + kept_calls, "finish_reason": reason}]
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = _attrs.to_attr_json(out, cfg.max_output_chars)
            results = [_tool_result(r) for r in tool_results]
            if results:
                attrs[sc.GEN_AI_INPUT_MESSAGES] = _attrs.to_attr_json([{"role": "tool", "parts": results}])
        now = time.time()
        start = now if start_time is None else start_time
        end = max(start, now if end_time is None else end_time)
        span = get_tracer().start_span(
            f"{sc.OP_CHAT} {model}" if model else sc.OP_CHAT,
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=int(start * 1e9),
        )
        if error is not None:
            span.set_status(_failed(error, attrs.get(sc.FAULT_SUMMARY)))
        span.end(end_time=int(end * 1e9))
        if sc.MODEL_CALL in attrs:
            self._note_model_call(parent, span, attrs, start, end, error)

    def _note_model_call(
        self, parent: trace.Span, span: Any, attrs: Mapping[str, Any], start: float, end: float, error: Any
    ) -> None:
        """Add one model call to the root span's ``chaoskit.episode.model_calls``: the checks' record of the
        calls, their faults and their timing (the readers keep the root span's attributes, not the steps')."""
        if len(self._model_calls) >= _MAX_MODEL_CALLS:
            return
        call = {
            "model": attrs.get(sc.GEN_AI_REQUEST_MODEL),
            "call": attrs[sc.MODEL_CALL],
            "start": round(start, 6),
            "end": round(end, 6),
            "outcome": sc.OUTCOME_ERROR if error is not None else sc.OUTCOME_OK,
            "span_id": format(span.get_span_context().span_id, "016x"),
        }
        for key, name in (
            (sc.FAULT_TYPE, "fault"),
            (sc.FAULT_SKIPPED, "skipped"),
            (sc.RETRY_AFTER, "retry_after"),
            (sc.ERROR_TYPE, "error"),
            (sc.GEN_AI_USAGE_INPUT_TOKENS, "input_tokens"),
            (sc.GEN_AI_USAGE_OUTPUT_TOKENS, "output_tokens"),
        ):
            if attrs.get(key) is not None:
                call[name] = attrs[key]
        self._model_calls.append(call)
        parent.set_attribute(sc.EPISODE_MODEL_CALLS, json.dumps(self._model_calls, ensure_ascii=False))

    def _note_calls(self, span: trace.Span, calls: list[dict[str, Any]]) -> None:
        """Count the tool calls a step asked for on the root span (names only, whatever the content capture): the
        graders' evidence that tools ran, which tells an episode chaos never reached from a clean one."""
        for call in calls:
            name = call["name"]
            if name in self._asked or len(self._asked) < 200:
                self._asked[name] = self._asked.get(name, 0) + 1
        span.set_attribute(sc.EPISODE_TOOL_CALLS, json.dumps(self._asked, ensure_ascii=False, sort_keys=True))

    @property
    def attempts(self) -> list[AttemptInfo]:
        """Attempts made inside this episode, in the order they finished."""
        return [from_raw(a) for a in list(self._attempts)]

    @property
    def trace_id(self) -> str | None:
        """The trace id of the episode's span (32 hex digits); None before it starts or with tracing off."""
        if self._span is None:
            return None
        ctx = self._span.get_span_context()
        return f"{ctx.trace_id:032x}" if ctx.is_valid else None

    @property
    def _outer_active(self) -> Active | None:
        return self._outer[0] if self._outer is not None else None

    @property
    def span(self) -> trace.Span | None:
        """The episode's ``invoke_agent`` span (a non-recording one with tracing off)."""
        return self._span

    def _warn_unknown_tools(self) -> None:
        if self.plan is None:
            return
        called = {tool_name(a) for a in self._attempts}
        known: Iterable[str] = called | _config.CONFIG.known_tools
        for i, fault in enumerate(self.plan.faults):
            for name in fault.tool_names():
                if name not in known:
                    # the tools this episode called first: those are the agent's, the rest were only wrapped
                    names = sorted(called) + sorted(set(known) - called)
                    shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
                    warnings.warn(
                        f"{self.plan.source or '<plan>'}: faults[{i}].tool names {name!r}, but no tool of that "
                        f"name was wrapped or called{_suggest(name, names)}; this fault can never fire. "
                        f"Known tools: {shown or '(none)'}",
                        ChaosWarning,
                        stacklevel=3,
                    )


def episode(
    name: str | None = None,
    plan: Plan | Mapping[str, Any] | None = None,
    *,
    capture_content: bool | None = None,
    agent_name: str | None = None,
    conversation_id: str | None = None,
    **attributes: Any,
) -> Episode:
    """Start an episode: ``with chaoskit.episode("refund", plan=plan) as ep: ...``.

    ``plan`` is a :class:`Plan` or a dict (checked now with ``Plan.from_dict``: a bad one raises
    :class:`chaoskit.PlanError` here); anything else raises :class:`chaoskit.ConfigError`. ``capture_content``
    says whether :meth:`Episode.step` records the steps' text (None: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_
    MESSAGE_CONTENT``). ``agent_name`` is the application's agent (``gen_ai.agent.name`` on the root span and
    the attempts), ``conversation_id`` its conversation (``gen_ai.conversation.id``, e.g. LangGraph's
    ``thread_id``); both can also be given later, with :meth:`Episode.identify`.
    """
    return Episode(
        name,
        plan,
        capture_content=capture_content,
        agent_name=agent_name,
        conversation_id=conversation_id,
        **attributes,
    )


def current_episode() -> Episode | None:
    """The episode open in the current context (thread / asyncio task), if any."""
    current = live_active()
    return current.episode if current is not None else None


def _step_attributes(
    conversation: str | None,
    provider: str | None,
    model: str | None,
    response_model: str | None,
    *,
    usage: tuple[int | None, int | None],
) -> dict[str, Any]:
    """The GenAI attributes of a ``chat`` span: who served the step, in which conversation, and its usage."""
    attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}
    for key, value in (
        (sc.GEN_AI_CONVERSATION_ID, conversation),
        (sc.GEN_AI_PROVIDER_NAME, provider),
        (sc.GEN_AI_REQUEST_MODEL, model),
        (sc.GEN_AI_RESPONSE_MODEL, response_model),
    ):
        if value is not None:
            attrs[key] = str(value)
    for key, count in zip((sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS), usage, strict=True):
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigError(f"Episode.step({key.rsplit('.', 1)[1]}=...): expected an int >= 0, got {count!r}")
            attrs[key] = count
    return attrs


def _attribute_name(key: str) -> str:
    # a bare key is the episode's own: chaoskit.episode.<key>
    return key if "." in key else f"{sc.EPISODE_PREFIX}{key}"


def _captures(*choices: bool | None) -> bool:
    # the first explicit choice wins (the step's, then the episode's); else the GenAI instrumentations' switch
    for choice in choices:
        if choice is not None:
            return choice
    return os.environ.get(sc.CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def _tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A requested tool call as a GenAI ``tool_call`` message part."""
    name = call.get("name") if isinstance(call, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"Episode.step(tool_calls=...): each call must be a mapping with a 'name' string, got {call!r:.80}"
        )
    part: dict[str, Any] = {"type": "tool_call", "name": name, "arguments": call.get("arguments", call.get("args"))}
    if call.get("id") is not None:
        part["id"] = str(call["id"])
    return part


def _response_text(response: Any) -> str:
    # a tool result handed to a model as JSON text (LangChain's ToolMessage content) is parsed and redacted like
    # the same result given as a dict: {"api_key": ...} must not leak because it arrived as a string
    if isinstance(response, str) and response.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(response)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list):
            return _attrs.to_attr_json(parsed, _config.CONFIG.max_output_chars)
    return _attrs.to_text(response)


def _tool_result(result: Any) -> dict[str, Any]:
    """A tool result the model read as a GenAI ``tool_call_response`` part (its response as text, redacted)."""
    if isinstance(result, Mapping) and "response" in result:
        part: dict[str, Any] = {"type": "tool_call_response", "response": _response_text(result["response"])}
        if result.get("id") is not None:
            part["id"] = str(result["id"])
        return part
    return {"type": "tool_call_response", "response": _response_text(result)}


def _ended_episode(span: trace.Span) -> bool:
    """An episode's root span that has ended (an SDK span with an end time and an episode id)."""
    attributes = getattr(span, "attributes", None) or {}
    return getattr(span, "end_time", None) is not None and sc.EPISODE_ID in attributes


#: the most model calls the root span lists (a run far beyond any retry bound is caught well before)
_MAX_MODEL_CALLS = 500


def _failed(error: BaseException, summary: Any) -> Status:
    """The ERROR status of a failed model call: ``injected: <fault>`` when chaoskit raised it."""
    text = f"{sc.INJECTED_PREFIX}{summary}" if summary and injected_fault(error) else f"{type(error).__name__}: {error}"
    return Status(StatusCode.ERROR, _attrs.cap(text, 240))
