"""Which files a run loads: scenario files under a directory (the rule below), files named directly, globs.

Under a directory, a YAML file is a scenario when it sits in a ``scenarios/`` folder or has a top-level
``task:`` key; other YAML files (compose files, plans, profiles, battery files, expected-outcome tables) are
skipped and counted. The ``task:`` test reads lines until it finds the key, without parsing the file.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from chaoskit._errors import PlanError

__all__ = ["Found", "expand", "has_top_level_key", "in_scenarios_folder"]

_YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class Found:
    """The files a set of paths names, in order and without repeats, and how many YAML files were skipped."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)


def has_top_level_key(path: Path, key: str) -> bool:
    """Whether ``path`` has ``key:`` at the start of a line (a top-level mapping key): read line by line, so a
    large file that is not a scenario costs one scan, not a parse."""
    pattern = re.compile(rf"""^(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*:(?:\s|$)""")
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return any(pattern.match(line) for line in fh)
    except OSError:
        return False


def in_scenarios_folder(path: Path, root: Path) -> bool:
    """Whether ``path`` (found under the directory ``root``) sits in a folder named ``scenarios``: ``root``
    itself or any folder between them."""
    rel = path.relative_to(root)
    return "scenarios" in (root.resolve().name, *rel.parts[:-1])


def _scan_dir(p: Path, out: Found) -> None:
    found = sorted(f for f in p.rglob("*") if f.suffix in _YAML_SUFFIXES and f.is_file())
    if not found:
        raise PlanError("no scenario files (*.yaml, *.yml) in this directory", source=str(p))
    mine = [f for f in found if in_scenarios_folder(f, p) or has_top_level_key(f, "task")]
    if not mine:
        raise PlanError(
            f"no scenario files in this directory: {len(found)} YAML file(s), none in a scenarios/ folder or "
            "with a top-level 'task:' key",
            source=str(p),
        )
    out.files.extend(mine)
    chosen = set(mine)
    out.skipped.extend(f for f in found if f not in chosen)


def expand(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> Found:
    """The scenario files the given files, directories and globs name. A file named directly or matched by a
    glob is always loaded; a directory is searched with the rule above. A path that names nothing is an error."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]  # one path, not the characters of one
    out = Found()
    for raw in paths:
        if not isinstance(raw, str | os.PathLike) or not str(raw).strip():
            raise PlanError(
                f"expected scenario files, directories or globs (str or os.PathLike), got {raw!r:.80}",
                source="<python>",
            )
        p = Path(raw)
        if p.is_dir():
            _scan_dir(p, out)
        elif p.exists():
            out.files.append(p)
        elif any(c in str(raw) for c in "*?["):
            matched = sorted(Path(m) for m in glob.glob(str(raw), recursive=True))
            if not matched:
                raise PlanError("no file matches this pattern", source=str(raw))
            out.files.extend(m for m in matched if m.is_file())
        else:
            raise PlanError("file not found", source=str(raw))
    seen: set[Path] = set()
    files = []
    for f in out.files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            files.append(f)
    out.files = files
    out.skipped = [f for f in dict.fromkeys(out.skipped) if f.resolve() not in seen]
    return out
