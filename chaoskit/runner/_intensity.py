"""Background faults at intensity lambda: each tool call faulted with probability lambda, kinds from a profile.

The kind is drawn from a profile of weights over timeout / 5xx / 429 / partial / schema drift / latency.

The core fires the *first* fault whose triggers hold, each with an independent hash draw. To make the total
probability exactly lambda and the split follow the weights w_i (summing to 1), the i-th background fault gets
the conditional probability ``p_i = lambda * w_i / (1 - lambda * sum_{j<i} w_j)``. Background faults go after
the scenario's own faults, so a scenario fault always wins on the calls it targets.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoskit._errors import PlanError
from chaoskit.plan._locate import _line_for, _suggest
from chaoskit.plan._model import Plan
from chaoskit.plan._yaml import load_yaml

__all__ = ["KINDS", "PROFILES", "Profile", "background_faults", "load_profile", "with_background"]

#: the fault kinds a profile weighs, and the fault each one becomes (short waits keep batteries fast)
KINDS: dict[str, dict[str, Any]] = {
    "timeout": {"type": "timeout", "after_s": 0.01},
    "http_5xx": {"type": "http", "status": 503},
    "rate_limit": {"type": "rate_limit", "retry_after": 0.02},
    "partial": {"type": "partial", "keep": 0.5},
    "schema_drift": {"type": "schema_drift"},
    "latency": {"type": "latency", "delay_s": 0.02},
}


@dataclass(frozen=True)
class Profile:
    """Weights over :data:`KINDS` (normalised to sum 1) and optional per-kind fault parameters.

    ``source`` is the file the profile was read from (what a replay command names), None for the built-in
    profiles and for mappings given from Python."""

    name: str
    weights: dict[str, float]
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        where = self.source or f"profile {self.name}"
        for kind, w in self.weights.items():
            if kind not in KINDS:
                raise PlanError(
                    f"unknown fault kind {kind!r}{_suggest(kind, KINDS)}; allowed: {', '.join(KINDS)}",
                    source=where,
                    field=f"weights.{kind}",
                )
            if not isinstance(w, int | float) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
                raise PlanError(f"must be a finite number >= 0, got {w!r}", source=where, field=f"weights.{kind}")
        total = sum(self.weights.values())
        if total <= 0:
            raise PlanError("a profile needs at least one positive weight", source=where, field="weights")
        object.__setattr__(self, "weights", {k: float(w) / total for k, w in self.weights.items() if w > 0})

    def fault(self, kind: str) -> dict[str, Any]:
        """The fault entry of ``kind`` on every tool, with this profile's parameters."""
        return {**KINDS[kind], **self.params.get(kind, {}), "tool": "*"}

    def to_dict(self) -> dict[str, Any]:
        """The profile as a results file records it: name, rounded weights, each kind's parameters."""
        return {
            "name": self.name,
            "weights": {k: round(v, 4) for k, v in self.weights.items()},
            "params": {k: {**KINDS[k], **self.params.get(k, {})} for k in self.weights},
        }


#: chaoskit's own profiles (chosen by us, not taken from any paper): what a background fault is, when one fires
PROFILES: dict[str, Profile] = {
    "light": Profile(
        "light",
        {"timeout": 0.10, "http_5xx": 0.30, "rate_limit": 0.20, "partial": 0.05, "schema_drift": 0.05, "latency": 0.30},
    ),
    "medium": Profile(
        "medium",
        {"timeout": 0.20, "http_5xx": 0.25, "rate_limit": 0.20, "partial": 0.10, "schema_drift": 0.10, "latency": 0.15},
    ),
    "heavy": Profile(
        "heavy",
        {"timeout": 0.25, "http_5xx": 0.25, "rate_limit": 0.20, "partial": 0.10, "schema_drift": 0.15, "latency": 0.05},
    ),
}


def load_profile(spec: str | Profile | Mapping[str, Any]) -> Profile:
    """A named profile (``light``, ``medium``, ``heavy``), a YAML file, or a mapping.

    The file / mapping form is ``{name: ..., weights: {timeout: 0.2, ...}, params: {timeout: {after_s: 0.1}}}``
    or just the weights mapping. Errors name the file, the line and the field.
    """
    if isinstance(spec, Profile):
        return spec
    lines: Mapping[tuple[Any, ...], int] = {}
    source: str | None = None
    if isinstance(spec, str):
        if spec in PROFILES:
            return PROFILES[spec]
        if not spec.strip():
            raise PlanError(f"is empty; give one of {', '.join(PROFILES)} or a YAML file", source="--profile")
        if os.path.isdir(spec):
            raise PlanError("is a directory; give a profile YAML file", source=spec, field="--profile")
        if not os.path.exists(spec):
            raise PlanError(
                f"unknown fault profile {spec!r}{_suggest(spec, PROFILES)}; give one of "
                f"{', '.join(PROFILES)} or a YAML file",
                source="--profile",
            )
        try:
            with open(spec, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise PlanError(f"cannot read the profile: {exc}", source=spec) from None
        data, lines = load_yaml(text, spec)
        source = spec
        name = os.path.basename(spec)
    else:
        data, name = spec, "custom"
    where = source or "<profile>"
    if not isinstance(data, Mapping):
        raise PlanError(
            f"a profile must be a mapping of fault kind to weight (or name/weights/params), got "
            f"{type(data).__name__}; allowed kinds: {', '.join(KINDS)}",
            source=where,
            line=1,
        )
    if "weights" not in data:
        data = {"weights": data}
        lines = {("weights", *k): v for k, v in lines.items()}
    extra = sorted(set(data) - {"name", "weights", "params"}, key=str)
    if extra:
        raise PlanError(
            f"unknown key {extra[0]!r}; allowed here: name, weights, params",
            source=where,
            line=_line_for((extra[0],), lines),
            field=str(extra[0]),
        )
    weights, params = data["weights"], data.get("params") or {}
    for key, value, what in (
        ("weights", weights, "fault kind to weight"),
        ("params", params, "fault kind to a mapping of fault parameters"),
    ):
        if not isinstance(value, Mapping):
            raise PlanError(
                f"must be a mapping of {what} ({', '.join(KINDS)}), got {type(value).__name__} {value!r}",
                source=where,
                line=_line_for((key,), lines),
                field=key,
            )
    for kind, w in weights.items():
        line = _line_for(("weights", kind), lines)
        if kind not in KINDS:
            raise PlanError(
                f"unknown fault kind {kind!r}{_suggest(str(kind), KINDS)}; allowed: {', '.join(KINDS)}",
                source=where,
                line=line,
                field=f"weights.{kind}",
            )
        if not isinstance(w, int | float) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
            raise PlanError(
                f"must be a finite number >= 0, got {w!r}", source=where, line=line, field=f"weights.{kind}"
            )
    for kind, p in params.items():
        line = _line_for(("params", kind), lines)
        if kind not in KINDS:
            raise PlanError(
                f"unknown fault kind {kind!r}{_suggest(str(kind), KINDS)}; allowed: {', '.join(KINDS)}",
                source=where,
                line=line,
                field=f"params.{kind}",
            )
        if not isinstance(p, Mapping):
            raise PlanError(
                f"must be a mapping of {KINDS[kind]['type']} fault parameters, got {type(p).__name__} {p!r}",
                source=where,
                line=line,
                field=f"params.{kind}",
            )
        try:
            # the fault each kind becomes is checked now, so a bad parameter is not found mid-battery
            Plan.from_dict({"faults": [{**KINDS[kind], **p, "tool": "*"}]}, source=where)
        except PlanError as exc:
            sub = exc.field.split(".", 1)[1] if exc.field and "." in exc.field else None
            raise PlanError(
                exc.reason,
                source=where,
                line=_line_for(("params", kind, sub), lines) or line,
                field=f"params.{kind}" + (f".{sub}" if sub else ""),
            ) from None
    prof_name = data.get("name", name)
    return Profile(str(prof_name), dict(weights), {str(k): dict(v) for k, v in params.items()}, source=source)


def background_faults(lam: float, profile: Profile) -> list[dict[str, Any]]:
    """Fault entries (``tool: "*"``) that together fault each call with probability ``lam``."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"intensity must be from 0 to 1, got {lam!r}")
    if lam == 0.0:
        return []
    out: list[dict[str, Any]] = []
    used = 0.0
    for kind, w in profile.weights.items():
        remaining = 1.0 - lam * used
        p = 1.0 if remaining <= 1e-12 else min(1.0, lam * w / remaining)
        out.append({**profile.fault(kind), "probability": p})
        used += w
    return out


def with_background(plan: Plan, lam: float, profile: Profile, *, seed: int) -> Plan:
    """``plan`` with background faults at intensity ``lam`` appended, drawing with ``seed``."""
    return plan.with_faults(background_faults(lam, profile), seed=seed)
