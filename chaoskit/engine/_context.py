"""What is active in the current context: the plan, the call counters (a Scope) and the episode.

Call counters never live on a :class:`~chaoskit.plan.Plan` (plans are frozen data): a Scope is made per episode,
per ``plan.activate()``, and per plan for calls outside both (kept here, keyed weakly by the plan).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import chaoskit.engine._config as _config
from chaoskit.engine._effects import _copy
from chaoskit.plan._faults import _FaultBase
from chaoskit.plan._model import Plan

__all__ = ["ACTIVE", "Active", "Scope", "active_plan", "forget_counters", "live_active", "plan_scope", "resolve"]


class Scope:
    """Call counters per tool, fire counts per fault, and each tool's first real result (for ``stale``).

    A tool that no fault of the plan targets is counted with an atomic counter and no lock. Where a fault
    may fire, one lock guards counting and deciding together, so concurrent calls each get their own index
    and a ``times`` limit is never exceeded.
    """

    __slots__ = ("_counters", "_lock", "_tools", "fired", "first_results")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, itertools.count[int]] = {}
        self._tools: dict[tuple[int, str], tuple[weakref.ref[Plan], bool, bool]] = {}
        self.fired: dict[tuple[int, str], int] = {}
        self.first_results: dict[str, Any] = {}

    def tool_plan(self, plan: Plan, tool: str) -> tuple[bool, bool]:
        """``(targeted, keeps_history)``: whether a fault of ``plan`` targets ``tool``, and whether a ``stale``
        fault may replay its results. Asked on every call, so kept here per plan and tool (keyed by the
        plan's id, checked against a weak reference: a scope must not keep a plan alive)."""
        key = (id(plan), tool)
        found = self._tools.get(key)
        if found is None or found[0]() is not plan:
            found = (weakref.ref(plan), bool(plan.candidates(tool)), plan.keeps_history(tool))
            self._tools[key] = found
        return found[1], found[2]

    def _counter(self, tool: str) -> itertools.count[int]:
        counter = self._counters.get(tool)
        if counter is None:
            # setdefault is atomic: two threads racing here share one counter
            counter = self._counters.setdefault(tool, itertools.count(1))
        return counter

    def next_call(
        self, plan: Plan | None, tool: str, args: Any,
        veto: Callable[[_FaultBase], str | None] | None = None,
    ) -> tuple[int, tuple[int, _FaultBase] | None]:
        """Count a call of ``tool`` and decide its fault. A fault that ``veto`` gives a reason against (the
        entry point cannot inject it) is still returned, so it can be reported as skipped, but does not use
        up its ``times`` budget."""
        if plan is None or not self.tool_plan(plan, tool)[0]:
            # next() on itertools.count is atomic under the GIL: no lock where no fault can fire
            return next(self._counter(tool)), None
        with self._lock:
            n = next(self._counter(tool))
            decision = plan.decide(tool, n, args, self.fired)
            if decision is not None:
                index, fault = decision
                if fault.type == "garbage" and getattr(fault, "stale", False) and tool not in self.first_results:
                    # nothing earlier to serve as stale data: this call passes through, unfaulted
                    return n, None
                if veto is None or not veto(fault):
                    key = (index, tool)
                    self.fired[key] = self.fired.get(key, 0) + 1
            return n, decision

    def unfire(self, index: int, tool: str) -> None:
        """Give back the budget of a fault that was decided but then not applied."""
        with self._lock:
            key = (index, tool)
            left = self.fired.get(key, 0) - 1
            if left > 0:
                self.fired[key] = left
            else:
                self.fired.pop(key, None)

    def remember_result(self, tool: str, result: Any) -> None:
        """Keep a copy of ``tool``'s first real result, for a later ``stale`` fault to replay."""
        if tool not in self.first_results:
            # a copy taken now: the agent may change the object it got before a stale fault replays it
            snapshot = _copy(result)
            with self._lock:
                self.first_results.setdefault(tool, snapshot)


@dataclass(frozen=True, slots=True)
class Active:
    """What one ``with`` block made active: a plan (or None), its counters and the episode (or None)."""

    plan: Plan | None
    scope: Scope
    # an Episode: the episode module sits above this one, which reads only ``_ended`` and ``_outer_active``
    episode: Any


ACTIVE: ContextVar[Active | None] = ContextVar("chaoskit_active", default=None)


def live_active() -> Active | None:
    """What is active here, skipping episodes that have ended: one exited in another thread could not reset
    this context, and a later call here must not be recorded in it."""
    active = ACTIVE.get()
    while active is not None and active.episode is not None and active.episode._ended:
        active = active.episode._outer_active
    return active


@contextlib.contextmanager
def activate_plan(plan: Plan) -> Iterator[Plan]:
    """Make ``plan`` active in this context with fresh call counters, keeping the open episode."""
    current = live_active()
    token = ACTIVE.set(Active(plan, Scope(), current.episode if current else None))
    try:
        yield plan
    finally:
        ACTIVE.reset(token)


def active_plan() -> Plan | None:
    """The plan active in this context (episode, ``plan.activate()`` or ``CHAOSKIT_PLAN``), if any."""
    current = live_active()
    if current is not None and current.plan is not None:
        return current.plan
    return _config.env_plan()


# --- counters of a plan used outside any episode or activation --------------------------------------------

_plan_scopes: weakref.WeakKeyDictionary[Plan, Scope] = weakref.WeakKeyDictionary()
_plan_scopes_lock = threading.Lock()
_NO_SCOPE = Scope()


def plan_scope(plan: Plan) -> Scope:
    """The counters of ``plan`` for calls outside any episode or activation (made on first use)."""
    scope = _plan_scopes.get(plan)
    if scope is None:
        with _plan_scopes_lock:
            scope = _plan_scopes.setdefault(plan, Scope())
    return scope


def forget_counters(plan: Plan | None = None) -> None:
    """Forget the counters of ``plan`` used outside episodes and activations (of every plan with None)."""
    with _plan_scopes_lock:
        if plan is None:
            _plan_scopes.clear()
        else:
            _plan_scopes.pop(plan, None)


def resolve(pinned: Plan | None) -> tuple[Plan | None, Scope, Any]:
    """For one tool call: the plan that applies (``CHAOSKIT_DISABLE``, the tool's own, the active one, then
    ``CHAOSKIT_PLAN``), the Scope that counts the call, and the open episode."""
    active = live_active()
    episode = active.episode if active is not None else None
    plan: Plan | None
    if pinned is not None:
        plan = pinned
    elif active is not None and active.plan is not None:
        plan = active.plan
    else:
        plan = _config.env_plan()
    if plan is not None and _config.disabled():
        # the environment is read only where a plan would apply: it costs more than the rest of this
        plan = None
    if active is not None:
        scope = active.scope
    elif plan is not None:
        scope = plan_scope(plan)
    else:
        scope = _NO_SCOPE
    return plan, scope, episode
