"""Triggers: pure strategy objects that say whether a fault fires on a call, joined with ``&`` (all must hold)."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

__all__ = [
    "CallState",
    "Trigger",
    "TriggerFields",
    "all_of",
    "call_gate",
    "calls",
    "every",
    "match",
    "on_call",
    "probability",
    "times",
    "tool_matches",
    "trigger_of",
    "uniform",
    "uses",
    "window",
]

_MISSING: Any = object()


def uniform(seed: int, fault_index: int, tool: str, call: int) -> float:
    """A draw in [0, 1) that depends only on (seed, fault index, tool, call number).

    Hashing instead of a shared RNG stream keeps the draw for call n of tool t fixed whatever other
    tools run in parallel, in whatever order.
    """
    digest = hashlib.blake2b(f"{seed}\x1f{fault_index}\x1f{tool}\x1f{call}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 18446744073709551616.0


# --- the strategies (tenacity's stop/wait/retry objects): one question each, asked of one CallState -----
# Named in lower case like tenacity's, and like the plan keys they stand for.


class CallState(NamedTuple):
    """One call of one tool, as the triggers of one fault of a plan see it (tenacity's ``RetryCallState``).

    ``fault_index`` is the fault's place in its plan and ``fired`` counts earlier fires per (fault index, tool):
    a ``times`` budget is per tool, so calls to other tools never change this tool's faults.
    """

    seed: int
    fault_index: int
    tool: str
    call: int
    args: Mapping[str, Any] | None
    fired: Mapping[tuple[int, str], int]


class Trigger(ABC):
    """A condition on one call; ``a & b`` holds when both hold. Pure: no I/O, no clock, no RNG state."""

    __slots__ = ()

    @abstractmethod
    def __call__(self, state: CallState) -> bool:
        """Whether the condition holds for this call."""

    def __and__(self, other: Trigger) -> Trigger:
        return all_of(self, other)


@dataclass(frozen=True, slots=True)
class on_call(Trigger):
    """Holds on the listed call numbers of the tool (1 is the first call)."""

    numbers: frozenset[int]

    def __call__(self, state: CallState) -> bool:
        return state.call in self.numbers


@dataclass(frozen=True, slots=True)
class every(Trigger):
    """Holds on every ``n``-th call of the tool (n, 2n, 3n, ...)."""

    n: int

    def __call__(self, state: CallState) -> bool:
        return not state.call % self.n


@dataclass(frozen=True, slots=True)
class calls(Trigger):
    """Holds on calls ``lo`` to ``hi`` of the tool, both included; ``hi=None`` means from ``lo`` onwards."""

    lo: int
    hi: int | None

    def __call__(self, state: CallState) -> bool:
        return state.call >= self.lo and (self.hi is None or state.call <= self.hi)


@dataclass(frozen=True, slots=True)
class match(Trigger):
    """Holds when the call's arguments include every given field with the given value."""

    fields: Mapping[str, Any]

    def __call__(self, state: CallState) -> bool:
        args = state.args
        if args is None:  # an entry point that cannot see the arguments never matches
            return False
        return not any(args.get(k, _MISSING) != v for k, v in self.fields.items())


@dataclass(frozen=True, slots=True)
class times(Trigger):
    """Holds until the fault has fired ``n`` times for this tool."""

    n: int

    def __call__(self, state: CallState) -> bool:
        return state.fired.get((state.fault_index, state.tool), 0) < self.n


@dataclass(frozen=True, slots=True)
class probability(Trigger):
    """Holds with probability ``p``, drawn by :func:`uniform` from (seed, fault index, tool, call number)."""

    p: float

    def __call__(self, state: CallState) -> bool:
        return uniform(state.seed, state.fault_index, state.tool, state.call) < self.p


@dataclass(frozen=True, slots=True, init=False)
class all_of(Trigger):
    """Holds when every one of ``triggers`` holds, asked in order (the first that fails ends the question)."""

    triggers: tuple[Trigger, ...]

    def __init__(self, *triggers: Trigger) -> None:
        flat: list[Trigger] = []
        for t in triggers:
            flat.extend(t.triggers if isinstance(t, all_of) else (t,))
        object.__setattr__(self, "triggers", tuple(flat))

    def __call__(self, state: CallState) -> bool:
        for trigger in self.triggers:  # noqa: SIM110 - on the hot path, cheaper than all() over a generator
            if not trigger(state):
                return False
        return True


class TriggerFields(Protocol):
    """The trigger fields of a fault, as parsed by :mod:`chaoskit.plan._fields` (every fault model has them)."""

    @property
    def on_call(self) -> tuple[int, ...] | None:
        """The call numbers it fires on."""

    @property
    def every(self) -> int | None:
        """Fire on every n-th call."""

    @property
    def calls(self) -> str | None:
        """The window of calls, as written ("2-5", "3-", "4")."""

    @property
    def match(self) -> dict[str, Any] | None:
        """The argument values a call must have."""

    @property
    def times(self) -> int | None:
        """The most fires per tool."""

    @property
    def probability(self) -> float | None:
        """The chance of firing on a call that meets the other triggers."""


def trigger_of(fields: TriggerFields) -> Trigger | None:
    """The AND of the triggers a fault gives, or None when it gives none (it fires on every call).

    Cheap questions first and the hash last; the answer does not depend on the order, all are pure.
    """
    parts: list[Trigger] = []
    if fields.on_call is not None:
        parts.append(on_call(frozenset(fields.on_call)))
    if fields.every is not None:
        parts.append(every(fields.every))
    if fields.calls is not None:
        parts.append(calls(*window(fields.calls)))
    if fields.match is not None:
        parts.append(match(fields.match))
    if fields.times is not None:
        parts.append(times(fields.times))
    if fields.probability is not None:
        parts.append(probability(fields.probability))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else all_of(*parts)


def _parts(trigger: Trigger) -> tuple[Trigger, ...]:
    return trigger.triggers if isinstance(trigger, all_of) else (trigger,)


def call_gate(trigger: Trigger | None) -> tuple[Callable[[int], bool] | None, bool]:
    """``(gate, exact)``: a test on the call number alone that must hold for ``trigger`` to hold (None when
    no part of it is about the call number), and whether that test is the whole trigger.

    The fault decision asks the gate first, so the common call (an ``on_call``, ``every`` or ``calls`` that
    does not hold) is settled by one test on an int, with no :class:`CallState` built.
    """
    if trigger is None:
        return None, False
    tests: list[Callable[[int], bool]] = []
    rest = 0
    for part in _parts(trigger):
        if isinstance(part, on_call):
            tests.append(part.numbers.__contains__)
        elif isinstance(part, every | calls):
            tests.append(_call_test(part))
        else:
            rest += 1
    if not tests:
        return None, False
    if len(tests) == 1:
        return tests[0], not rest
    first, *others = tests
    return (lambda n: first(n) and all(t(n) for t in others)), not rest


def _call_test(part: every | calls) -> Callable[[int], bool]:
    if isinstance(part, every):
        step = part.n
        return lambda n: not n % step
    lo, hi = part.lo, part.hi
    if hi is None:
        return lambda n: n >= lo
    return lambda n: lo <= n <= hi


def uses(trigger: Trigger | None, kind: type[Trigger]) -> bool:
    """Whether ``trigger`` has a part of type ``kind`` (``match`` reads the arguments, ``times`` the fires)."""
    return trigger is not None and any(isinstance(part, kind) for part in _parts(trigger))


_WINDOW = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d*)\s*)?$")


def window(text: str) -> tuple[int, int | None]:
    """The calls a ``calls`` window covers: ``"2-5"`` is (2, 5), ``"3-"`` is (3, None), ``"3"`` is (3, 3)."""
    m = _WINDOW.match(text)
    if m is None:
        raise ValueError(f'must be a window of call numbers such as "2-5" or "3-", got {text!r}')
    lo = int(m.group(1))
    if m.group(2) is None:
        return lo, lo  # "3" alone means call 3 only
    return lo, int(m.group(2)) if m.group(2) else None


def tool_matches(selector: str | tuple[str, ...], tool: str) -> bool:
    """Whether a fault's ``tool`` selector (a name, ``*``, a glob such as ``read_*``, or a list) names ``tool``."""
    names = (selector,) if isinstance(selector, str) else selector
    for name in names:
        if name == tool or name == "*":
            return True
        if any(c in name for c in "*?[") and fnmatch.fnmatchcase(tool, name):
            return True
    return False
