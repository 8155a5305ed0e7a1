"""Results files (``chaoskit run --json``): writing one, and reading one back with every episode checked."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.runner._results import RESULTS_KIND, BatteryResult

__all__ = ["load_results", "write_json"]


def write_json(result: BatteryResult, path: str | os.PathLike[str]) -> None:
    """Write ``result`` as a results file: config, verdict, summary and every episode."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(result.to_dict(), indent=1, default=str), encoding="utf-8")


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A results file as a dict, after checking that it is one and that every episode has the fields (and
    types) a merge needs; a file that was changed or cut short is an error naming the field."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ChaoskitError(f"{p}: file not found") from None
    except (OSError, ValueError) as exc:
        raise ChaoskitError(f"{p}: cannot read the results: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND:
        raise ChaoskitError(f"{p}: not a chaoskit run result (write one with chaoskit run --json)")
    if (
        not isinstance(data.get("config"), dict)
        or not isinstance(data.get("episodes"), list)
        or not all(isinstance(e, dict) for e in data["episodes"])
    ):
        raise ChaoskitError(
            f'{p}: a chaoskit run result needs a "config" object and an "episodes" list of '
            "objects; the file was changed or cut short"
        )
    for i, raw in enumerate(data["episodes"]):
        problem = _episode_problem(raw)
        if problem is not None:
            raise ChaoskitError(
                f"{p}: episodes[{i}].{problem}; the file was changed or cut short (write it again "
                "with chaoskit run --json)"
            )
    return data


_NUMBER = (int, float)
#: what each episode field of a results file must hold (None allowed where the type tuple has type(None))
_EPISODE_FIELDS: dict[str, tuple[type, ...]] = {
    "scenario": (str,),
    "repetition": (int,),
    "epsilon": _NUMBER,
    "intensity": _NUMBER,
    "seed": (int,),
    "task": (str,),
    "agent": (str,),
    "outcome": (str,),
    "error": (str, type(None)),
    "output": (str, type(None)),
    "duration_s": _NUMBER,
    "attempts": (dict,),
    "checks": (list,),
    "score": _NUMBER,
    "oracle": (dict, type(None)),
    "base_passed": (bool,),
    "passed": (bool,),
    "replay": (str,),
}
_KINDS = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    dict: "an object",
    list: "a list",
    bool: "true or false",
    type(None): "null",
}


def _episode_problem(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with one episode of a results file (``field: ...``), or None."""
    for name, types in _EPISODE_FIELDS.items():
        if name not in raw:
            return f"{name}: missing"
        value = raw[name]
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types) or (isinstance(value, float) and not math.isfinite(value)):
            allowed = "a finite number" if types == _NUMBER else " or ".join(_KINDS[t] for t in types)
            return f"{name}: must be {allowed}, got {json.dumps(value)[:60]}"
    # fields added with several agents per battery: optional (older files lack them), checked when present
    for name in ("tags", "faults"):
        value = raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            return f"{name}: must be a list of strings, got {json.dumps(value)[:60]}"
    if not isinstance(raw.get("domain"), str | type(None)):
        return f"domain: must be a string or null, got {json.dumps(raw.get('domain'))[:60]}"
    total = raw["attempts"].get("total", 0)
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        return f"attempts.total: must be a whole number >= 0, got {json.dumps(total)[:60]}"
    for j, chk in enumerate(raw["checks"]):
        if not isinstance(chk, dict):
            return f"checks[{j}]: must be an object with name, passed, severity and message"
        for key, types, what in (
            ("name", (str,), "a string"),
            ("passed", (bool,), "true or false"),
            ("message", (str,), "a string"),
        ):
            if not isinstance(chk.get(key), types):
                return f"checks[{j}].{key}: must be {what}, got {json.dumps(chk.get(key))[:60]}"
        if chk.get("severity", "fail") not in ("fail", "warn", "pass"):
            return f"checks[{j}].severity: must be fail, warn or pass, got {json.dumps(chk.get('severity'))[:60]}"
    return None
