"""Background faults at intensity lambda: each tool call faulted with probability lambda, the mix escalating with it.

What lambda is: the share of tool calls on which a background fault is drawn, of any kind in the mix (a
latency and the data faults included, not only the faults that raise). The share that raises is lambda times the
raising kinds' weights (:func:`raising_share`): at lambda 0.3 with ``medium``, 0.3 x 0.70 = 0.21. A
``cascade`` drawn on one call also fails the next call of every other tool (its dependents), which no draw of
theirs decided: in an episode of several tools the share of calls that fail is above lambda by at most
``lambda * w_cascade * (tools - 1)``.

A profile is a list of levels: from some lambda on, a mix of weights over the fault kinds in :data:`KINDS`
(timeout, latency, 5xx, 429 with Retry-After, partial payload, schema drift, outage window, cascade). The
built-in profiles bring transient timeouts and latency at low lambda, add 5xx at medium lambda, and add rate
limits, partial payloads, schema drift, outage windows and (``medium``, ``heavy``) cascading dependency failures
at high lambda (docs/profiles.md has the table).

Exact total probability. The core fires the *first* fault whose triggers hold, each per-call kind with an
independent hash draw. The background faults go after the scenario's own faults (a scenario fault always wins
on the calls it targets), in the fixed order of :data:`ORDER`, outage first. With the level's weights w_i
(summing to 1), the i-th background fault gets the conditional probability
``p_i = lambda * w_i / (1 - lambda * sum_{j<i} w_j)``, so that a call is faulted with probability exactly
lambda and by kind i with probability exactly ``lambda * w_i``. The outage is the one kind drawn per episode
rather than per call: windows of ``length`` consecutive call numbers (every tool's calls with those numbers
fail with HTTP 503), each call number starting a window with probability ``q = 1 - (1 - lambda * w_o) **
(1 / length)``, starts before call 1 included; so each of the first :data:`OUTAGE_HORIZON` calls lies in an
outage with probability exactly ``lambda * w_o`` (over seeds), independently of the per-call draws, and the
formula above holds with the outage as kind 0.

Determinism: everything is drawn from the episode seed, the fault index, the tool and the call number, so
the same seed gives the same faults. Every kind that the profile uses at any level keeps its place (and so
its draws) at every lambda, with probability 0 where its level does not use it: a higher lambda moves the
draws' thresholds, not the draws.
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
from chaoskit.plan._triggers import uniform
from chaoskit.plan._yaml import load_yaml

__all__ = [
    "KINDS",
    "ORDER",
    "OUTAGE_HORIZON",
    "OUTAGE_LENGTH",
    "PROFILES",
    "RAISING_KINDS",
    "Level",
    "Profile",
    "background_faults",
    "load_profile",
    "outage_calls",
    "raising_share",
    "with_background",
]

#: the fault kinds a profile weighs and the fault each one becomes
#: (short waits keep batteries fast); ``outage`` also takes ``length``, the calls one window lasts
KINDS: dict[str, dict[str, Any]] = {
    "timeout": {"type": "timeout", "after_s": 0.01},
    "http_5xx": {"type": "http", "status": 503},
    "rate_limit": {"type": "rate_limit", "retry_after": 0.02},
    "partial": {"type": "partial", "keep": 0.5},
    "schema_drift": {"type": "schema_drift"},
    "latency": {"type": "latency", "delay_s": 0.02},
    "outage": {"type": "http", "status": 503},
    # a dependency outage: the call it fires on fails, and so does the next call of every other tool
    "cascade": {"type": "cascading_failure", "dependents": "*", "for_calls": 1},
}
#: the kinds whose fault raises an error in the caller (the others delay, or alter the data)
RAISING_KINDS = frozenset({"timeout", "http_5xx", "rate_limit", "outage", "cascade"})
#: the order the kinds' faults are appended in: the outage (a window, drawn per episode) first
ORDER: tuple[str, ...] = ("outage", *(k for k in KINDS if k != "outage"))
#: the calls one outage window lasts, unless a profile's ``params: {outage: {length: n}}`` says otherwise
OUTAGE_LENGTH = 3
#: outage windows are drawn over the first this many calls of each tool
OUTAGE_HORIZON = 64


def _bad_weight(w: object) -> bool:
    return not isinstance(w, int | float) or isinstance(w, bool) or not math.isfinite(w) or w < 0


def _known_kind(kind: Any, where: str, line: int | None, field: str) -> None:
    """Reject a key of ``weights:`` or ``params:`` that names no fault kind, with the closest kind and the list."""
    if kind not in KINDS:
        raise PlanError(
            f"unknown fault kind {kind!r}{_suggest(str(kind), KINDS)}; allowed: {', '.join(KINDS)}",
            source=where,
            line=line,
            field=field,
        )


def _check_weights(weights: Mapping[Any, Any], where: str, prefix: str, lines: Mapping[tuple[Any, ...], int]) -> None:
    for kind, w in weights.items():
        line = _line_for((*_path(prefix), kind), lines)
        _known_kind(kind, where, line, f"{prefix}.{kind}")
        if _bad_weight(w):
            raise PlanError(
                f"must be a finite number >= 0, got {w!r}", source=where, line=line, field=f"{prefix}.{kind}"
            )
    if sum(weights.values()) <= 0:
        raise PlanError(
            "a profile needs at least one positive weight",
            source=where,
            line=_line_for(_path(prefix), lines),
            field=prefix,
        )


def _path(prefix: str) -> tuple[Any, ...]:
    """``levels[1].weights`` as the key path the YAML line map uses: ("levels", 1, "weights")."""
    out: list[Any] = []
    for part in prefix.split("."):
        name, _, index = part.partition("[")
        out.append(name)
        if index:
            out.append(int(index.rstrip("]")))
    return tuple(out)


@dataclass(frozen=True)
class Level:
    """One step of a profile: from intensity ``start`` on (up to the next level's), the mix ``weights``."""

    start: float
    weights: dict[str, float]


@dataclass(frozen=True)
class Profile:
    """Levels of weights over :data:`KINDS` (each normalised to sum 1) and optional per-kind fault parameters.

    ``levels`` is a tuple of :class:`Level` (the first from 0, increasing), or one mapping of weights for a
    profile with the same mix at every intensity. ``source`` is the file the profile was read from (what a
    replay command names), None for the built-in profiles and for mappings given from Python."""

    name: str
    levels: tuple[Level, ...]
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        where = self.source or f"profile {self.name}"
        raw: Any = self.levels
        levels = (Level(0.0, dict(raw)),) if isinstance(raw, Mapping) else tuple(raw)
        if not levels or levels[0].start != 0.0:
            raise PlanError("the first level must start at intensity 0", source=where, field="levels[0].from")
        out: list[Level] = []
        for i, lv in enumerate(levels):
            prefix = "weights" if isinstance(raw, Mapping) else f"levels[{i}].weights"
            if i and not levels[i - 1].start < lv.start <= 1.0:
                raise PlanError(
                    f"must be above the previous level's ({levels[i - 1].start:g}) and at most 1, got {lv.start!r}",
                    source=where,
                    field=f"levels[{i}].from",
                )
            _check_weights(lv.weights, where, prefix, {})
            total = sum(lv.weights.values())
            out.append(Level(float(lv.start), {k: float(w) / total for k, w in lv.weights.items() if w > 0}))
        object.__setattr__(self, "levels", tuple(out))

    @property
    def weights(self) -> dict[str, float]:
        """The mix of the top level (a profile with one level: its only mix)."""
        return self.levels[-1].weights

    def mix(self, lam: float) -> dict[str, float]:
        """The weights at intensity ``lam``: those of the last level starting at or below it."""
        return next(lv.weights for lv in reversed(self.levels) if lv.start <= lam)

    def kinds(self) -> list[str]:
        """Every kind some level uses, in the order of :data:`ORDER` (their faults' order in a plan)."""
        used = {k for lv in self.levels for k in lv.weights}
        return [k for k in ORDER if k in used]

    def fault(self, kind: str) -> dict[str, Any]:
        """The fault entry of ``kind`` on every tool, with this profile's parameters (an outage's ``length``
        is not a fault parameter and is left out)."""
        params = {k: v for k, v in self.params.get(kind, {}).items() if not (kind == "outage" and k == "length")}
        return {**KINDS[kind], **params, "tool": "*"}

    def outage_length(self) -> int:
        """The calls one outage window lasts."""
        return int(self.params.get("outage", {}).get("length", OUTAGE_LENGTH))

    def to_dict(self) -> dict[str, Any]:
        """The profile as a results file records it: name, the top level's weights, every level (``from``,
        rounded weights) and each used kind's parameters."""
        return {
            "name": self.name,
            "weights": {k: round(v, 4) for k, v in self.weights.items()},
            "levels": [
                {"from": lv.start, "weights": {k: round(v, 4) for k, v in lv.weights.items()}} for lv in self.levels
            ],
            "params": {k: {**KINDS[k], **self.params.get(k, {})} for k in self.kinds()},
        }


#: the low and medium levels' mixes, alike in every built-in profile
_LOW = {"timeout": 0.5, "latency": 0.5}
_MEDIUM = {"timeout": 0.3, "latency": 0.3, "http_5xx": 0.4}
#: the high level's mix: kind -> its share in light, medium, heavy
_HIGH = {
    "timeout": (0.2, 0.15, 0.1),
    "latency": (0.2, 0.1, 0.05),
    "http_5xx": (0.2, 0.15, 0.1),
    "rate_limit": (0.2, 0.2, 0.2),
    "partial": (0.05, 0.1, 0.15),
    "schema_drift": (0.05, 0.1, 0.1),
    "outage": (0.1, 0.15, 0.2),
    "cascade": (0.0, 0.05, 0.1),
}
#: where the medium and the high level start in each built-in profile
_STARTS = {"light": (0.2, 0.5), "medium": (0.1, 0.3), "heavy": (0.05, 0.2)}

#: chaoskit's own profiles (chosen by us, not taken from any paper): which faults come at which intensity.
#: They escalate alike; ``light`` later and milder, ``heavy`` sooner and with more outages and partial payloads.
PROFILES: dict[str, Profile] = {
    name: Profile(
        name,
        (Level(0.0, _LOW), Level(mid, _MEDIUM), Level(high, {k: shares[i] for k, shares in _HIGH.items()})),
    )
    for i, (name, (mid, high)) in enumerate(_STARTS.items())
}

_KEYS = "name, weights, params, levels"


def load_profile(spec: str | Profile | Mapping[str, Any]) -> Profile:
    """A named profile (``light``, ``medium``, ``heavy``), a YAML file, or a mapping.

    The file / mapping form is ``{name: ..., weights: {timeout: 0.2, ...}, params: {timeout: {after_s: 0.1}}}``
    (one mix at every intensity), ``{name: ..., levels: [{from: 0, weights: {...}}, {from: 0.3, weights:
    {...}}], params: ...}`` (a mix per level), or just the weights mapping. Errors name the file, the line and
    the field.
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
            f"a profile must be a mapping of fault kind to weight (or {_KEYS}), got "
            f"{type(data).__name__}; allowed kinds: {', '.join(KINDS)}",
            source=where,
            line=1,
        )
    if "weights" not in data and "levels" not in data:
        data = {"weights": data}
        lines = {("weights", *k): v for k, v in lines.items()}
    extra = sorted(set(data) - {"name", "weights", "params", "levels"}, key=str)
    if extra:
        raise PlanError(
            f"unknown key {extra[0]!r}; allowed here: {_KEYS}",
            source=where,
            line=_line_for((extra[0],), lines),
            field=str(extra[0]),
        )
    if "weights" in data and "levels" in data:
        raise PlanError(
            "give either weights (one mix at every intensity) or levels (a mix per level), not both",
            source=where,
            line=_line_for(("levels",), lines),
            field="levels",
        )
    params = data.get("params") or {}
    _mapping("params", params, "fault kind to a mapping of fault parameters", where, lines)
    levels = _levels(data, where, lines)
    _check_params(params, where, lines)
    prof_name = data.get("name", name)
    return Profile(str(prof_name), levels, {str(k): dict(v) for k, v in params.items()}, source=source)


def _mapping(key: str, value: object, what: str, where: str, lines: Mapping[tuple[Any, ...], int]) -> None:
    if not isinstance(value, Mapping):
        raise PlanError(
            f"must be a mapping of {what} ({', '.join(KINDS)}), got {type(value).__name__} {value!r}",
            source=where,
            line=_line_for(_path(key), lines),
            field=key,
        )


def _levels(data: Mapping[str, Any], where: str, lines: Mapping[tuple[Any, ...], int]) -> tuple[Level, ...]:
    if "weights" in data:
        _mapping("weights", data["weights"], "fault kind to weight", where, lines)
        _check_weights(data["weights"], where, "weights", lines)
        return (Level(0.0, dict(data["weights"])),)
    raw = data["levels"]
    if not isinstance(raw, list) or not raw:
        raise PlanError(
            f"must be a list of levels, each {{from: intensity, weights: {{kind: weight}}}}, got {raw!r}",
            source=where,
            line=_line_for(("levels",), lines),
            field="levels",
        )
    out: list[Level] = []
    for i, lv in enumerate(raw):
        at = f"levels[{i}]"
        if not isinstance(lv, Mapping) or set(lv) != {"from", "weights"}:
            raise PlanError(
                f"must be a mapping with exactly the keys from (an intensity) and weights, got {lv!r}",
                source=where,
                line=_line_for(("levels", i), lines),
                field=at,
            )
        start = lv["from"]
        low = out[-1].start if out else None
        if _bad_weight(start) or start > 1 or (low is None and start != 0) or (low is not None and start <= low):
            rule = "0 (the first level)" if low is None else f"above {low:g} (the previous level's) and at most 1"
            raise PlanError(
                f"must be {rule}, got {start!r}",
                source=where,
                line=_line_for(("levels", i, "from"), lines),
                field=f"{at}.from",
            )
        _mapping(f"{at}.weights", lv["weights"], "fault kind to weight", where, lines)
        _check_weights(lv["weights"], where, f"{at}.weights", lines)
        out.append(Level(float(start), dict(lv["weights"])))
    return tuple(out)


def _check_params(params: Mapping[Any, Any], where: str, lines: Mapping[tuple[Any, ...], int]) -> None:
    for kind, p in params.items():
        line = _line_for(("params", kind), lines)
        _known_kind(kind, where, line, f"params.{kind}")
        if not isinstance(p, Mapping):
            raise PlanError(
                f"must be a mapping of {KINDS[kind]['type']} fault parameters, got {type(p).__name__} {p!r}",
                source=where,
                line=line,
                field=f"params.{kind}",
            )
        p = dict(p)
        if kind == "outage":
            n = p.pop("length", OUTAGE_LENGTH)
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= OUTAGE_HORIZON:
                raise PlanError(
                    f"must be a whole number of calls from 1 to {OUTAGE_HORIZON}, got {n!r}",
                    source=where,
                    line=_line_for(("params", kind, "length"), lines) or line,
                    field="params.outage.length",
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


def outage_calls(share: float, length: int, seed: int) -> tuple[int, ...]:
    """The call numbers (of every tool, up to :data:`OUTAGE_HORIZON`) inside an outage window, when each call
    must lie in one with probability ``share``: windows of ``length`` calls start independently."""
    if share <= 0.0:
        return ()
    q = 1.0 if share >= 1.0 else 1.0 - (1.0 - share) ** (1.0 / length)
    out: set[int] = set()
    for start in range(2 - length, OUTAGE_HORIZON + 1):
        if uniform(seed, -1, "outage", start) < q:
            out.update(range(max(1, start), min(OUTAGE_HORIZON, start + length - 1) + 1))
    return tuple(sorted(out))


def background_faults(lam: float, profile: Profile, *, seed: int) -> list[dict[str, Any]]:
    """Fault entries (``tool: "*"``) that together fault each call with probability ``lam``, in the mix of
    ``profile`` at ``lam``; ``seed`` places the outage windows (the per-call kinds draw from the plan's seed)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"intensity must be from 0 to 1, got {lam!r}")
    if lam == 0.0:
        return []
    weights = profile.mix(lam)
    out: list[dict[str, Any]] = []
    used = 0.0
    for kind in profile.kinds():
        w = weights.get(kind, 0.0)
        if kind == "outage":
            calls = outage_calls(lam * w, profile.outage_length(), seed)
            # no window this episode: the entry stays (probability 0) so the later kinds keep their draws
            out.append({**profile.fault(kind), **({"on_call": list(calls)} if calls else {"probability": 0.0})})
        else:
            remaining = 1.0 - lam * used
            p = 1.0 if remaining <= 1e-12 else min(1.0, lam * w / remaining)
            out.append({**profile.fault(kind), "probability": p})
        used += w
    return out


def raising_share(lam: float, profile: Profile) -> float:
    """The share of calls whose background fault raises at intensity ``lam``: lambda times the raising kinds'
    weights in the mix at ``lam`` (a cascade's spill-over onto other tools not counted)."""
    return lam * sum(w for k, w in profile.mix(lam).items() if k in RAISING_KINDS)


def with_background(plan: Plan, lam: float, profile: Profile, *, seed: int) -> Plan:
    """``plan`` with background faults at intensity ``lam`` appended, drawing with ``seed``."""
    return plan.with_faults(background_faults(lam, profile, seed=seed), seed=seed)
