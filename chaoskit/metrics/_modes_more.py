"""The evidence of failure modes F07 (a value read, later used garbled) and F14 (a cheaper model once faults came)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from chaoskit.grading._truth import received_text
from chaoskit.metrics._cost import Prices
from chaoskit.metrics._trajectory import Trajectory
from chaoskit.traces._records import AttemptRecord

__all__ = ["cheaper_after_fault", "corrupted_values", "memory_mismatches", "near_miss"]

_KEY = re.compile(r"[^a-z0-9]")


def _key(name: Any) -> str:
    return _KEY.sub("", str(name).lower())


def _records(value: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every mapping inside ``value`` (a result: a record, a list of them, nested)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _records(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _records(v, depth + 1)


def _parsed(text: str | None) -> Any:
    if not text or text.lstrip()[:1] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _scalar(v: Any) -> bool:
    return isinstance(v, str | int | float) and not isinstance(v, bool)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return str(a).strip().lower() == str(b).strip().lower()


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).strip()


def near_miss(read: Any, used: Any) -> bool:
    """``used`` is ``read`` garbled, not another value: the same characters in another order (4832 -> 4823), one or
    two characters changed in a value with digits of the same length (42.50 -> 45.50, FL-203 -> FL-208), one in a
    word of four letters or more (Smith -> Smyth), or a number off by a factor of 10 or 100."""
    a, b = _text(read), _text(used)
    if a.lower() == b.lower() or len(a) < 3:
        return False
    numbers = isinstance(read, int | float) and isinstance(used, int | float) and read and used
    if numbers and any(abs(float(used) / float(read) - f) < 1e-9 for f in (10, 100, 0.1, 0.01)):
        return True
    if sorted(a) == sorted(b):
        return True
    if len(a) != len(b):
        return False
    changed = sum(x != y for x, y in zip(a, b, strict=True))
    digits = any(ch.isdigit() for ch in a)
    return changed <= 2 if digits else (changed == 1 and len(a) >= 4)


def corrupted_values(traj: Trajectory) -> list[tuple[str, str, Any, Any]]:
    """(tool, argument, value read, value used) for each call argument that is a garbled copy (:func:`near_miss`) of
    the same field of a record the agent read cleanly earlier about the same thing, with the used value read
    nowhere.

    "About the same thing": the record also holds another argument value of the call (the order id). "Read
    nowhere": the used value is in no earlier received result and not in the task (then it came from somewhere,
    and is not a memory slip). A garbled copy, not any other value: a write sets new values on purpose
    (``status="cancelled"`` after reading ``"pending"``). Needs the results on the spans
    (``configure(record_results=True)``); without them nothing is found.
    """
    out: list[tuple[str, str, Any, Any]] = []
    seen: list[tuple[dict[str, Any], str]] = []
    heard = [traj.task or ""]
    for a in traj.attempts:
        if isinstance(a.args, dict) and seen:
            out.extend(_contradictions(a, seen, " ".join(heard)))
        text = received_text(a)
        if text is not None:
            heard.append(text)
            if a.clean_success:
                seen.extend((r, a.tool) for r in _records(_parsed(text)))
    return out


def _contradictions(
    a: AttemptRecord, seen: list[tuple[dict[str, Any], str]], heard: str
) -> Iterator[tuple[str, str, Any, Any]]:
    args = {k: v for k, v in a.args.items() if _scalar(v)}
    for name, used in args.items():
        anchors = [v for k, v in args.items() if k != name]
        for record, _tool in reversed(seen):
            fields = {_key(k): v for k, v in record.items() if _scalar(v)}
            read = fields.get(_key(name))
            if read is None or not any(any(_same(v, x) for x in fields.values()) for v in anchors):
                continue
            if near_miss(read, used) and _text(used) not in heard:
                yield (a.tool, name, read, used)
            break  # the latest record about this thing is the one the agent should have used


def memory_mismatches(memory: Sequence[Any]) -> list[tuple[Any, Any, Any]]:
    """The (key, stored, recalled) entries of ``memory`` whose recalled value differs from the stored one.

    ``memory`` is what the trace cannot show: the agent's own memory store (a LangGraph ``Store``, a vector
    memory), given as ``(key, stored, recalled)`` triples in any order. Raises ValueError naming a bad entry."""
    out = []
    for i, entry in enumerate(memory):
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError(f"memory[{i}]: must be a (key, stored, recalled) triple, got {entry!r}")
        key, stored, recalled = entry
        if stored != recalled:
            out.append((key, stored, recalled))
    return out


def _unit_price(prices: Prices, model: str | None, request: str | None) -> float | None:
    price = prices.price_of(model, request)
    return None if price is None else price.input + price.output


def cheaper_after_fault(traj: Trajectory, prices: Prices | None) -> tuple[str, str] | None:
    """(model before, model after) when, after the first fault that changed what a tool answered, a model step used
    a model cheaper (input + output price per token, from ``prices``) than every model the steps used before it;
    None without a price table, without steps on both sides, or with a model the table does not price."""
    if prices is None:
        return None
    faulted = [a.start_time for a in traj.attempts if a.fault_type not in (None, "latency")]
    if not faulted:
        return None
    first = min(faulted)
    before = [s for s in traj.steps if s.start_time < first]
    after = [s for s in traj.steps if s.start_time >= first]
    costs_before = [(_unit_price(prices, s.model, s.request_model), s.model or s.request_model) for s in before]
    if not costs_before or any(c is None for c, _ in costs_before):
        return None
    floor, old = min(((c, m) for c, m in costs_before if c is not None), key=lambda x: x[0])
    for s in after:
        c = _unit_price(prices, s.model, s.request_model)
        if c is not None and c < floor:
            return str(old), str(s.model or s.request_model)
    return None
