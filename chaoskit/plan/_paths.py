"""The ``path:`` of a data fault: which part of a nested tool result (``results[*].items``) the fault changes."""

# Syntax (documented in docs/scenarios.md): steps joined by ``.``; a step is a key name, ``*`` (every value of a
# mapping or every item of a list), or a bracket after a step: ``[*]`` (every item) or ``[n]`` (item n, from 0;
# negative counts from the end). An optional leading ``$`` names the whole result, so ``$`` alone is the top
# level. Selection is pure and ordered: the same result always gives the same selected values.

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

__all__ = ["PATH_SYNTAX", "apply_at", "parse_path"]

PATH_SYNTAX = (
    'keys joined by ".", "*" or "[*]" for every item, "[n]" for item n, e.g. "results[*]" or '
    '"data.orders[0].lines"; "$" alone is the whole result'
)

#: ("key", name) | ("all", None) | ("index", n)
Step = tuple[str, Any]

_TOKEN = re.compile(r"\[(\*|-?\d+)\]|\.|\*|[^.\[\]*]+|.", re.S)


@functools.lru_cache(maxsize=512)
def parse_path(text: str) -> tuple[Step, ...]:
    """The steps of ``text``; raises ValueError saying what is wrong and what is allowed."""
    if not isinstance(text, str):
        raise ValueError(f"must be a path ({PATH_SYNTAX}), got {text!r}")
    body = text.strip()
    if body.startswith("$"):
        body = body[1:]
        if body.startswith("."):
            body = body[1:]
        if not body:
            return ()
    if not body:
        raise ValueError(f"must not be empty; {PATH_SYNTAX}")
    steps: list[Step] = []
    expect_step = True  # at the start and after "."
    for m in _TOKEN.finditer(body):
        tok = m.group(0)
        if m.group(1) is not None:  # [*] or [n]
            if expect_step and steps:
                raise ValueError(f'{text!r}: "[" right after "." at character {m.start() + 1}; {PATH_SYNTAX}')
            steps.append(("all", None) if m.group(1) == "*" else ("index", int(m.group(1))))
            expect_step = False
        elif tok == ".":
            if expect_step:
                raise ValueError(f"{text!r}: an empty step at character {m.start() + 1}; {PATH_SYNTAX}")
            expect_step = True
        elif tok == "*":
            if not expect_step:
                raise ValueError(
                    f'{text!r}: "*" must be a step of its own (".*") at character {m.start() + 1}; {PATH_SYNTAX}'
                )
            steps.append(("all", None))
            expect_step = False
        elif tok in "[]":
            raise ValueError(
                f"{text!r}: a bracket holds * or a whole number, at character {m.start() + 1}; {PATH_SYNTAX}"
            )
        else:
            if not expect_step:
                raise ValueError(f"{text!r}: a key must follow a '.', at character {m.start() + 1}; {PATH_SYNTAX}")
            steps.append(("key", tok))
            expect_step = False
    if expect_step:
        raise ValueError(f"{text!r} ends with '.'; {PATH_SYNTAX}")
    return tuple(steps)


def apply_at(value: Any, steps: tuple[Step, ...], fn: Callable[[Any], Any]) -> Any:
    """``value`` with ``fn`` applied to every part ``steps`` select; the containers on the way are copied
    (never changed in place: the tool may keep its result). A step that selects nothing leaves the value."""
    if not steps:
        return fn(value)
    (kind, arg), rest = steps[0], steps[1:]
    if kind == "key":
        if isinstance(value, dict) and arg in value:
            out = dict(value)
            out[arg] = apply_at(value[arg], rest, fn)
            return out
        return value
    if kind == "all":
        if isinstance(value, dict):
            return {k: apply_at(v, rest, fn) for k, v in value.items()}
        if isinstance(value, list):
            return [apply_at(v, rest, fn) for v in value]
        if isinstance(value, tuple):
            return tuple(apply_at(v, rest, fn) for v in value)
        return value
    if isinstance(value, list | tuple) and -len(value) <= arg < len(value):
        items = list(value)
        items[arg] = apply_at(items[arg], rest, fn)
        return items if isinstance(value, list) else tuple(items)
    return value
