"""The pure steps of every tool call: count and decide (:func:`decide`), then record how it ended (:func:`record`).

No I/O and no span here: :class:`~chaoskit.engine._attempt.Attempt` (a faulted call) and the unfaulted call of
:mod:`chaoskit.engine._plain` run these same steps, around the span steps of :mod:`chaoskit.engine._span`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import chaoskit.engine._config as _config
import chaoskit.semconv as sc
from chaoskit.engine._context import DISABLE_KEY, ENV_DATA, ENVIRON, Scope, active_get, resolve
from chaoskit.engine._info import from_raw
from chaoskit.engine._spec import ToolSpec
from chaoskit.plan._faults import _FaultBase
from chaoskit.plan._model import Plan, ToolRules

log = logging.getLogger("chaoskit")

__all__ = [
    "Args",
    "AttemptOutcome",
    "Decision",
    "decide",
    "idempotency_key",
    "keeps",
    "record",
    "suspended",
]

_now = time.time
_OK, _ERROR, _CANCELLED = sc.OUTCOME_OK, sc.OUTCOME_ERROR, sc.OUTCOME_CANCELLED

#: a call's arguments by name, or a function returning them (called only when they are needed)
Args = Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None


class Decision(NamedTuple):
    """What :func:`decide` hands over for one call: counted, its fault decided. A named tuple, not a frozen
    dataclass: it is built on every call, and a tuple builds in a fraction of the time (CHANGELOG, issue 26)."""

    #: the scope that counted the call (its counters, fired faults and kept results)
    scope: Scope
    #: the episode the call belongs to, or None
    episode: Any
    #: the call's arguments by name, when bound (tracing on, a trigger or the idempotency key reads them)
    args: Mapping[str, Any] | None
    #: the call's number for its tool in the scope (``chaoskit.attempt``)
    attempt: int
    #: ``(the fault's index in the plan, the fault)`` firing on this call, or None
    fault: tuple[int, _FaultBase] | None
    #: whether the call's result is kept for a later ``stale`` fault to replay
    keeps_results: bool


class AttemptOutcome(NamedTuple):
    """How one attempt ended, as :func:`record` takes it; the defaults are those of an executed attempt that
    no fault touched."""

    episode: Any
    attempt: int
    #: ``ok``, ``error`` or ``cancelled``
    outcome: str
    start: float
    end: float
    #: the span's context, for the span and trace ids (INVALID_SPAN_CONTEXT with tracing off)
    span_context: Any
    error_type: str | None = None
    message: str | None = None
    #: the tool returned an error value (``error_type`` is then ``ReturnedError``)
    refused: bool = False
    fault_type: str | None = None
    fault_index: int | None = None
    injected: bool = False
    executed: bool = True
    args_hash: str | None = None
    idempotency_key: str | None = None
    call_id: str | None = None


#: builds a Decision from a tuple of its fields in C, at half the cost of ``Decision(...)`` (a Python-level
#: ``__new__``): decide() builds one on every call
_decision = tuple.__new__


def decide(
    spec: ToolSpec,
    args: Args,
    veto: Callable[[_FaultBase], str | None] | None,
    tracing: bool,
    call_id: str | None = None,
) -> Decision:
    """Count the call and decide its fault. The arguments are bound (``args`` called) only when they are
    recorded (tracing on), a ``match`` trigger reads them, or the idempotency key is taken from them. A call
    that resumes a suspended one (same tool and ``call_id``) gets the number that call kept."""
    active = active_get()
    if (
        active is not None
        and spec.plan is None
        and (plan := active.plan) is not None
        and DISABLE_KEY not in ENV_DATA
        and os.environ is ENVIRON
    ):
        episode = active.episode
        if episode is None or not episode._ended:
            # the commonest case: the active plan applies, in its scope, with the tool's rules and counter kept
            scope = active.scope
            name = spec.name
            tool = active.tools.get(name)
            if tool is None:
                rules = plan.rules(name)
                # (rules, counter, whether the call number alone decides, its decide, the plan's seed)
                entry = (rules, scope.counter(name), rules.targeted and not rules.budgeted, rules.decide, plan.seed)
                tool = active.tools.setdefault(name, entry)
            rules, counter, by_number, decide_call, seed = tool
            if by_number and scope.outages is None and scope.resumes is None:
                # _count()'s commonest case inline: count, then decide from the number (and arguments) alone
                if callable(args):
                    args = args() if tracing or rules.needs_args or spec.idempotency_arg is not None else None
                n = next(counter)
                fired = decide_call(seed, name, n, args, scope.fired)
                if fired is not None:
                    fired = scope.fire(fired, name, veto)
                return _decision(Decision, (scope, episode, args, n, fired, rules.history))
            return _count(spec, args, veto, tracing, plan, scope, episode, rules, counter, call_id)
    plan, scope, episode = resolve(spec.plan)
    name = spec.name
    if plan is None:
        if callable(args):
            args = args() if tracing or spec.idempotency_arg is not None else None
        return _decision(
            Decision, (scope, episode, args, scope.number(name, call_id, scope.counter(name)), None, False)
        )
    return _count(spec, args, veto, tracing, plan, scope, episode, plan.rules(name), scope.counter(name), call_id)


def _count(
    spec: ToolSpec,
    args: Args,
    veto: Callable[[_FaultBase], str | None] | None,
    tracing: bool,
    plan: Plan,
    scope: Scope,
    episode: Any,
    rules: ToolRules,
    counter: Iterator[int],
    call_id: str | None = None,
) -> Decision:
    """:func:`decide` once the plan, scope, rules and counter are known."""
    if not rules.targeted:
        if callable(args):
            args = args() if tracing or spec.idempotency_arg is not None else None
        return _decision(Decision, (scope, episode, args, scope.number(spec.name, call_id, counter), None, False))
    if callable(args):
        args = args() if tracing or rules.needs_args or spec.idempotency_arg is not None else None
    if scope.outages is None and not rules.budgeted:
        # Scope.next_call's common case inline (no outage, no times budget): count, then decide from the number
        n = scope.number(spec.name, call_id, counter)
        fired = rules.decide(plan.seed, spec.name, n, args, scope.fired)
        if fired is not None:
            fired = scope.fire(fired, spec.name, veto)
        return _decision(Decision, (scope, episode, args, n, fired, rules.history))
    n, fired = scope.next_call(plan, spec.name, args, veto, rules, call_id)
    return _decision(Decision, (scope, episode, args, n, fired, rules.history))


def suspended(spec: ToolSpec, exc: BaseException, scope: Scope, n: int, call_id: str | None) -> bool:
    """Whether ``exc`` suspends the call rather than ending it (``spec.suspends``); if so, the call keeps its
    number ``n`` for the call that resumes it, and the caller records nothing."""
    if not spec.suspends or not isinstance(exc, spec.suspends):
        return False
    scope.suspend(spec.name, call_id, n)
    return True


def keeps(spec: ToolSpec, result: Any) -> bool:
    """Whether ``result`` may be kept for a later ``stale`` fault to replay: data, not a handoff or a state
    update (``spec.opaque_result``), which a replay would repeat without the tool running."""
    opaque = spec.opaque_result
    return opaque is None or opaque(result) is None


def idempotency_key(spec: ToolSpec, args: Mapping[str, Any] | None) -> str | None:
    """The call's idempotency key (the value of the tool's ``idempotency_arg``) as text, if it has one."""
    key = args.get(spec.idempotency_arg) if spec.idempotency_arg and args is not None else None
    return None if key is None else str(key)


def record(spec: ToolSpec, ended: AttemptOutcome) -> None:
    """Record a finished attempt on its episode and hand it to the ``on_attempt`` hooks."""
    hooks = _config.CONFIG.on_attempt
    if ended.episode is None and not hooks:
        return
    # one unpacking (AttemptOutcome's fields in order) costs less than sixteen reads by name
    (
        episode, n, outcome, start, end, ctx, error_type, message, refused,
        fault_type, index, injected, executed, args_hash, idem, call_id,
    ) = ended  # fmt: skip
    # AttemptInfo's fields in order, the span context for its ids: built into an AttemptInfo when read
    raw = (
        spec.name,
        n,
        outcome,
        fault_type,
        index,
        error_type,
        message,
        injected,
        executed,
        spec.irreversible,
        args_hash,
        idem,
        call_id,
        episode.id if episode is not None else None,
        start,
        end,
        ctx,
        refused,
        spec.idempotent,
    )
    if not hooks:
        episode._record(raw)
        return
    info = from_raw(raw)
    if episode is not None:
        episode._record(info)
    for hook in hooks:
        try:
            hook(info)
        except Exception:
            log.exception("chaoskit: an on_attempt hook failed; ignored")
