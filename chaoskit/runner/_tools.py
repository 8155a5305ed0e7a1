"""Tool-name checks: every tool a scenario names, and every fault glob, must match the agent's tools or its traces."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.plan._locate import _line_for, _suggest
from chaoskit.plan._yaml import load_yaml
from chaoskit.runner._results import EpisodeResult
from chaoskit.scenarios._scenario import Scenario

__all__ = ["check_agent_tools", "check_trace_tools"]


def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")


def _named_tools(sc: Scenario, *, for_trace: bool = False) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(tool, field, YAML key path) for every exact tool name the scenario gives: its faults' tools, its
    attempt bounds and its required tools. ``for_trace`` keeps only names the trace of a working agent must
    show: a bound of 0 attempts ("never call it") and required tools (graded by the checks) are left out."""
    out: list[tuple[str, str, tuple[Any, ...]]] = []
    for i, fault in enumerate(sc.faults):
        for name in fault.tool_names():
            out.append((name, f"faults[{i}].tool", ("faults", i, "tool")))
    for key in ("max_attempts", "min_attempts"):
        for name, n in getattr(sc.success, key).items():
            if not (for_trace and key == "max_attempts" and n == 0):
                out.append((name, f"success.{key}.{name}", ("success", key, name)))
    if not for_trace:
        for j, name in enumerate(sc.success.required_tools or ()):
            out.append((name, f"success.required_tools[{j}]", ("success", "required_tools", j)))
    return [t for t in out if not _is_pattern(t[0])]


def _globs(sc: Scenario) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(glob, field, YAML key path) for every pattern a fault's ``tool`` uses (``refund_*``, ``read_?``), but
    ``*``, which names every tool and so always matches. A list of tools is ``faults[i].tool[j]``."""
    out: list[tuple[str, str, tuple[Any, ...]]] = []
    for i, fault in enumerate(sc.faults):
        names = (fault.tool,) if isinstance(fault.tool, str) else tuple(fault.tool)
        for j, name in enumerate(names):
            if _is_pattern(name) and set(name) != {"*"}:
                if isinstance(fault.tool, str):
                    out.append((name, f"faults[{i}].tool", ("faults", i, "tool")))
                else:
                    out.append((name, f"faults[{i}].tool[{j}]", ("faults", i, "tool", j)))
    return out


def _unmatched_globs(sc: Scenario, tools: Iterable[str]) -> list[tuple[str, str, tuple[Any, ...]]]:
    names = list(tools)
    return [g for g in _globs(sc) if not fnmatch.filter(names, g[0])]


def _unknown_tool(
    sc: Scenario, name: str, field_name: str, key: tuple[Any, ...], known: Iterable[str], why: str
) -> PlanError:
    lines: Mapping[tuple[Any, ...], int] = {}
    if sc.source is not None:
        try:
            _data, lines = load_yaml(Path(sc.source).read_text(encoding="utf-8"), sc.source)
        except (OSError, UnicodeDecodeError, ChaoskitError):
            lines = {}
    names = sorted(set(known))
    if len(names) > 20:
        # a process that wrapped many tools (a test suite): the closest names are the useful ones
        close = sorted(names, key=lambda n: -difflib.SequenceMatcher(None, name, n).ratio())[:20]
        shown = f"{', '.join(close)}, ... ({len(names)} in all)"
        label = "closest known tools"
    else:
        shown, label = ", ".join(names) or "(none)", "known tools"
    if _is_pattern(name):
        # a glob that matches nothing makes its fault never fire: the scenario would pass untested
        what = f"names tools {name!r}, {why}, so its fault never fires"
    else:
        what = f"names tool {name!r}, {why}{_suggest(name, names)}"
    return PlanError(
        f'{what}; {label}: {shown} (or "*" for every tool)',
        source=sc.source or f"scenario {sc.name}",
        line=_line_for(key, lines),
        field=field_name,
    )


def check_agent_tools(scenarios: Iterable[Scenario], known: Iterable[str]) -> list[Scenario]:
    """After the agent factory ran: a name that looks like a typo of a known tool is an error now; the
    scenarios naming other unknown tools are returned, to be checked from their traces instead.

    A fault on a tool the agent lacks never fires, so the scenario would pass without testing what it says.
    But ``ChaosMiddleware`` and ``ChaosCallbackHandler`` learn a tool's name only at its first call, so a
    name unlike any known tool may still exist: :func:`check_trace_tools` decides before anything is reported.
    """
    tools = set(known)
    deferred: list[Scenario] = []
    for sc in scenarios:
        unknown = [t for t in _named_tools(sc) if t[0] not in tools]
        for name, field_name, key in unknown:
            if difflib.get_close_matches(name, tools, n=1, cutoff=0.75):
                raise _unknown_tool(
                    sc, name, field_name, key, tools, "which the agent does not have (no tool of that name was wrapped)"
                )
        # a glob matching no known tool may still match one wrapped at its first call: the trace decides
        if unknown or _unmatched_globs(sc, tools):
            deferred.append(sc)
    return deferred


def check_trace_tools(scenarios: Iterable[Scenario], results: Sequence[EpisodeResult]) -> None:
    """Command-line agents, whose tools live in another process, and agents that wrap tools at their first call:
    every tool a scenario's faults or attempt bounds name, and every glob its faults use (but ``*``), appears in
    (matches a tool in) the trace of at least one of its episodes. Checked only for a scenario with a
    completed episode that recorded attempts: an agent that crashed or hung before reaching a tool says
    nothing about whether the tool exists (and the verdict already reports it)."""
    for sc in scenarios:
        seen: set[str] = set()
        completed = False
        for r in results:
            if r.scenario == sc.name:
                seen.update(r.attempts.get("by_tool", {}))
                completed = completed or (r.outcome == "completed" and r.attempts.get("total", 0) > 0)
        if not completed:
            continue
        for name, field_name, key in _named_tools(sc, for_trace=True):
            if name not in seen:
                raise _unknown_tool(
                    sc, name, field_name, key, seen, "which never appeared in the trace of any of its episodes"
                )
        for name, field_name, key in _unmatched_globs(sc, seen):
            raise _unknown_tool(
                sc, name, field_name, key, seen, "a pattern that matches no tool in the trace of any of its episodes"
            )
