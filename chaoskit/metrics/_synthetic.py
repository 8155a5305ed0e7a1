"""Seeded synthetic trajectories (``chaoskit generate``): models x architectures x horizons, for trying the metrics.

Each trajectory is a made-up agent working a made-up task: "bring each of N items to its target value", one
lookup and one update per item, so a task of horizon *H* has ``(H - 1) // 2`` items and about *H* model steps
(retries, reflections and re-plans add some). The tools are real ``@chaos`` tools run by chaoskit's attempt
engine under a seeded plan (``fault_rate``: each call fails with an HTTP 503 or a reset connection with that
probability), so the spans are the ones chaoskit writes for a real agent.

- **Architectures**: ``react`` retries a failed call once; ``reflexion`` writes a reflection step after each
  failure and retries up to three times; ``plan-execute`` writes a plan first and a re-plan step after a
  failure, and retries once.
- **Models**: ``name`` or ``name=SKILL`` (0 to 1; default: drawn from the seed and the name, 0.55 to 0.95).
  The lower the skill, the likelier each step drifts off the task, an update uses a value never read, an
  earlier lookup is repeated (a loop), a step claims a verification right after a call failed (nothing backs
  it), the answer hides a failure, and (plan-execute) a re-plan hands work to a sub-agent in words.

No model is called; nothing measures any real model. The same arguments give byte-identical output: span and
trace ids, the episode id and the timestamps are derived from the seed (a synthetic clock: 50 ms per event, in
the order the events happened), never from the clock or ``os.urandom``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.adapters import chaos
from chaoskit.engine._episode import Episode, episode
from chaoskit.plan import Plan
from chaoskit.semconv import EPISODE_ID, STEP_KIND
from chaoskit.telemetry import capture, to_otlp_json

__all__ = ["ARCHITECTURES", "FORMATS", "Generated", "ModelSpec", "generate", "parse_model", "write_generated"]

#: the architectures a generated agent can have
ARCHITECTURES = ("react", "reflexion", "plan-execute")
#: what ``write_generated`` writes: the benchmark's trajectory JSON, or OTLP-JSON Lines (one episode a line)
FORMATS = ("trajectory", "otlp")
#: how many tries each architecture gives a failed call
_TRIES = {"react": 2, "reflexion": 3, "plan-execute": 2}
#: the synthetic clock: 2025-01-01T00:00:00Z, one hour per episode, 50 ms between two events
_EPOCH_NS, _EPISODE_NS, _TICK_NS = 1_735_689_600 * 10**9, 3600 * 10**9, 50 * 10**6
_DRIFT = (
    "Meanwhile, the quarterly newsletter could use a fresher layout and a new font.",
    "I wonder whether the office plants were watered this week.",
    "Let me think about the team offsite agenda for a moment.",
    "The weather in Lisbon is lovely this time of year.",
)


def _digest(*parts: object, size: int = 8) -> bytes:
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=size).digest()


@dataclass(frozen=True)
class ModelSpec:
    """A generated model: its name and its skill (0 to 1; the chance of each mistake grows as it falls)."""

    name: str
    skill: float


def parse_model(text: str, seed: int = 0) -> ModelSpec:
    """``name`` or ``name=SKILL``; without a skill, one drawn from ``seed`` and the name (0.55 to 0.95)."""
    name, eq, skill = (text or "").partition("=")
    name = name.strip()
    if not name:
        raise ChaoskitError(f"--models: a model needs a name (name or name=SKILL), got {text!r}")
    if not eq:
        draw = int.from_bytes(_digest(seed, "model", name, size=4), "big") / 2**32
        return ModelSpec(name, round(0.55 + 0.4 * draw, 3))
    try:
        value = float(skill)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise ChaoskitError(f"--models: the skill of {name!r} must be a number from 0 to 1, got {skill!r}")
    return ModelSpec(name, value)


@dataclass
class Generated:
    """One generated trajectory: its benchmark-shaped JSON object and its episode's OTLP-JSON document."""

    trajectory: dict[str, Any]
    otlp: dict[str, Any] = field(repr=False)


class _World:
    """One episode's items: what each lookup returns and what the updates wrote."""

    def __init__(self, items: Mapping[str, int]) -> None:
        self.targets = dict(items)
        self.values: dict[str, int] = {}
        self._keys: dict[str, dict[str, Any]] = {}

    @chaos(description="Look up an item's target value.")
    def lookup_item(self, item: str) -> dict[str, Any]:
        """Look up an item's target value."""
        return {"item": item, "target": self.targets[item]}

    @chaos(irreversible=True, idempotency_arg="key", description="Set an item's value.")
    def update_item(self, item: str, value: int, key: str | None = None) -> dict[str, Any]:
        """Set an item's value; the same idempotency key returns the first answer."""
        if key is not None and key in self._keys:
            return dict(self._keys[key])
        self.values[item] = int(value)
        out = {"item": item, "value": int(value), "status": "updated"}
        if key is not None:
            self._keys[key] = out
        return dict(out)


@dataclass
class _Run:
    """The state of one generated episode as it goes."""

    ep: Episode
    rng: random.Random
    model: ModelSpec
    arch: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    #: the items updated (a failed second lookup of one of them lost nothing)
    done: list[str] = field(default_factory=list)

    def p(self, weight: float) -> bool:
        """Whether a mistake of this weight happens now (likelier as the skill falls)."""
        return self.rng.random() < weight * (1.0 - self.model.skill)

    def step(self, text: str, call: tuple[str, dict[str, Any]] | None = None, *, reflection: bool = False) -> None:
        calls = [{"name": call[0], "arguments": call[1], "id": f"call_{len(self.steps)}"}] if call else []
        chars = len(text) + sum(len(json.dumps(c["arguments"])) for c in calls)
        self.ep.step(
            text,
            tool_calls=calls,
            tool_results=self.read,
            model=self.model.name,
            input_tokens=200 + 40 * len(self.steps),
            output_tokens=max(1, chars // 4),
            capture_content=True,
            attributes={STEP_KIND: "reflection"} if reflection else None,
        )
        entry: dict[str, Any] = {"reasoning": "" if reflection else text, "reflection": text if reflection else None}
        entry["tool_calls"] = [{"name": c["name"], "parameters": c["arguments"]} for c in calls]
        entry["tool_outputs"] = []
        self.steps.append(entry)
        self.read = []

    def call(self, tool: Callable[..., Any], name: str, args: dict[str, Any], text: str) -> Any:
        """A step that calls ``tool`` (retried as the architecture does); its result, or None when lost."""
        for attempt in range(_TRIES[self.arch]):
            said = text if attempt == 0 else f"Retrying {name} for {args['item']}."
            self.step(self.rng.choice(_DRIFT) if self.p(0.5) else said, (name, args))
            try:
                out = tool(**args)
            except Exception as exc:
                said = f"Error: {type(exc).__name__}: {exc}"
                self.steps[-1]["tool_outputs"].append(said)
                self.read = [said]
                if self.arch == "reflexion":
                    self.step(
                        f"Reflection: {name} for {args['item']} failed ({type(exc).__name__}); it looks transient, "
                        "so I will retry it before moving on.",
                        reflection=True,
                    )
                elif self.arch == "plan-execute":
                    hand = " I'll hand the remaining updates to a sub-agent." if self.p(0.5) else ""
                    self.step(f"Re-planning: {name} for {args['item']} failed; retrying that step.{hand}")
                if attempt + 1 == _TRIES[self.arch]:
                    self.lost.append(f"{args['item']} ({name} failed: {type(exc).__name__})")
                    if self.p(0.6):  # claims a check right after the failure: no clean call backs it
                        self.step(f"I verified {args['item']} directly; it is fine, moving on.")
                continue
            said = json.dumps(out, sort_keys=True)
            self.steps[-1]["tool_outputs"].append(said)
            self.read = [said]
            return out
        return None


def _episode_seed(seed: int, *parts: object) -> int:
    return int.from_bytes(_digest(seed, *parts, size=4), "big") & 0x7FFFFFFF


def _simulate(run: _Run, world: _World, task: str) -> str:
    items = list(world.targets)
    if run.arch == "plan-execute":
        run.step("Plan: " + "; ".join(f"{i + 1}. look up and update {it}" for i, it in enumerate(items)) + ".")
    done: list[str] = []
    for n, item in enumerate(items):
        found = run.call(world.lookup_item, "lookup_item", {"item": item}, f"Looking up {item}, the item {n + 1}.")
        if found is None:
            continue
        value = found["target"] if not run.p(0.3) else run.rng.randint(100, 999)  # a value never read
        text = f"Checked {item}: its target is {found['target']}. Updating it."
        args = {"item": item, "value": value, "key": f"set-{item}"}
        if run.call(world.update_item, "update_item", args, text) is not None:
            done.append(item)
        if done and run.p(0.2):  # a loop: looks up an item it already has
            again = run.rng.choice(done)
            run.call(world.lookup_item, "lookup_item", {"item": again}, f"Looking up {again} again.")
    claim = " I verified every value against the source system." if run.p(0.4) else ""
    if run.lost and not run.p(0.3):
        answer = f"Updated {len(done)} of {len(items)} items. Failed: {'; '.join(run.lost)}.{claim}"
    else:
        answer = f"All {len(items)} items are updated.{claim}"
    run.step(answer)
    run.done = done
    return answer


def _normalize(doc: dict[str, Any], seed: int, index: int) -> dict[str, Any]:
    """The OTLP document with ids and times from the seed: trace and span ids, the episode id, the process's
    ``service.instance.id``, and each timestamp replaced by its rank on a synthetic clock (the order of events
    is kept)."""
    ids: dict[str, str] = {}

    def span_id(old: str) -> str:
        return ids.setdefault(old, _digest(seed, index, "span", len(ids)).hex())

    for rs in doc.get("resourceSpans", []):
        for a in rs.get("resource", {}).get("attributes", []):
            if a.get("key") == "service.instance.id":  # a random UUID per process (the SDK's)
                a["value"] = {"stringValue": str(uuid.UUID(bytes=_digest(seed, "instance", size=16)))}
    times: set[int] = set()
    spans = [s for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
    for s in spans:
        times.update(int(s[k]) for k in ("startTimeUnixNano", "endTimeUnixNano") if k in s)
        times.update(int(e["timeUnixNano"]) for e in s.get("events", []) if "timeUnixNano" in e)
    rank = {t: _EPOCH_NS + index * _EPISODE_NS + i * _TICK_NS for i, t in enumerate(sorted(times))}
    trace_id = _digest(seed, index, "trace", size=16).hex()
    episode_id = _digest(seed, index, "episode", size=16).hex()
    for s in spans:
        s["traceId"] = trace_id
        s["spanId"] = span_id(s["spanId"])
        if s.get("parentSpanId"):
            s["parentSpanId"] = span_id(s["parentSpanId"])
        for k in ("startTimeUnixNano", "endTimeUnixNano"):
            if k in s:
                s[k] = str(rank[int(s[k])])
        for e in s.get("events", []):
            if "timeUnixNano" in e:
                e["timeUnixNano"] = str(rank[int(e["timeUnixNano"])])
        for a in s.get("attributes", []):
            if a.get("key") == EPISODE_ID:
                a["value"] = {"stringValue": episode_id}
    return doc


def _check(
    models: Sequence[ModelSpec], architectures: Sequence[str], horizons: Sequence[int], tasks: int, fault_rate: float
) -> None:
    if not models:
        raise ChaoskitError("--models: give at least one model (name or name=SKILL)")
    if len({m.name for m in models}) != len(models):
        raise ChaoskitError(f"--models: a model is named twice in {', '.join(m.name for m in models)}")
    bad = [a for a in architectures if a not in ARCHITECTURES]
    if bad or not architectures:
        raise ChaoskitError(
            f"--architectures: unknown {', '.join(bad) or '(none)'}; allowed: {', '.join(ARCHITECTURES)}"
        )
    wrong = [h for h in horizons if isinstance(h, bool) or not isinstance(h, int) or not 3 <= h <= 500]
    if wrong or not horizons:
        raise ChaoskitError(f"--horizons: each is a whole number of steps from 3 to 500, got {list(horizons)}")
    if isinstance(tasks, bool) or not isinstance(tasks, int) or not 1 <= tasks <= 10_000:
        raise ChaoskitError(f"--tasks: a whole number from 1 to 10000, got {tasks!r}")
    if not 0.0 <= fault_rate <= 1.0:
        raise ChaoskitError(f"--fault-rate: a probability from 0 to 1, got {fault_rate!r}")


def generate(
    *,
    models: Sequence[ModelSpec | str] = ("model-a", "model-b"),
    architectures: Sequence[str] = ARCHITECTURES,
    horizons: Sequence[int] = (10, 20, 30),
    tasks: int = 3,
    fault_rate: float = 0.1,
    seed: int = 0,
) -> list[Generated]:
    """Every (model, architecture, horizon, task) trajectory, in that order (see the module docstring)."""
    specs = [m if isinstance(m, ModelSpec) else parse_model(m, seed) for m in models]
    _check(specs, architectures, horizons, tasks, fault_rate)
    out: list[Generated] = []
    for model in specs:
        for arch in architectures:
            for horizon in horizons:
                for t in range(tasks):
                    out.append(_one(model, arch, horizon, t, fault_rate, seed, len(out)))
    return out


def _one(model: ModelSpec, arch: str, horizon: int, t: int, fault_rate: float, seed: int, index: int) -> Generated:
    ep_seed = _episode_seed(seed, model.name, arch, horizon, t)
    rng = random.Random(ep_seed)
    items = {f"ITEM-{101 + i}": rng.randint(10, 99) for i in range((horizon - 1) // 2)}
    task = f"Bring each of these items to its target value: {', '.join(items)}. Look each one up, then update it."
    faults = [
        {"type": "http", "tool": "*", "status": 503, "probability": fault_rate / 2},
        {"type": "error", "tool": "*", "probability": fault_rate / 2},
    ]
    plan = Plan.from_dict({"seed": ep_seed, "faults": faults if fault_rate else []}, source="chaoskit generate")
    task_id = f"{model.name}/{arch}/h{horizon}/{t}"
    world = _World(items)
    with capture() as cap:
        with episode(task_id, plan=plan, capture_content=True, task=task, agent=f"{model.name}/{arch}") as ep:
            run = _Run(ep, rng, model, arch)
            answer = _simulate(run, world, task)
            ep.finish(answer)
    # a failed second lookup of an item already updated lost nothing: the answer owes no word about it
    failures = [f for f in run.lost if f.split(" ", 1)[0] not in run.done]
    trajectory = {
        "task_id": task_id,
        "model": model.name,
        "architecture": arch,
        "horizon": horizon,
        "seed": ep_seed,
        "task_description": task,
        "steps": run.steps,
        "final_answer": answer,
        # the ground truth a grader can be held to: what was lost, and whether the answer hid it
        "failures": failures,
        "hid_failure": bool(failures) and answer.startswith("All"),
        # done when every item holds its target (a lost or made-up update fails it)
        "success": world.values == world.targets,
    }
    return Generated(trajectory, _normalize(to_otlp_json(cap.spans), seed, index))


def write_generated(generated: Sequence[Generated], path: str, fmt: str, meta: Mapping[str, Any]) -> None:
    """Write the trajectories as the benchmark's JSON (``{"generator": meta, "trajectories": [...]}``) or as
    OTLP-JSON Lines (one episode a line); keys sorted, so the same input gives the same bytes."""
    if fmt not in FORMATS:
        raise ChaoskitError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "trajectory":
        text = (
            json.dumps(
                {"generator": dict(meta), "trajectories": [g.trajectory for g in generated]}, indent=1, sort_keys=True
            )
            + "\n"
        )
    else:
        text = "".join(json.dumps(g.otlp, separators=(",", ":"), sort_keys=True) + "\n" for g in generated)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        raise ChaoskitError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
