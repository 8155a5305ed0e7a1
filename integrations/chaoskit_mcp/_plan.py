"""The proxy's plan: the core's faults plus the MCP protocol fault types, decided by the same ``Plan.decide``."""

# The protocol faults are plan fault types (registered under the ``chaoskit.faults`` entry points, see
# ``_faults``), written in the plan's one ``faults:`` list with the core's trigger keys. The core keeps them
# inert; this loader swaps each for a placeholder that never fires (so every other fault keeps its index, as
# spans report it) and decides them on a shadow plan with the public ``Plan.decide``: one file, one trigger
# language, one decision function, one ``chaoskit.fault.index``.

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chaoskit import Plan, PlanError
from chaoskit.plan import load_yaml

__all__ = [
    "MALFORMED_SHAPES",
    "PROTOCOL_FAULT_TYPES",
    "ProtocolDecider",
    "ProtocolFault",
    "load_plan",
    "problem",
    "split_plan",
]

#: the fault types of the MCP protocol itself, and their own parameters with defaults
PROTOCOL_FAULT_TYPES: Final[dict[str, dict[str, Any]]] = {
    # after the triggering tools/call, send notifications/tools/list_changed; `drop` names tools the next
    # tools/list leaves out (and calls to them then fail as unknown tools)
    "list_changed": {"drop": []},
    # the tool is gone from this call on: the call, and every later one, is answered as an unknown tool
    "tool_disappears": {"notify": True},
    # the initialize response is held back `delay_s` seconds
    "slow_initialize": {"delay_s": 2.0},
    # the tool runs, then its result is replaced by one that breaks the CallToolResult schema
    "malformed_result": {"shape": "content_not_a_list"},
}
MALFORMED_SHAPES: Final = ("content_not_a_list", "missing_content", "block_without_type", "text_not_a_string")
#: the name the shadow plan decides ``slow_initialize`` under (a session has one initialize: its call 1)
INITIALIZE: Final = "(initialize)"
_TRIGGERS: Final = ("tool", "on_call", "every", "calls", "probability", "match", "times")


@dataclass(frozen=True)
class ProtocolFault:
    """One protocol fault of the plan: its index in the plan's ``faults``, its type and parameters."""

    index: int
    type: str
    tool: Any
    params: dict[str, Any] = field(default_factory=dict)


def _never(entry: Mapping[str, Any]) -> dict[str, Any]:
    # a core fault with the entry's tool selector that never fires: the plan keeps its indices
    return {"type": "latency", "tool": entry.get("tool", "*"), "probability": 0}


def problem(kind: str, params: Mapping[str, Any], entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(parameter, what is wrong)`` with a protocol fault's parameters (defaults filled in), or None."""
    if kind == "list_changed":
        drop = params["drop"]
        if not isinstance(drop, list) or not all(isinstance(n, str) for n in drop):
            return "drop", f"must be a list of tool names, got {drop!r}"
    if kind == "slow_initialize":
        delay = params["delay_s"]
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 < delay <= 600:
            return "delay_s", f"must be a number of seconds > 0 and <= 600, got {delay!r}"
    if kind == "malformed_result" and params["shape"] not in MALFORMED_SHAPES:
        return "shape", f"must be one of {', '.join(MALFORMED_SHAPES)}, got {params['shape']!r}"
    if kind == "tool_disappears":
        if entry.get("tool", "*") == "*":
            return "tool", "name the tool that disappears, e.g. tool: search"
        if not isinstance(params["notify"], bool):
            return "notify", f"must be true or false, got {params['notify']!r}"
    return None


def _check_params(entry: Mapping[str, Any], i: int, source: str) -> dict[str, Any]:
    kind = str(entry["type"])
    allowed = PROTOCOL_FAULT_TYPES[kind]
    params = dict(allowed)
    for key, value in entry.items():
        if key == "type" or key in _TRIGGERS:
            continue
        if key not in allowed:
            raise PlanError(
                f"fault type {kind!r} has no parameter {key!r}; allowed: "
                + ", ".join([*_TRIGGERS, *allowed] or ["(triggers only)"]),
                source=source,
                field=f"faults[{i}].{key}",
            )
        params[key] = value
    found = problem(kind, params, entry)
    if found is not None:
        raise PlanError(found[1], source=source, field=f"faults[{i}].{found[0]}")
    return params


def split_plan(data: Mapping[str, Any], *, source: str) -> tuple[Plan, Plan, list[ProtocolFault]]:
    """``(core plan, shadow plan, protocol faults)`` from a plan mapping with ``seed`` and ``faults``.

    The core plan holds every core fault at its own index, and a never-firing placeholder where a protocol
    fault stands; the shadow plan holds the protocol faults' triggers (as placeholders the proxy never
    injects) and never-firing placeholders for the others, so that its decision's index is the plan's.
    """
    faults = data.get("faults") or []
    if not isinstance(faults, list):
        raise PlanError("faults must be a list of faults", source=source, field="faults")
    core: list[Any] = []
    shadow: list[Any] = []
    protocol: list[ProtocolFault] = []
    for i, entry in enumerate(faults):
        kind = entry.get("type") if isinstance(entry, Mapping) else None
        if kind in PROTOCOL_FAULT_TYPES:
            assert isinstance(entry, Mapping)
            params = _check_params(entry, i, source)
            triggers = {k: entry[k] for k in _TRIGGERS if k in entry}
            if kind == "slow_initialize":
                # not a tool call: it is decided on the session's one initialize, under a name no tool has
                triggers["tool"] = INITIALIZE
            core.append(_never(entry))
            shadow.append({"type": "latency", **triggers})
            protocol.append(ProtocolFault(i, str(kind), entry.get("tool", "*"), params))
        else:
            core.append(entry)
            shadow.append(_never(entry) if isinstance(entry, Mapping) else entry)
    rest = {k: v for k, v in data.items() if k != "faults"}
    plan = Plan.from_dict({**rest, "faults": core}, source=source)
    shade = Plan.from_dict({**rest, "faults": shadow}, source=source)
    return plan, shade, protocol


def load_plan(path: str | Path | None) -> tuple[Plan, Plan, list[ProtocolFault]]:
    """:func:`split_plan` of a YAML plan file (no file: no faults). The file is loaded by ``Plan.from_yaml``
    first, which checks every fault (the protocol ones through their ``chaoskit.faults`` entry points), so
    its errors name the line."""
    if path is None:
        empty = Plan.from_dict({"faults": []})
        return empty, empty, []
    plan = Plan.from_yaml(Path(path))
    if not any(f.type in PROTOCOL_FAULT_TYPES for f in plan.faults):
        return plan, Plan.from_dict({"faults": []}), []
    # the one YAML loader (size, depth and alias limits), as Plan.from_yaml read it a moment ago
    data, _ = load_yaml(Path(path).read_text(encoding="utf-8"), str(path))
    return split_plan(data, source=str(path))


class ProtocolDecider:
    """Which protocol fault fires on a tool call (and on initialize), per session: counts calls per tool."""

    def __init__(self, shadow: Plan, faults: list[ProtocolFault]) -> None:
        self.shadow = shadow
        self.by_index = {f.index: f for f in faults}
        self.calls: dict[str, int] = {}
        self.fired: dict[tuple[int, str], int] = {}
        self.initialize = next((f for f in faults if f.type == "slow_initialize"), None)

    def decide(
        self, tool: str, args: Mapping[str, Any] | None, *, counts: dict[str, Any] | None = None
    ) -> ProtocolFault | None:
        """The protocol fault for this call of ``tool`` (counted here, or in an episode's shared ``counts``:
        ``{"calls": {tool: n}, "fired": [[index, tool, n]]}``), or None."""
        if not self.by_index:
            return None
        calls, fired = self.calls, self.fired
        if counts is not None:
            calls = counts.setdefault("calls", {})
            fired = {(int(i), str(t)): int(n) for i, t, n in counts.get("fired") or ()}
        n = calls[tool] = calls.get(tool, 0) + 1
        decided = self.shadow.decide(tool, n, args, fired)
        if decided is None or decided[0] not in self.by_index:
            return None
        fault = self.by_index[decided[0]]
        if fault.type == "slow_initialize":
            return None
        key = (decided[0], tool)
        fired[key] = fired.get(key, 0) + 1
        if counts is not None:
            counts["fired"] = [[i, t, k] for (i, t), k in fired.items()]
        return fault

    def slow_initialize(self) -> ProtocolFault | None:
        """The ``slow_initialize`` fault when it fires on this session's initialize (its call 1)."""
        fault = self.initialize
        if fault is None:
            return None
        decided = self.shadow.decide(INITIALIZE, 1, None, {})
        return fault if decided is not None and decided[0] == fault.index else None
