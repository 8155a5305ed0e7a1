"""Tokens, cost and time of an episode: usage from its model steps, prices from a table the user supplies."""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit._errors import ConfigError, PlanError
from chaoskit.metrics._model_steps import StepRecord
from chaoskit.metrics._trajectory import Trajectory
from chaoskit.plan._yaml import load_yaml

__all__ = ["EpisodeCost", "Price", "Prices", "episode_cost", "load_prices"]


@dataclass(frozen=True)
class Price:
    """What one model costs: ``input`` and ``output`` per :attr:`Prices.per_tokens` tokens."""

    input: float
    output: float


@dataclass(frozen=True)
class Prices:
    """A price table: model name (or shell-style pattern) to :class:`Price`. chaoskit ships no prices as fact."""

    models: dict[str, Price]
    currency: str = "USD"
    per_tokens: int = 1_000_000
    source: str = "<prices>"

    def price_of(self, model: str | None, request_model: str | None = None) -> Price | None:
        """The price of a step: the exact entry of ``model`` (the response's name, often dated:
        ``gpt-4o-mini-2024-07-18``), else the exact entry of ``request_model`` (``gpt-4o-mini``), else the most
        specific pattern (the longest) matching either, else None."""
        names = [n for n in (model, request_model) if n is not None]
        for name in names:
            if name in self.models:
                return self.models[name]
        matching = [p for p in self.models if any(fnmatch.fnmatchcase(n, p) for n in names)]
        return self.models[max(matching, key=len)] if matching else None

    @classmethod
    def from_dict(cls, data: Any, source: str = "<prices>") -> Prices:
        """From the YAML form (see docs/metrics.md); a bad field raises :class:`ConfigError` naming it."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping with 'models', got {type(data).__name__}")
        unknown = set(data) - {"models", "currency", "per_tokens"}
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {sorted(unknown)}; allowed: models, currency, per_tokens")
        per = data.get("per_tokens", 1_000_000)
        if isinstance(per, bool) or not isinstance(per, int) or per <= 0:
            raise ConfigError(f"{source}: per_tokens must be a whole number > 0 (e.g. 1000000), got {per!r}")
        currency = data.get("currency", "USD")
        if not isinstance(currency, str):
            raise ConfigError(f"{source}: currency must be a string such as USD, got {currency!r}")
        models = data.get("models")
        if not isinstance(models, Mapping) or not models:
            raise ConfigError(f"{source}: models must be a non-empty mapping of model name to {{input, output}}")
        table: dict[str, Price] = {}
        for name, entry in models.items():
            where = f"{source}: models.{name}"
            if not isinstance(entry, Mapping) or set(entry) != {"input", "output"}:
                raise ConfigError(f"{where}: expected {{input: <price>, output: <price>}}, got {entry!r}")
            for k in ("input", "output"):
                v = entry[k]
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                    raise ConfigError(f"{where}.{k}: expected a price >= 0 per {per} tokens, got {v!r}")
            table[str(name)] = Price(float(entry["input"]), float(entry["output"]))
        return cls(table, currency, per, source)


def load_prices(path: str | os.PathLike[str]) -> Prices:
    """Read a price table from YAML (``--prices prices.yaml``); errors name the file, line and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the price table: {exc.strerror or exc}") from None
    try:
        # the one YAML loader: size, depth and alias limits, and a key given twice refused (a second entry for a
        # model would silently replace the first, and could make it free)
        data, _ = load_yaml(text, str(p))
    except PlanError as exc:
        line = f", line {exc.line}" if exc.line else ""
        raise ConfigError(f"{p}{line}: not valid YAML: {exc.reason}") from None
    try:
        return Prices.from_dict(data, str(p))
    except ConfigError as exc:
        raise ConfigError(_with_line(str(exc), text, str(p))) from None


def _with_line(message: str, text: str, source: str) -> str:
    # "<file>: models.<name>..." -> "<file>, line N: models.<name>..." where the model's key is found
    rest = message.removeprefix(f"{source}: ")
    if rest.startswith("models."):
        name = rest[len("models.") :].split(":")[0].rsplit(".", 1)[0]
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip().startswith((f"{name}:", f'"{name}":', f"'{name}':")):
                return f"{source}, line {i}: {rest}"
    return message


@dataclass(frozen=True)
class EpisodeCost:
    """One episode's tokens, cost and times. ``cost`` is None without a price table, when a step's model has
    no price (``unpriced`` names them), or when a step reported no usage (``missing_usage`` counts them: the
    cost would be understated, so it is unknown); ``wall_s`` is the episode's span, ``tool_s`` the attempts'
    total time and ``model_s`` the steps' total time."""

    input_tokens: int
    output_tokens: int
    steps_with_usage: int
    cost: float | None
    currency: str | None
    unpriced: list[str] = field(default_factory=list)
    missing_usage: int = 0
    wall_s: float | None = None
    tool_s: float = 0.0
    model_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "steps_with_usage": self.steps_with_usage,
            "cost": None if self.cost is None else round(self.cost, 8),
            "currency": self.currency,
            "unpriced": list(self.unpriced),
            "missing_usage": self.missing_usage,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 6),
            "tool_s": round(self.tool_s, 6),
            "model_s": round(self.model_s, 6),
        }


def _usage(
    steps: Iterable[StepRecord],
) -> tuple[int, int, int, dict[tuple[str | None, str | None], tuple[int, int]]]:
    tin = tout = n = 0
    by_model: dict[tuple[str | None, str | None], tuple[int, int]] = {}
    for s in steps:
        if s.input_tokens is None and s.output_tokens is None:
            continue
        i, o = s.input_tokens or 0, s.output_tokens or 0
        n += 1
        tin, tout = tin + i, tout + o
        a, b = by_model.get((s.model, s.request_model), (0, 0))
        by_model[(s.model, s.request_model)] = (a + i, b + o)
    return tin, tout, n, by_model


def episode_cost(traj: Trajectory, prices: Prices | None = None) -> EpisodeCost:
    """Tokens from the steps' usage attributes, priced by ``prices``; times from the spans."""
    tin, tout, n, by_model = _usage(traj.steps)
    missing = len(traj.steps) - n
    cost: float | None = None
    unpriced: list[str] = []
    if prices is not None:
        total = 0.0
        for (model, request), (i, o) in by_model.items():
            price = prices.price_of(model, request)
            if price is None:
                unpriced.append(model or request or "(no model name)")
                continue
            total += (i * price.input + o * price.output) / prices.per_tokens
        # no step at all, or a step without usage: the true cost is unknown, and 0 or a part would mislead
        cost = None if unpriced or missing or not traj.steps else total
    ep = traj.episode
    wall = ep.end_time - ep.start_time if ep is not None and ep.start_time is not None and ep.end_time else None
    return EpisodeCost(
        input_tokens=tin,
        output_tokens=tout,
        steps_with_usage=n,
        cost=cost,
        currency=prices.currency if prices is not None else None,
        unpriced=sorted(set(unpriced)),
        missing_usage=missing,
        wall_s=wall,
        tool_s=sum(a.end_time - a.start_time for a in traj.attempts),
        model_s=sum(s.end_time - s.start_time for s in traj.steps),
    )
