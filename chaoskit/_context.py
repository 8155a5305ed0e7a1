"""What is active in the current context: plan, call counters (a Scope), episode."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._episode import Episode
    from ._plan import Plan, _FaultBase


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
        self, plan: Plan | None, tool: str, args: Any
    ) -> tuple[int, tuple[int, _FaultBase] | None]:
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
                key = (index, tool)
                self.fired[key] = self.fired.get(key, 0) + 1
            return n, decision

    def remember_result(self, tool: str, result: Any) -> None:
        if tool not in self.first_results:
            from ._effects import _copy

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


@contextlib.contextmanager
def activate_plan(plan: Plan) -> Iterator[None]:
    current = ACTIVE.get()
    token = ACTIVE.set(Active(plan, Scope(), current.episode if current else None))
    try:
        yield
    finally:
        ACTIVE.reset(token)


def current_episode() -> Episode | None:
    """The episode open in the current context (thread / asyncio task), if any."""
    current = ACTIVE.get()
    return current.episode if current is not None else None


def active_plan() -> Plan | None:
    """The plan active in this context (episode, ``plan.activate()`` or ``CHAOSKIT_PLAN``), if any."""
    from ._config import env_plan

    current = ACTIVE.get()
    if current is not None and current.plan is not None:
        return current.plan
    return env_plan()
