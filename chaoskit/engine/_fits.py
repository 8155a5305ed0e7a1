"""Whether a call's arguments fit the attribute cap whole, as plain JSON data with no secret-looking key.

One walk that stops as soon as they do not, so that a large argument costs no more than a small one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

__all__ = ["FLAT", "MAX_DEPTH", "SCALAR", "fits", "fits_value"]

#: how deep a value is looked into
MAX_DEPTH = 8
#: the types of plain JSON scalars
SCALAR = (str, int, float, bool, type(None))
#: the scalar types :func:`fits` counts as 12 characters (their exact types: a subclass may encode otherwise)
FLAT = frozenset({int, float, bool, type(None)})


def fits(args: Mapping[str, Any], budget: int, secret: Callable[[str], bool]) -> int:
    """What is left of ``budget`` after the arguments ``args`` if they are plain JSON data with no
    secret-looking key; -1 as soon as the budget runs out, a key looks secret, or a value is not plain
    data. It stops there, so a large argument costs no more than a small one."""
    # names found clean before are cleared in one C-level test; the rest one by one
    clean = getattr(secret, "clean", None)
    if clean is None or not clean.issuperset(args):
        for k in args:
            if not isinstance(k, str) or secret(k):
                return -1
    # the top level inline: most calls are a few scalar arguments
    for k, v in args.items():
        t = type(v)
        if t is str:
            budget -= len(k) + len(v) + 6
        elif t is int or t is float or t is bool or v is None:
            budget -= len(k) + 12
        else:
            budget = fits_value(v, budget - len(k) - 4, secret)
        if budget < 0:
            return -1
    return budget


def fits_value(value: Any, budget: int, secret: Callable[[str], bool], depth: int = 1) -> int:
    """:func:`fits` for one value at ``depth``: what is left of ``budget`` after it, or -1."""
    # the exact built-in types are tested first and plain elements are counted inline, without a push:
    # ``isinstance(x, Mapping)`` is an ABC check, slow per element
    clean: set[str] = set()  # keys already found not secret in this walk: rows repeat their keys
    known = getattr(secret, "clean", None) or clean  # keys found not secret before, by this checker
    stack = [(value, depth)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        t = type(item)
        if t is list or t is tuple or (t is not dict and isinstance(item, list | tuple)):
            if depth >= MAX_DEPTH:
                return -1
            budget -= 2 + len(item)
            values = item
            if budget >= 0 and item and depth + 1 < MAX_DEPTH and type(item[0]) is dict:
                # rows of a table (the commonest large argument): counted a chunk at a time in C-speed passes,
                # until the budget runs out or a chunk is not plain rows (the rest is walked one by one)
                budget, done = _rows_fit(item, budget, secret, known, clean)
                if budget < 0:
                    return -1
                values = item[done:] if done else item
        elif t is dict or isinstance(item, Mapping):
            if depth >= MAX_DEPTH:
                return -1
            budget -= 2 + 4 * len(item)
            if budget < 0:
                return -1
            if not known.issuperset(item) and not clean.issuperset(item):
                for k in item:
                    if not isinstance(k, str) or secret(k):
                        return -1
                    clean.add(k)
            budget -= sum(map(len, item))
            values = item.values()
            if FLAT.issuperset(map(type, values)):
                # a row of numbers, flags and nulls (the commonest): counted at once, 8 each as below
                budget -= 8 * len(item)
                values = ()
        elif isinstance(item, str):
            budget -= len(item) + 3
            values = ()
        elif isinstance(item, SCALAR):
            budget -= 8
            values = ()
        else:
            return -1
        if budget < 0:
            return -1
        for v in values:
            tv = type(v)
            if tv is str:
                budget -= len(v) + 3
            elif tv is int or tv is float or tv is bool or v is None:
                budget -= 8
            else:
                push((v, depth + 1))
        if budget < 0:
            return -1
    return budget


_ROWS = {dict}
_FLAT_OR_STR = FLAT | {str}
_CHUNK = 16


def _rows_fit(
    rows: list[Any] | tuple[Any, ...], budget: int, secret: Callable[[str], bool], known: set[str], clean: set[str]
) -> tuple[int, int]:
    """``(budget left, rows counted)`` after the leading chunks of ``rows`` that are plain dicts; -1 as soon as
    the budget runs out or a key is not a string or looks secret."""
    done = 0
    n = len(rows)
    while done < n:
        chunk = rows[done : done + _CHUNK]
        if set(map(type, chunk)) != _ROWS:
            break
        cost = _rows_cost(chunk, secret, known, clean)
        if cost is None:
            break
        budget = -1 if cost < 0 else budget - cost
        if budget < 0:
            return -1, done
        done += len(chunk)
    return budget, done


def _rows_cost(rows: Any, secret: Callable[[str], bool], known: set[str], clean: set[str]) -> int | None:
    """What :func:`fits_value` would take off its budget for ``rows`` (dicts, one level below the budget's
    depth limit) once each was walked: -1 for a key that is not a string or looks secret; None when a value
    is neither plain nor a string (then the rows are walked one by one). The sum does not depend on the order
    of the walk, so it is the same number, found without a Python step per row."""
    keys = set(chain.from_iterable(rows))
    if not known.issuperset(keys) and not clean.issuperset(keys):
        for k in keys:
            if not isinstance(k, str) or secret(k):
                return -1
            clean.add(k)
    values = list(chain.from_iterable(map(dict.values, rows)))
    types = set(map(type, values))
    cost = 2 * len(rows) + 4 * len(values) + sum(map(len, chain.from_iterable(rows)))
    if FLAT.issuperset(types):
        return cost + 8 * len(values)
    if not _FLAT_OR_STR.issuperset(types):
        return None
    texts = [v for v in values if type(v) is str]
    return cost + 8 * (len(values) - len(texts)) + 3 * len(texts) + sum(map(len, texts))
