"""What a run selects: scenario paths or a battery file (scenarios and their agents), then the ``--tags`` filter.

A battery file is YAML with a top-level ``battery:`` list, its paths relative to the file::

    battery:
      - scenarios: scheduling/scenarios          # a directory, file or glob, or a list of them
        agents: [examples.scheduling.agents:careful, examples.scheduling.agents:naive]
    expect: expected.yaml                        # optional: the expected-outcome table (or a list of tables)

``chaoskit run DIR`` runs ``DIR/battery.yaml`` when it has a top-level ``battery:`` key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.plan._locate import _line_for, _suggest
from chaoskit.plan._yaml import load_yaml, read_source
from chaoskit.scenarios._files import has_top_level_key
from chaoskit.scenarios._scenario import Scenario, load_scenarios

__all__ = ["ALL_AGENTS", "Selection", "battery_file_of", "filter_tags", "parse_tags", "select"]

_TOP_KEYS = ("battery", "expect", "description")
_ENTRY_KEYS = ("scenarios", "agents")
#: the keys of an agent given as a mapping: its reference and the axes it is labelled with
_AGENT_KEYS = ("agent", "model", "architecture")
#: the key of ``Selection.labels`` that labels every agent (``chaoskit run --label-model/--label-architecture``)
ALL_AGENTS = "*"


@dataclass
class Selection:
    """The scenarios a run selected, the agents a battery file gives each (by scenario name), the YAML files
    skipped as not scenarios, every scenario name before ``--tags``, and the battery file and table used."""

    scenarios: list[Scenario]
    assigned: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[Path] = field(default_factory=list)
    all_names: list[str] = field(default_factory=list)
    battery: str | None = None
    expect: list[str] | None = None
    #: the model and architecture a battery file gives an agent (``{agent: ..., model: ..., architecture: ...}``),
    #: by reference; under :data:`ALL_AGENTS`, those of every agent (``--label-model``, ``--label-architecture``)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)


def battery_file_of(path: str | os.PathLike[str]) -> Path | None:
    """The battery file ``path`` names: itself when it is a YAML file with a top-level ``battery:`` key, or
    ``battery.yaml`` (``.yml``) in it when it is a directory holding one; else None."""
    p = Path(path)
    candidates = [p / "battery.yaml", p / "battery.yml"] if p.is_dir() else [p]
    for c in candidates:
        if c.is_file() and c.suffix in (".yaml", ".yml") and has_top_level_key(c, "battery"):
            return c
    return None


def _strings(value: Any, what: str, src: str, line: int | None, fld: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x.strip() for x in items):
        raise PlanError(f"{what}, got {value!r:.80}", source=src, line=line, field=fld)
    return list(items)


def _agents(
    value: Any, src: str, lines: Mapping[tuple[Any, ...], int], i: int, labels: dict[str, dict[str, str]]
) -> list[str]:
    """An entry's ``agents``: references, or ``{agent: REF, model: NAME, architecture: NAME}`` mappings whose
    labels go to ``labels`` (one agent has one model and one architecture in a battery)."""
    fld = f"battery[{i}].agents"
    items = [value] if isinstance(value, str | Mapping) else value
    if not isinstance(items, list) or not items:
        raise PlanError(
            f"agents is a list of module:factory references or command lines, or of {{agent: REF, model: NAME, "
            f"architecture: NAME}} mappings, got {value!r:.80}",
            source=src,
            line=_line_for(("battery", i, "agents"), lines),
            field=fld,
        )
    refs = []
    for j, item in enumerate(items):
        line = _line_for(("battery", i, "agents", j), lines)
        mapping = item if isinstance(item, Mapping) else {"agent": item}
        bad = [k for k in mapping if k not in _AGENT_KEYS]
        if bad:
            allowed = ", ".join(_AGENT_KEYS)
            msg = f"unknown key {bad[0]!r}{_suggest(str(bad[0]), _AGENT_KEYS)}; an agent mapping has {allowed}"
            raise PlanError(msg, source=src, line=line, field=f"{fld}[{j}].{bad[0]}")
        for k in _AGENT_KEYS:
            v = mapping.get(k)
            if (k == "agent" or k in mapping) and not (isinstance(v, str) and v.strip()):
                what = "a module:factory reference or a command line" if k == "agent" else "a non-empty name"
                raise PlanError(f"{k} is {what}, got {v!r:.80}", source=src, line=line, field=f"{fld}[{j}].{k}")
        ref = mapping["agent"].strip()
        given = {k: mapping[k].strip() for k in ("model", "architecture") if k in mapping}
        if given and labels.get(ref, given) != given:
            raise PlanError(
                f"agent {ref} is labelled {labels[ref]} in an earlier entry and {given} here: an agent has one "
                "model and one architecture per battery (give the other one a factory of its own)",
                source=src,
                line=line,
                field=f"{fld}[{j}]",
            )
        if given:
            labels[ref] = given
        refs.append(ref)
    return refs


def _load_battery_file(
    path: Path,
) -> tuple[list[tuple[list[str], list[str] | None, int | None]], list[str] | None, dict[str, dict[str, str]]]:
    """The entries of a battery file as (scenario paths, agents or None, line), its ``expect`` paths, and the
    model and architecture labels of its agents (by reference)."""
    text, src = read_source(path, None)
    data, lines = load_yaml(text, src)
    if not isinstance(data, Mapping) or not isinstance(data.get("battery"), list) or not data["battery"]:
        raise PlanError(
            "a battery file has a top-level 'battery:' list of {scenarios: ..., agents: [...]} entries",
            source=src,
            line=_line_for(("battery",), lines) or 1,
            field="battery",
        )
    for k in data:
        if k not in _TOP_KEYS:
            raise PlanError(
                f"unknown key {k!r}{_suggest(str(k), _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}",
                source=src,
                line=_line_for((k,), lines),
                field=str(k),
            )
    base = path.parent
    entries = []
    labels: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(data["battery"]):
        line = _line_for(("battery", i), lines)
        fld = f"battery[{i}]"
        if not isinstance(entry, Mapping) or "scenarios" not in entry:
            raise PlanError("each entry is {scenarios: PATHS, agents: [AGENT, ...]}", source=src, line=line, field=fld)
        for k in entry:
            if k not in _ENTRY_KEYS:
                raise PlanError(
                    f"unknown key {k!r}{_suggest(str(k), _ENTRY_KEYS)}; allowed: {', '.join(_ENTRY_KEYS)}",
                    source=src,
                    line=_line_for(("battery", i, k), lines) or line,
                    field=f"{fld}.{k}",
                )
        where = ("battery", i, "scenarios")
        paths = _strings(
            entry["scenarios"],
            "scenarios is a path or a list of paths",
            src,
            _line_for(where, lines),
            f"{fld}.scenarios",
        )
        agents = None
        if "agents" in entry:
            agents = _agents(entry["agents"], src, lines, i, labels)
        entries.append(([str(base / p) for p in paths], agents, line))
    expect = data.get("expect")
    tables = [expect] if isinstance(expect, str) else expect
    if expect is not None and (
        not isinstance(tables, list) or not tables or not all(isinstance(t, str) and t.strip() for t in tables)
    ):
        raise PlanError(
            f"expect is the path of an expected-outcome table, or a list of them, got {expect!r:.80}",
            source=src,
            line=_line_for(("expect",), lines),
            field="expect",
        )
    return entries, [str(base / t) for t in tables] if isinstance(tables, list) else None, labels


def select(paths: Sequence[str | os.PathLike[str]], *, resolve: bool = True) -> Selection:
    """Load what ``chaoskit run PATHS`` names: battery files (a file with a top-level ``battery:``, or a
    directory holding ``battery.yaml``) and scenario files, directories and globs. Scenario names must be
    unique; a scenario in several battery entries runs against the union of their agents."""
    out = Selection([])
    names: dict[str, str] = {}
    for p in paths:
        if not isinstance(p, str | os.PathLike) or not str(p).strip():
            # Path("") is the current directory: an empty argument would run every YAML file under it
            raise ChaoskitError("a scenario path is empty: give scenario files (*.yaml), directories or globs")

    def add(found: list[Scenario], agents: list[str] | None) -> None:
        for sc in found:
            key = str(Path(sc.source).resolve()) if sc.source else sc.name
            if sc.name in names and names[sc.name] != key:
                raise PlanError(
                    f"scenario name {sc.name!r} is already used by {names[sc.name]}", source=sc.source, field="name"
                )
            if sc.name not in names:
                names[sc.name] = key
                out.scenarios.append(sc)
            if agents:
                out.assigned.setdefault(sc.name, [])
                out.assigned[sc.name] += [a for a in agents if a not in out.assigned[sc.name]]

    plain: list[str | os.PathLike[str]] = []
    for raw in paths:
        bf = battery_file_of(raw)
        if bf is None:
            plain.append(raw)
            continue
        if out.battery is not None:
            raise ChaoskitError(f"{bf}: give one battery file per run ({out.battery} is already given)")
        out.battery = str(bf)
        entries, out.expect, out.labels = _load_battery_file(bf)
        for entry_paths, agents, _line in entries:
            found, skipped = load_scenarios(entry_paths, resolve=resolve)
            out.skipped += skipped
            add(found, agents)
    if plain or not paths:
        found, skipped = load_scenarios(plain, resolve=resolve)
        out.skipped += skipped
        add(found, None)
    out.skipped = list(dict.fromkeys(out.skipped))
    out.all_names = [sc.name for sc in out.scenarios]
    return out


def parse_tags(groups: Sequence[str] | None) -> tuple[tuple[str, ...], ...]:
    """``--tags a,b`` (repeatable) as groups of tags; an empty group is a usage error."""
    out = []
    for text in groups or ():
        group = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
        if not group:
            raise ChaoskitError(f"--tags names no tag (got {text!r}); give tags separated by commas, e.g. travel,hard")
        out.append(group)
    return tuple(out)


def _has(tags: Sequence[str], wanted: str) -> bool:
    # a bare word also matches the value of a prefixed tag: travel matches domain:travel
    return any(t == wanted or (":" not in wanted and t.partition(":")[2] == wanted) for t in tags)


def filter_tags(scenarios: Sequence[Scenario], groups: Sequence[Sequence[str]]) -> list[Scenario]:
    """The scenarios having a tag of every group (ANY within a group, AND between groups). Selecting nothing
    is a usage error naming the tags asked for and the tags the scenarios have."""
    if not groups:
        return list(scenarios)
    kept = [sc for sc in scenarios if all(any(_has(sc.tags, t) for t in g) for g in groups)]
    if not kept:
        asked = " and ".join(",".join(g) for g in groups)
        have = sorted({t for sc in scenarios for t in sc.tags})
        raise ChaoskitError(
            f"--tags {asked} selects none of the {len(scenarios)} scenario(s); their tags: "
            + (", ".join(have) if have else "(none: no scenario has tags)")
        )
    return kept
