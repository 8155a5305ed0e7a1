"""Episodes: one run of an agent on one task, with fresh call counters and a root ``invoke_agent`` span."""

from __future__ import annotations

import os
import threading
import uuid
import warnings
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import chaoskit.engine._attrs as _attrs
import chaoskit.engine._config as _config
from chaoskit._errors import ChaosWarning, ConfigError
from chaoskit.engine._attempt import AttemptInfo
from chaoskit.engine._context import ACTIVE, Active, Scope, live_active
from chaoskit.plan._model import Plan, _suggest
from chaoskit.telemetry import get_tracer, warn_once

__all__ = ["Episode", "episode", "traceparent_context"]

_tp_cache: tuple[str, otel_context.Context | None] | None = None


def traceparent_context() -> otel_context.Context | None:
    """The parent given by a ``TRACEPARENT`` variable (W3C), so a child process joins its runner's trace.

    One that cannot be parsed is ignored, as OpenTelemetry does, with one warning naming the variable.
    """
    global _tp_cache
    value = os.environ.get("TRACEPARENT") if "TRACEPARENT" in os.environ else None
    if not value:
        return None
    cached = _tp_cache
    if cached is not None and cached[0] == value:
        return cached[1]
    ctx: otel_context.Context | None = TraceContextTextMapPropagator().extract({"traceparent": value})
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        warn_once(("TRACEPARENT", value), "chaoskit: TRACEPARENT=%r is not a W3C traceparent (expected "
                  "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>); ignored, spans start a new trace",
                  value[:200])
        ctx = None
    _tp_cache = (value, ctx)
    return ctx


class Episode:
    """One agent run. Use as ``with chaoskit.episode(...) as ep:`` (or ``async with``).

    Inside, tool calls count from 1 again, the plan given here is active (with no ``plan=``, the plan that
    was already active stays active), and every attempt span is a child of this episode's ``invoke_agent``
    span. ``ep.finish(output)`` records the agent's final answer. An exception escaping the block is
    recorded as the outcome ``crashed`` and re-raised.
    """

    def __init__(self, name: str | None = None, plan: Plan | Mapping[str, Any] | None = None,
                 **attributes: Any) -> None:
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"episode(name=...): expected a string or None, got {type(name).__name__}")
        self.id = uuid.uuid4().hex
        self.name = name
        # a dict is checked here, where it is given, not at the first tool call
        self.plan: Plan | None = _config.as_plan(plan, "episode(plan)")
        self.attributes = attributes
        self.output: Any = None
        self.outcome: str | None = None
        self.error: BaseException | None = None
        self._attempts: list[AttemptInfo] = []
        self._lock = threading.Lock()
        self._span: trace.Span | None = None
        self._tokens: list[Any] = []
        self._outer: tuple[Active | None, otel_context.Context] | None = None
        self._ended = False

    # -- lifecycle -------------------------------------------------------------------------------------

    def __enter__(self) -> Episode:
        if self.plan is None:
            # an episode without its own plan runs under the one already active (plan.activate(), an outer
            # episode), as a tool call outside the episode would
            outer = live_active()
            if outer is not None:
                self.plan = outer.plan
        tracer = get_tracer()
        agent = self.name or "agent"
        parent = None
        if not trace.get_current_span().get_span_context().is_valid:
            parent = traceparent_context()
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "chaoskit.episode.id": self.id,
        }
        if self.name:
            attrs["chaoskit.scenario"] = self.name
        if self.plan is not None:
            attrs["chaoskit.plan.seed"] = self.plan.seed
            attrs["chaoskit.plan"] = _attrs.to_attr_json(self.plan.to_dict(), 16384)
        for key, value in self.attributes.items():
            name = key if "." in key else f"chaoskit.episode.{key}"
            attrs[name] = value if isinstance(value, bool | int | float | str) else _attrs.to_attr_json(value)
        self._span = tracer.start_span(f"invoke_agent {agent}", context=parent, kind=SpanKind.INTERNAL,
                                       attributes=attrs)
        self._outer = (live_active(), otel_context.get_current())
        self._tokens.append(otel_context.attach(trace.set_span_in_context(self._span)))
        self._tokens.append(ACTIVE.set(Active(self.plan, Scope(), self)))
        return self

    def _restore(self) -> None:
        """Undo what ``__enter__`` made current. A token can be reset only in the context that made it; an
        episode exited elsewhere (a generator resumed in another context, a callback thread, another
        asyncio task) restores the outer values in the current context instead, where they are ours."""
        otel_token = self._tokens.pop(0) if self._tokens else None
        active_token = self._tokens.pop() if self._tokens else None
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
            self.crash(exc)
        elif self.outcome is None:
            self.outcome = "completed"
        try:
            if span.is_recording():
                span.set_attribute("chaoskit.episode.outcome", self.outcome)
                if self.output is not None:
                    span.set_attribute("chaoskit.episode.output",
                                       _attrs.to_text(self.output, _config.CONFIG.max_output_chars))
                span.set_attribute("chaoskit.episode.attempts", len(self._attempts))
        finally:
            span.end()
        self._warn_unknown_tools()

    async def __aenter__(self) -> Episode:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- recording -------------------------------------------------------------------------------------

    def finish(self, output: Any, *, success: bool | None = None) -> None:
        """Record the agent's final output (size-capped on the span) and, when known, whether the task
        succeeded by your own criteria (``chaoskit.episode.success``, read by the checks and the score)."""
        self.output = output
        if success is not None:
            self.set_attribute("chaoskit.episode.success", bool(success))

    def set_attribute(self, key: str, value: Any) -> None:
        """Record an attribute on the episode's root span (``key`` without a dot becomes
        ``chaoskit.episode.<key>``); for facts known only after the run."""
        name = key if "." in key else f"chaoskit.episode.{key}"
        span = self._span
        if span is not None and span.is_recording():
            span.set_attribute(
                name, value if isinstance(value, bool | int | float | str) else _attrs.to_attr_json(value)
            )

    def crash(self, exc: BaseException, *, reason: str | None = None) -> None:
        """Record that the agent itself failed (e.g. a tool error it did not handle ended the run)."""
        self.outcome = "crashed"
        self.error = exc
        span = self._span
        if span is not None and span.is_recording():
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_attribute("chaoskit.episode.error",
                               _attrs.cap(reason or f"agent crashed: {type(exc).__name__}: {exc}", 1024))
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, _attrs.cap(str(exc), 512)))

    def _record(self, info: AttemptInfo) -> None:
        with self._lock:
            self._attempts.append(info)

    @property
    def attempts(self) -> list[AttemptInfo]:
        """Attempts made inside this episode, in the order they finished."""
        with self._lock:
            return list(self._attempts)

    @property
    def trace_id(self) -> str | None:
        if self._span is None:
            return None
        return f"{self._span.get_span_context().trace_id:032x}"

    @property
    def _outer_active(self) -> Active | None:
        return self._outer[0] if self._outer is not None else None

    @property
    def span(self) -> trace.Span | None:
        return self._span

    def _warn_unknown_tools(self) -> None:
        if self.plan is None:
            return
        called = {a.tool for a in self._attempts}
        known: Iterable[str] = called | _config.CONFIG.known_tools
        for i, fault in enumerate(self.plan.faults):
            for name in fault.tool_names():
                if name not in known:
                    names = sorted(known)
                    shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
                    warnings.warn(
                        f"{self.plan.source or '<plan>'}: faults[{i}].tool names {name!r}, but no tool of that "
                        f"name was wrapped or called{_suggest(name, names)}; this fault can never fire. "
                        f"Known tools: {shown or '(none)'}",
                        ChaosWarning,
                        stacklevel=3,
                    )


def episode(name: str | None = None, plan: Plan | Mapping[str, Any] | None = None, **attributes: Any) -> Episode:
    """Start an episode: ``with chaoskit.episode("refund", plan=plan) as ep: ...``.

    ``plan`` is a :class:`Plan` or a dict (checked now with ``Plan.from_dict``: a bad one raises
    :class:`chaoskit.PlanError` here); anything else raises :class:`chaoskit.ConfigError`.
    """
    return Episode(name, plan, **attributes)
