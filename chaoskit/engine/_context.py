"""What is active in the current context: plan, call counters (a Scope), episode."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaoskit.engine._episode import Episode
    from chaoskit.plan._model import Plan, _FaultBase


class Scope:
    """Call counters per tool, fire counts per fault, and each tool's first real result (for ``stale``).

    One lock guards counting and deciding together, so concurrent calls each get their own index and a
    ``times`` limit is never exceeded.
    """

    __slots__ = ("_lock", "calls", "fired", "first_results")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.fired: dict[tuple[int, str], int] = {}
        self.first_results: dict[str, Any] = {}

    def next_call(
        self, plan: Plan | None, tool: str, args: Any,
        veto: Callable[[_FaultBase], str | None] | None = None,
    ) -> tuple[int, tuple[int, _FaultBase] | None]:
        """Count a call of ``tool`` and decide its fault. A fault that ``veto`` gives a reason against (the
        entry point cannot inject it) is still returned, so it can be reported as skipped, but does not use
        up its ``times`` budget."""
        with self._lock:
            n = self.calls.get(tool, 0) + 1
            self.calls[tool] = n
            if plan is None:
                return n, None
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
        if tool not in self.first_results:
            from chaoskit.engine._effects import _copy

            # a copy taken now: the agent may change the object it got before a stale fault replays it
            snapshot = _copy(result)
            with self._lock:
                self.first_results.setdefault(tool, snapshot)


@dataclass(frozen=True, slots=True)
class Active:
    plan: Plan | None
    scope: Scope
    episode: Episode | None


ACTIVE: ContextVar[Active | None] = ContextVar("chaoskit_active", default=None)


def live_active() -> Active | None:
    """What is active here, skipping episodes that have ended: one exited in another thread could not reset
    this context, and a later call here must not be recorded in it."""
    active = ACTIVE.get()
    while active is not None and active.episode is not None and active.episode._ended:
        active = active.episode._outer_active
    return active


@contextlib.contextmanager
def activate_plan(plan: Plan) -> Iterator[None]:
    current = live_active()
    token = ACTIVE.set(Active(plan, Scope(), current.episode if current else None))
    try:
        yield
    finally:
        ACTIVE.reset(token)


def current_episode() -> Episode | None:
    """The episode open in the current context (thread / asyncio task), if any."""
    current = live_active()
    return current.episode if current is not None else None


def active_plan() -> Plan | None:
    """The plan active in this context (episode, ``plan.activate()`` or ``CHAOSKIT_PLAN``), if any."""
    from chaoskit.engine._config import env_plan

    current = live_active()
    if current is not None and current.plan is not None:
        return current.plan
    return env_plan()


_NO_SCOPE = Scope()


def resolve(pinned: Plan | None) -> tuple[Plan | None, Scope, Episode | None]:
    """For one tool call: the plan that applies (``CHAOSKIT_DISABLE``, the tool's own, the active one, then
    ``CHAOSKIT_PLAN``), the Scope that counts the call, and the open episode."""
    import chaoskit.engine._config as _config

    active = live_active()
    episode = active.episode if active is not None else None
    plan: Plan | None
    if _config.disabled():
        plan = None
    elif pinned is not None:
        plan = pinned
    elif active is not None and active.plan is not None:
        plan = active.plan
    else:
        plan = _config.env_plan()
    if active is not None:
        scope = active.scope
    elif plan is not None:
        scope = plan.default_scope()
    else:
        scope = _NO_SCOPE
    return plan, scope, episode
