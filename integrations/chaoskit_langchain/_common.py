"""What the LangChain/LangGraph entry points share: call context, per-tool specs, call order, message content."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import Command

from chaoskit import ConfigError, Episode
from chaoskit.engine import Attempt, ErrorResult, ToolSpec, as_plan, refusal_check

__all__ = [
    "CALL_ID",
    "PENDING",
    "SUSPENDS",
    "Pending",
    "Sequencer",
    "SpecTable",
    "Ticket",
    "ToolErrorMessage",
    "lc_error_result",
    "names",
    "not_data",
    "parse_content",
    "read_since_last_step",
    "record_step",
    "render_content",
    "take_pending",
    "tool_spec",
]

#: what ``interrupt()`` raises inside a tool (human in the loop): the call is suspended, not an attempt, and
#: LangGraph runs it again on resume (same tool call id), which the plan counts as the call
SUSPENDS: tuple[type[BaseException], ...] = (GraphInterrupt,)


def not_data(result: Any) -> str | None:
    """Why a data fault must leave ``result`` alone: a ``Command`` (a swarm handoff, a state update) is no
    data, and faulting it would lose the handoff. The one check of every LangChain/LangGraph entry point,
    given to the engine as ``ToolSpec.opaque_result``."""
    if isinstance(result, Command) or (
        isinstance(result, list | tuple) and any(isinstance(r, Command) for r in result)
    ):
        return (
            "the tool returned a Command (a handoff or a state update), not data; a data fault would lose "
            "it (error faults still apply)"
        )
    return None


#: the ``tool_call_id`` LangChain gave ``BaseTool.run``; its ``_run``/``func`` never receive it
CALL_ID: ContextVar[str | None] = ContextVar("chaoskit_lc_call_id", default=None)


@dataclass(slots=True)
class Pending:
    """An attempt a ToolNode interceptor opened (in call order) for the tool run below it to carry out."""

    attempt: Attempt
    tool: str
    consumed: bool = False


def tool_spec(tool: Any) -> ToolSpec | None:
    """The :class:`~chaoskit.engine.ToolSpec` of a tool made by ``chaos_tool`` (kept on its class), else None."""
    return getattr(type(tool), "__chaoskit_spec__", None) if tool is not None else None


#: the attempt a PendingInterceptor opened for the chaos tool below it
PENDING: ContextVar[Pending | None] = ContextVar("chaoskit_lc_pending", default=None)


def take_pending(tool: str) -> Attempt | None:
    """The interceptor's attempt for ``tool``, once: a nested chaos tool inside it opens its own."""
    pending = PENDING.get()
    if pending is None or pending.consumed or pending.tool != tool:
        return None
    pending.consumed = True
    return pending.attempt


class ToolErrorMessage(Exception):
    """A call that never reached its tool and came back as an error ``ToolMessage``.

    Bad arguments or an unknown tool name, for instance. An error ``ToolMessage`` from a tool that ran is a
    returned error (``ReturnedError``) instead.
    """


# -- ToolMessage content <-> the value a data fault transforms --------------------------------------------


def parse_content(content: Any) -> Any:
    """LangChain JSON-encodes dict/list tool results into ToolMessage content; undo that so that
    ``empty``/``partial``/``schema_drift`` see rows and keys, as they do under ``@chaos``."""
    if isinstance(content, str):
        text = content.strip()
        if text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                return content
    return content


def render_content(value: Any) -> Any:
    """A value as ToolMessage content: strings and content blocks as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and "type" in v for v in value) and value:
        return value  # content blocks stay blocks
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


# -- returned errors: LangChain's default -----------------------------------------------------------------


def lc_error_result(error_result: ErrorResult | None) -> Any:
    """The ``error_result`` a LangChain entry point gives the engine: a ``ToolMessage`` with
    ``status="error"`` is always a returned error; any other result (a ToolMessage's decoded content) is
    judged by ``error_result`` (None: chaoskit's defaults, ``{"error": ...}`` and MCP ``isError``)."""
    base = refusal_check(error_result)

    def check(result: Any) -> str | None:
        if isinstance(result, ToolMessage):
            if result.status == "error":
                text = result.content if isinstance(result.content, str) else str(result.content)
                return text[:512] or "the tool answered with an error ToolMessage"
            return base(parse_content(result.content))
        return base(result)

    return check


def names(value: Any, argument: str) -> frozenset[str]:
    """A collection of tool names; a bare string would be read letter by letter, so it is refused."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Collection):
        raise ConfigError(
            f"{argument}: expected a list of tool names, e.g. {argument}=['issue_refund'], "
            f"got {type(value).__name__} {value!r}"
        )
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"{argument}: every tool name must be a string, got {bad[0]!r}")
    return frozenset(value)


def _per_tool(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else value


# -- per-tool specs for entry points that see many tools ---------------------------------------------------


class SpecTable:
    """ToolSpecs by tool name for the middleware, interceptor and callback handler (built once per name).

    ``error_result`` is one value for every tool or a mapping of tool name to value.
    """

    def __init__(
        self,
        plan: Any,
        *,
        irreversible: Collection[str] = (),
        idempotency_args: Mapping[str, str] | None = None,
        idempotent: Collection[str] = (),
        error_result: ErrorResult | Mapping[str, ErrorResult] | None = None,
    ) -> None:
        # checked here, where they are given: a bad plan or option fails at setup, not at the first tool call
        self.plan = as_plan(plan, "plan")
        self.irreversible = names(irreversible, "irreversible")
        self.idempotent = names(idempotent, "idempotent")
        if idempotency_args is not None and not isinstance(idempotency_args, Mapping):
            raise ConfigError(
                f"idempotency_args: expected a mapping of tool name to argument name, got "
                f"{type(idempotency_args).__name__}"
            )
        self.idempotency_args = dict(idempotency_args or {})
        for each in error_result.values() if isinstance(error_result, Mapping) else (error_result,):
            refusal_check(each)
        self.error_result = error_result
        self._specs: dict[str, ToolSpec] = {}
        self._lock = threading.Lock()

    def names(self) -> frozenset[str]:
        """Every tool name a spec was built for so far."""
        with self._lock:
            return frozenset(self._specs)

    def get(self, name: str, tool: Any = None, description: str | None = None) -> ToolSpec:
        """The spec for tool ``name`` (``tool`` itself when the entry point has it), built on first use."""
        spec = self._specs.get(name)
        if spec is not None:
            return spec
        own = tool_spec(tool)
        desc = description if description is not None else getattr(tool, "description", None)
        spec = ToolSpec(
            name=name,
            # a chaos_tool already says whether it writes; the entry point's own lists add to that
            irreversible=name in self.irreversible or bool(own and own.irreversible),
            idempotency_arg=self.idempotency_args.get(name) or (own.idempotency_arg if own else None),
            description=desc.splitlines()[0] if desc else None,
            plan=self.plan,
            idempotent=name in self.idempotent or bool(own and own.idempotent),
            # a chaos_tool's own error_result is already LangChain-aware; otherwise add LangChain's default
            error_result=(
                lc_error_result(_per_tool(self.error_result, name))
                if own is None or _per_tool(self.error_result, name) is not None
                else own.error_result
            ),
            suspends=SUSPENDS,
            opaque_result=not_data,
        )
        with self._lock:
            return self._specs.setdefault(name, spec)


# -- deterministic order for parallel tool calls ------------------------------------------------------------


@dataclass
class _Step:
    ids: tuple[str, ...]
    turn: int = 0
    released: set[int] = field(default_factory=set)
    started: set[str] = field(default_factory=set)


class Ticket:
    """One tool call's place in its step: it may open its attempt once every earlier call has opened its own."""

    __slots__ = ("pos", "seq", "step")

    def __init__(self, seq: Sequencer, step: _Step, pos: int) -> None:
        self.seq, self.step, self.pos = seq, step, pos

    def wait(self) -> None:
        """Block until it is this call's turn (or the calls before it are given up on)."""
        cond = self.seq.cond
        with cond:
            while not cond.wait_for(lambda: self.step.turn >= self.pos, timeout=self.seq.max_wait_s):
                self._skip_absent()

    async def await_turn(self) -> None:
        """:meth:`wait` for a coroutine: yield to the event loop until it is this call's turn."""
        # an asyncio.gather of calls shares one thread: poll instead of blocking the loop
        deadline = time.monotonic() + self.seq.max_wait_s
        spins = 0
        while self.step.turn < self.pos:
            if time.monotonic() >= deadline:
                with self.seq.cond:
                    self._skip_absent()
                deadline = time.monotonic() + self.seq.max_wait_s
            await asyncio.sleep(0 if spins < 50 else 0.001)
            spins += 1

    def _skip_absent(self) -> None:
        # earlier calls that never arrived (answered elsewhere, dropped by another interceptor) lose their
        # turn; earlier calls that did arrive keep it: they open their attempt within microseconds
        step = self.step
        while step.turn < self.pos and (step.ids[step.turn] not in step.started or step.turn in step.released):
            step.turn += 1
        self.seq.cond.notify_all()

    def release(self) -> None:
        """This call has opened its attempt: let the next one go."""
        seq, step = self.seq, self.step
        with seq.cond:
            step.released.add(self.pos)
            while step.turn in step.released:
                step.turn += 1
            # a finished step stays (up to 256 of them) so that a retry of one of its calls is recognised
            seq.cond.notify_all()


class Sequencer:
    """Orders the *start* of the parallel tool calls of one model turn by their position in the AIMessage.

    ToolNode runs the calls of one step in a thread pool (sync) or ``asyncio.gather`` (async), and
    ``create_agent`` sends each call as its own task: which call counts first is up to the scheduler. The
    engine counts calls per tool under a lock, so indices never collide; this makes them also repeatable
    (call 1 of ``search`` is always the first ``search`` the model asked for). Only the opening of the
    attempt is ordered, so the calls still run in parallel. A call that never shows up (answered before, or
    dropped by another interceptor) holds the others back at most ``max_wait_s``.
    """

    def __init__(self, *, max_wait_s: float = 0.25) -> None:
        self.cond = threading.Condition()
        self.steps: dict[tuple[str, ...], _Step] = {}
        self.max_wait_s = max_wait_s

    def ticket(self, call_id: str | None, state: Any) -> Ticket | None:
        """The call's place among the parallel calls of its step; None when it need not wait for any."""
        if not call_id:
            return None
        ids = _pending_ids(call_id, state)
        if ids is None or len(ids) < 2:
            return None
        with self.cond:
            step = self.steps.get(ids)
            if step is None:
                if len(self.steps) >= 256:  # forget the oldest step
                    self.steps.pop(next(iter(self.steps)))
                step = self.steps[ids] = _Step(ids)
            if call_id in step.started:
                return None  # a retry of a call that already took its turn
            step.started.add(call_id)
            return Ticket(self, step, ids.index(call_id))


def _messages(state: Any) -> list[Any]:
    if isinstance(state, Mapping):
        msgs = state.get("messages")
    elif isinstance(state, list):
        msgs = state
    else:
        msgs = getattr(state, "messages", None)
    return list(msgs) if isinstance(msgs, list) else []


def _pending_ids(call_id: str, state: Any) -> tuple[str, ...] | None:
    msgs = _messages(state)
    for i in range(len(msgs) - 1, -1, -1):
        calls = getattr(msgs[i], "tool_calls", None)
        if not calls:
            continue
        ids = [c.get("id") for c in calls]
        if call_id not in ids:
            continue
        answered = {getattr(m, "tool_call_id", None) for m in msgs[i + 1 :]}
        return tuple(c for c in ids if c and (c not in answered or c == call_id))
    return None


# -- model steps as chat spans -------------------------------------------------------------------------------


def read_since_last_step(messages: Any) -> list[dict[str, Any]]:
    """The tool results a model reads at this step: the ``ToolMessage``s after the last ``AIMessage``."""
    msgs = _messages(messages)
    out: list[dict[str, Any]] = []
    for m in reversed(msgs):
        if isinstance(m, AIMessage):
            break
        if isinstance(m, ToolMessage):
            out.append({"id": m.tool_call_id, "response": m.content})
    out.reverse()
    return out


def _model_name(message: BaseMessage, fallback: str | None) -> str | None:
    meta = getattr(message, "response_metadata", None) or {}
    name = meta.get("model_name") or meta.get("model") if isinstance(meta, Mapping) else None
    return str(name) if name else fallback


#: the model answers already recorded per episode (by message id): two recorders on one agent (middleware and
#: callback handler, or instrument_graph and middleware) see the same answer, and it must count once
_RECORDED: weakref.WeakKeyDictionary[Episode, set[str]] = weakref.WeakKeyDictionary()
_RECORDED_LOCK = threading.Lock()


def _seen(episode: Episode, message: AIMessage) -> bool:
    """Whether ``message`` was already recorded as a step of ``episode`` (and remember it if not)."""
    key = message.id
    if not key:  # LangChain gives every model answer an id; without one there is nothing safe to match on
        return False
    with _RECORDED_LOCK:
        try:
            done = _RECORDED.setdefault(episode, set())
        except TypeError:  # not weak-referenceable: no deduplication rather than a leak
            return False
        if key in done:
            return True
        done.add(key)
        return False


def record_step(
    episode: Episode | None,
    message: Any,
    *,
    read: list[dict[str, Any]],
    model: str | None,
    start: float,
    capture: bool | None,
    attributes: Mapping[str, Any] | None = None,
    provider: str | None = None,
) -> None:
    """Record the model's answer ``message`` (an ``AIMessage``) as one step of ``episode``: its text and
    requested tool calls, the tool results it read, its usage, model and provider (and ``attributes``: the model
    call's number and fault). Anything else is not a step."""
    if episode is None or not isinstance(message, AIMessage) or _seen(episode, message):
        return
    usage: Mapping[str, Any] = message.usage_metadata or {}
    episode.step(
        message.text or None,
        tool_calls=[{"name": c["name"], "arguments": c.get("args"), "id": c.get("id")} for c in message.tool_calls],
        tool_results=read,
        model=model or _model_name(message, None),
        response_model=_model_name(message, None),
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        start_time=start,
        end_time=time.time(),
        capture_content=capture,
        finish_reason=_finish_reason(message),
        attributes=attributes,
        provider=provider,
    )


def _finish_reason(message: AIMessage) -> str | None:
    # what the provider said (``length`` for a cut completion); None lets the step say stop / tool_calls
    reason = message.response_metadata.get("finish_reason")
    return reason if isinstance(reason, str) and reason else None
