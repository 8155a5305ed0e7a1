"""Harness-style success criteria: a list of one-key items, read as chaoskit's ``success`` mapping.

Items such as ``- output_contains: "8080"`` or ``- max_retries: 4``; each item's line is kept for error messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit._errors import PlanError
from chaoskit.plan._fields import _is_int
from chaoskit.plan._locate import _line_for, _suggest, format_loc

__all__ = ["success_from_list", "success_list_with_lines", "with_max_retries"]


def _known_checks() -> list[str]:
    import chaoskit.grading.checks as checks

    # max_attempts / min_attempts are criteria with a limit per tool, not checks named on their own
    return sorted(n for n in checks.REGISTRY if n not in ("max_attempts", "min_attempts"))


#: the keys a one-key success criterion may have (besides a check's name, which adds that check)
_CRITERIA = (
    "output_contains",
    "output_not_contains",
    "max_retries",
    "max_attempts",
    "min_attempts",
    "state",
    "required_tools",
    "checks",
)


class _CriterionError(ValueError):
    """A success-list item that cannot be mapped; ``index``/``key`` locate it for the file's line number."""

    def __init__(self, message: str, index: int, key: str | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.key = key


def success_from_list(items: list[Any], origins: dict[tuple[Any, ...], int] | None = None) -> dict[str, Any]:
    """The harness-style list of one-key criteria as chaoskit's ``success`` mapping.

    ``- output_contains: "8080"`` adds a needle, ``- max_retries: 4`` bounds every tool, ``- no_bluff`` or
    ``- no_retry_storm: {n: 2}`` adds a check; anything else raises :class:`_CriterionError`. ``origins``
    receives, for each location in the result, the index of the item it came from (for line numbers).
    """
    out: dict[str, Any] = {}
    known = _known_checks()
    where = origins if origins is not None else {}

    def add(key: str, value: Any, i: int) -> None:
        where.setdefault((key,), i)
        where[(key, len(out.setdefault(key, [])))] = i
        out[key].append(value)

    for i, item in enumerate(items):
        if isinstance(item, str):
            add("checks", item, i)  # a bare check name; Success checks that it exists
            continue
        if not isinstance(item, Mapping) or len(item) != 1:
            raise _CriterionError(
                f"each item is one criterion with one key, such as '- output_contains: \"8080\"' "
                f"or '- max_retries: 4', got {item!r:.80}",
                i,
            )
        ((key, value),) = item.items()
        if not isinstance(key, str):
            raise _CriterionError(f"a criterion's key is a name, got {key!r}", i)
        if key in ("output_contains", "output_not_contains", "required_tools", "checks"):
            for v in value if isinstance(value, list) else [value]:
                add(key, v, i)
        elif key in ("max_attempts", "min_attempts"):
            if not isinstance(value, Mapping):
                raise _CriterionError(
                    f"takes a limit per tool, such as '- {key}: {{search: 3}}', got {value!r}", i, key
                )
            for tool in value:
                if tool in out.setdefault(key, {}):
                    raise _CriterionError(f"{key} for {tool!r} is given twice; give it once", i, key)
                out[key][tool] = value[tool]
                where.setdefault((key,), i)
                where[(key, tool)] = i
        elif key in ("max_retries", "state"):
            if key in out:
                raise _CriterionError(f"{key} is given twice; give it once", i, key)
            out[key] = value
            where[(key,)] = i
        elif key in known:
            add("checks", {key: value} if value else key, i)
        else:
            raise _CriterionError(
                f"unknown success criterion {key!r}{_suggest(key, [*_CRITERIA, *known])}; allowed: "
                f"{', '.join(_CRITERIA)}, or a check: {', '.join(known)}",
                i,
                key,
            )
    return out


def with_max_retries(data: Any) -> Any:
    """Fold ``max_retries: n`` into ``max_attempts["*"] = n + 1`` (kept too, for what the file said)."""
    if not isinstance(data, Mapping) or data.get("max_retries") is None:
        return data
    n = data["max_retries"]
    if not _is_int(n) or n < 0:
        return data  # the field validator says what is wrong
    limits = data.get("max_attempts") or {}
    if not isinstance(limits, Mapping):
        return data
    if "*" in limits and limits["*"] != n + 1:
        raise ValueError(f'max_retries: {n} and max_attempts {{"*": {limits["*"]}}} disagree; give one of them')
    return {**data, "max_attempts": {**limits, "*": n + 1}}


def success_list_with_lines(data: Mapping[str, Any], lines: dict[tuple[Any, ...], int], src: str) -> Mapping[str, Any]:
    """A harness-style ``success:`` list as the mapping, with each criterion's line kept for later errors."""
    raw = data.get("success")
    if not isinstance(raw, list):
        return data
    origins: dict[tuple[Any, ...], int] = {}
    try:
        success = success_from_list(raw, origins)
    except _CriterionError as exc:
        loc = ("success", exc.index, *((exc.key,) if exc.key else ()))
        raise PlanError(str(exc), source=src, line=_line_for(loc, lines), field=format_loc(loc)) from None
    for loc, i in origins.items():
        line = _line_for(("success", i, *loc[:1]), lines)
        if line is not None:
            lines[("success", *loc)] = line
    return {**data, "success": success}
