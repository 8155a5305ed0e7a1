"""What is active in the current context: the plan, the call counters (a Scope) and the episode.

Call counters never live on a :class:`~chaoskit.plan.Plan` (plans are frozen data): a Scope is made per episode,
per ``plan.activate()``, and per plan for calls outside both (kept here, keyed weakly by the plan).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import chaoskit.engine._config as _config
from chaoskit.engine._effects import _copy
from chaoskit.plan._faults import CascadingFailureFault, _FaultBase
from chaoskit.plan._model import Plan, ToolRules

__all__ = [
    "ACTIVE",
    "DISABLE_KEY",
    "ENVIRON",
    "ENV_DATA",
    "Active",
    "Scope",
    "active_get",
    "active_plan",
    "forget_counters",
    "live_active",
    "plan_scope",
    "resolve",
]


class Scope:
    """Call counters per tool, fire counts per fault, and each tool's first real result (for ``stale``).

    A call is counted with an atomic counter (``next`` on an ``itertools.count``, one step under the GIL) and
    decided by the pure :meth:`Plan.decide <chaoskit.plan.Plan.decide>` from its number: no lock. Only where a
    ``times`` budget is read does one lock guard counting and deciding together, so concurrent calls each get
    their own index and the budget is never exceeded; a fault that fires takes the lock to count its fire.
    """

    __slots__ = ("_lock", "counters", "fired", "first_results", "outages", "resumes")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: the call counter per tool (read through :meth:`counter`, or ``counters.get`` on the hot path)
        self.counters: dict[str, itertools.count[int]] = {}
        self.fired: dict[tuple[int, str], int] = {}
        self.first_results: dict[str, Any] = {}
        # cascading_failure outages in progress (None until one starts, so other plans pay one test)
        self.outages: _Outages | None = None
        # call numbers kept for the calls that resume suspended ones, by (tool, call id) (None until a call
        # is suspended, so other scopes pay one test)
        self.resumes: dict[tuple[str, str | None], int] | None = None

    def counter(self, tool: str) -> itertools.count[int]:
        """The call counter of ``tool`` in this scope (``next()`` of it is the call's number)."""
        counter = self.counters.get(tool)
        if counter is None:
            # setdefault is atomic: two threads racing here share one counter
            counter = self.counters.setdefault(tool, itertools.count(1))
        return counter

    def suspend(self, tool: str, call_id: str | None, n: int) -> None:
        """A call of ``tool`` numbered ``n`` was suspended: the call that resumes it (same call id) gets ``n``."""
        with self._lock:
            if self.resumes is None:
                self.resumes = {}
            self.resumes[(tool, call_id)] = n

    def number(self, tool: str, call_id: str | None, counter: Iterator[int]) -> int:
        """The number of a call of ``tool``: the one a suspended call kept for it, else the next count."""
        resumes = self.resumes
        if resumes:
            kept = resumes.pop((tool, call_id), None)  # atomic under the GIL; callers may hold the lock
            if kept is not None:
                return kept
        return next(counter)

    def next_call(
        self,
        plan: Plan | None,
        tool: str,
        args: Any,
        veto: Callable[[_FaultBase], str | None] | None = None,
        rules: ToolRules | None = None,
        call_id: str | None = None,
    ) -> tuple[int, tuple[int, _FaultBase] | None]:
        """Count a call of ``tool`` and decide its fault (``rules``: ``plan.rules(tool)``, when the caller has
        it). A fault that ``veto`` gives a reason against (the entry point cannot inject it) is still returned,
        so it can be reported as skipped, but does not use up its ``times`` budget."""
        if plan is None:
            return self.number(tool, call_id, self.counter(tool)), None
        if rules is None:
            rules = plan.rules(tool)
        if not rules.targeted:
            return self.number(tool, call_id, self.counter(tool)), None
        if self.outages is not None:
            with self._lock:
                n = self.number(tool, call_id, self.counter(tool))
                shared = self.outages.hit(tool)
                if shared is not None:
                    return n, shared
                decision = rules.decide(plan.seed, tool, n, args, self.fired)
                self.outages.upstream_called(tool, None if decision is None else decision[0])
                return n, None if decision is None else self._fire(decision, tool, veto)
        if not rules.budgeted:
            # no times budget: the decision depends on the call's number (and arguments) alone
            n = self.number(tool, call_id, self.counter(tool))
            decision = rules.decide(plan.seed, tool, n, args, self.fired)
            if decision is None:
                return n, None
            with self._lock:
                return n, self._fire(decision, tool, veto)
        with self._lock:
            n = self.number(tool, call_id, self.counter(tool))
            decision = rules.decide(plan.seed, tool, n, args, self.fired)
            return n, None if decision is None else self._fire(decision, tool, veto)

    def fire(
        self, decision: tuple[int, _FaultBase], tool: str, veto: Callable[[_FaultBase], str | None] | None
    ) -> tuple[int, _FaultBase] | None:
        """Count the fire of a fault decided for a call counted without the lock (no ``times`` budget, no
        outage); None when it passes through after all (a ``stale`` fault with nothing to replay yet)."""
        with self._lock:
            return self._fire(decision, tool, veto)

    def _fire(
        self,
        decision: tuple[int, _FaultBase],
        tool: str,
        veto: Callable[[_FaultBase], str | None] | None,
    ) -> tuple[int, _FaultBase] | None:
        # under the lock
        index, fault = decision
        if fault.type == "garbage" and getattr(fault, "stale", False) and tool not in self.first_results:
            # nothing earlier to serve as stale data: this call passes through, unfaulted
            return None
        if veto is None or not veto(fault):
            key = (index, tool)
            self.fired[key] = self.fired.get(key, 0) + 1
            if isinstance(fault, CascadingFailureFault):
                if self.outages is None:
                    self.outages = _Outages()
                self.outages.start(index, fault, tool)
        return decision

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


class _Outages:
    """The ``cascading_failure`` outages of one scope, keyed by fault index: the copy of the fault the
    dependents get, the upstream tool, and the calls each dependent has failed so far (used under the lock)."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active: dict[int, tuple[CascadingFailureFault, str, dict[str, int]]] = {}

    def start(self, index: int, fault: CascadingFailureFault, upstream: str) -> None:
        """The fault fired on ``upstream``: its dependents fail from their next call (a window restarts)."""
        self.active[index] = (fault.cascaded(upstream), upstream, {})

    def hit(self, tool: str) -> tuple[int, _FaultBase] | None:
        """The outage a call of ``tool`` shares, if one is on (counting the call against ``for_calls``)."""
        for index, (fault, _, used) in self.active.items():
            if fault.depends(tool):
                n = used.get(tool, 0)
                if fault.for_calls is None or n < fault.for_calls:
                    used[tool] = n + 1
                    return index, fault
        return None

    def upstream_called(self, tool: str, fired: int | None) -> None:
        """A call of ``tool`` on which fault ``fired`` (or none) fires: an outage without ``for_calls`` whose
        upstream it is ends unless its own fault fires again."""
        for index in [i for i, (f, up, _) in self.active.items() if up == tool and i != fired and f.for_calls is None]:
            del self.active[index]


@dataclass(frozen=True, slots=True)
class Active:
    """What one ``with`` block made active: a plan (or None), its counters and the episode (or None)."""

    plan: Plan | None
    scope: Scope
    # an Episode: the episode module sits above this one, which reads only ``_ended`` and ``_outer_active``
    episode: Any
    #: per tool name, kept from its first call here: its rules in ``plan``, its call counter in ``scope``, whether
    #: the call number (and arguments) alone decide (no ``times`` budget), ``rules.decide`` and ``plan.seed``
    tools: dict[str, tuple[ToolRules, itertools.count[int], bool, Any, int]] = field(
        default_factory=dict, compare=False, repr=False
    )


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


#: ``ACTIVE.get``, bound once (the hot path reads it on every call)
active_get = ACTIVE.get

_ENVIRON = os.environ
try:
    # os.environ keeps its values in a dict keyed by the encoded name: a look-up there is ~20x cheaper than
    # os.environ.get, and answers the common case (the variable is not set at all) exactly
    _DISABLE_KEY: Any = os.environ.encodekey("CHAOSKIT_DISABLE")
    _ENV_DATA: Any = getattr(os.environ, "_data", None)
except AttributeError:  # another Python: ask os.environ itself
    _ENV_DATA = None


#: for a test inline on the hot path: ``DISABLE_KEY not in ENV_DATA and os.environ is ENVIRON`` holds only
#: when ``CHAOSKIT_DISABLE`` is surely not set (without ``os.environ._data``, never: then read it with
#: :func:`chaoskit.engine._config.disabled`)
ENVIRON, DISABLE_KEY = _ENVIRON, "CHAOSKIT_DISABLE"
ENV_DATA: Any = _ENV_DATA if _ENV_DATA is not None else {DISABLE_KEY: ""}
if _ENV_DATA is not None:
    DISABLE_KEY = _DISABLE_KEY


def resolve(pinned: Plan | None) -> tuple[Plan | None, Scope, Any]:
    """For one tool call: the plan that applies (``CHAOSKIT_DISABLE``, the tool's own, the active one, then
    ``CHAOSKIT_PLAN``), the Scope that counts the call, and the open episode."""
    # live_active() and the CHAOSKIT_DISABLE test inline: this runs on every tool call
    active = ACTIVE.get()
    episode = active.episode if active is not None else None
    if episode is not None and episode._ended:
        active = live_active()
        episode = active.episode if active is not None else None
    plan: Plan | None
    if pinned is not None:
        plan = pinned
    elif active is not None and active.plan is not None:
        plan = active.plan
    else:
        plan = _config.env_plan()
    # the environment is read only where a plan would apply, and then cheaply when it is not set
    unset = _ENV_DATA is not None and os.environ is _ENVIRON and _DISABLE_KEY not in _ENV_DATA
    if plan is not None and not unset and _config.disabled():
        plan = None
    if active is not None:
        scope = active.scope
    elif plan is not None:
        scope = plan_scope(plan)
    else:
        scope = _NO_SCOPE
    return plan, scope, episode
