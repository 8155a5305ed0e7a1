"""Asking the judge about one episode: a bounded call, the strict reading of its reply, and the on-disk cache."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chaoskit.judge._input import input_hash, judge_input
from chaoskit.judge._judge_models import JudgeModel, ModelRefused, Reply
from chaoskit.judge._rubric import (
    LABELS,
    RUBRIC_SHA,
    RUBRIC_VERSION,
    SYSTEM_PROMPT,
    Malformed,
    parse_reply,
    user_prompt,
)
from chaoskit.metrics._cost import Prices
from chaoskit.traces._records import EpisodeRecord

__all__ = ["CACHE_ENV", "Judge", "Judgment", "default_cache_dir"]

#: where judgments are cached (default ``~/.cache/chaoskit/judge``)
CACHE_ENV = "CHAOSKIT_JUDGE_CACHE"


def default_cache_dir() -> Path:
    """``$CHAOSKIT_JUDGE_CACHE``, else ``$XDG_CACHE_HOME/chaoskit/judge``, else ``~/.cache/chaoskit/judge``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chaoskit" / "judge"


@dataclass(frozen=True)
class Judgment:
    """The judge's answer about one episode. ``status`` is ``judged`` or ``cannot_judge`` (a timeout, a
    refusal, a malformed reply, an error: never a pass); ``verdicts`` maps each rubric label to True (the
    answer does it) and ``reasons`` gives one line each. ``cached`` says no model call was made this run;
    the tokens and cost are those of the call that made the judgment."""

    status: str
    model: str
    rubric: str = RUBRIC_VERSION
    verdicts: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    input_hash: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    currency: str | None = None
    cached: bool = False
    #: the model was called for this judgment in this run (False: from the cache, or nothing to ask)
    asked: bool = False

    @property
    def judged(self) -> bool:
        return self.status == "judged"

    @property
    def flagged(self) -> list[str]:
        """The labels the judge found, in rubric order (empty when it found none, or could not judge)."""
        return [lab for lab in LABELS if self.verdicts.get(lab)]

    @property
    def passed(self) -> bool | None:
        """True when judged honest, False when a label was found, None when it could not judge."""
        return None if not self.judged else not self.flagged

    def summary(self) -> str:
        """One line for the terminal: ``honest``, the labels found with their reasons, or why it cannot judge."""
        if not self.judged:
            return f"cannot judge: {self.error}"
        if not self.flagged:
            return "honest (no label found)"
        return "; ".join(f"{lab}: {self.reasons.get(lab, '')}" for lab in self.flagged)

    def to_dict(self) -> dict[str, Any]:
        """The judgment as JSON-ready data (the ``judge`` entry of an episode in every report)."""
        return {
            "status": self.status,
            "passed": self.passed,
            "flagged": self.flagged,
            "verdicts": dict(self.verdicts),
            "reasons": dict(self.reasons),
            "error": self.error,
            "model": self.model,
            "rubric": self.rubric,
            "input_hash": self.input_hash,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "cost": self.cost,
            "currency": self.currency,
            "cached": self.cached,
            "asked": self.asked,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgment:
        tokens = data.get("tokens") or {}
        return cls(
            status=data["status"],
            model=data["model"],
            rubric=data.get("rubric", RUBRIC_VERSION),
            verdicts=dict(data.get("verdicts") or {}),
            reasons=dict(data.get("reasons") or {}),
            error=data.get("error"),
            input_hash=data.get("input_hash"),
            input_tokens=tokens.get("input"),
            output_tokens=tokens.get("output"),
            cost=data.get("cost"),
            currency=data.get("currency"),
            cached=bool(data.get("cached")),
        )


class Judge:
    """A model asked the rubric, with a time limit per call, a cache on disk, and a price table for the cost.

    ``judge.episode(ep)`` or ``judge.ask(judge_input(ep))`` returns a :class:`Judgment`. Judgments are cached
    under (rubric version and fingerprint, model name, input hash): a rerun makes no model call and gives the
    same verdicts. A call that times out, raises, refuses or answers anything but the rubric's JSON object
    gives ``cannot_judge`` and is not cached (the next run asks again)."""

    def __init__(
        self,
        model: JudgeModel,
        *,
        timeout: float = 60.0,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
        prices: Prices | None = None,
        name: str | None = None,
    ) -> None:
        self.model = model
        self._name = name
        self.timeout = timeout
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.use_cache = cache
        self.prices = prices
        #: the calibration file's data when one was given (``--judge-calibration``), for the corrected pass rate
        self.calibration: dict[str, Any] | None = None
        #: model calls made and judgments read from the cache, by this object
        self.calls = 0
        self.hits = 0

    @property
    def name(self) -> str:
        return self._name or str(self.model.name)

    def _key(self, digest: str) -> str:
        raw = json.dumps([RUBRIC_VERSION, RUBRIC_SHA, self.name, digest])
        return hashlib.sha256(raw.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def episode(self, ep: EpisodeRecord, *, task: str | None = None, answer: str | None = None) -> Judgment:
        """Judge one episode (its :func:`~chaoskit.judge.judge_input`)."""
        return self.ask(judge_input(ep, task=task, answer=answer))

    def ask(self, value: dict[str, Any]) -> Judgment:
        """Judge one judge input."""
        digest = input_hash(value)
        if not str(value.get("final_answer") or "").strip():
            # nothing to grade (the agent crashed or said nothing): no model call, and never a pass
            return Judgment("cannot_judge", self.name, input_hash=digest, error="the episode has no final answer")
        key = self._key(digest)
        if self.use_cache:
            hit = self._read(key)
            if hit is not None:
                self.hits += 1
                return replace(hit, cached=True, asked=False)
        self.calls += 1
        judgment = self._call(value, digest)
        if self.use_cache and judgment.judged:
            self._write(key, judgment)
        return judgment

    def _read(self, key: str) -> Judgment | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return Judgment.from_dict(data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # absent or damaged: ask the model again

    def _write(self, key: str, judgment: Judgment) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(judgment.to_dict(), ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written costs a model call next time, nothing more

    def _call(self, value: dict[str, Any], digest: str) -> Judgment:
        cannot = Judgment("cannot_judge", self.name, input_hash=digest, asked=True)
        reply, error = _bounded(self.model, user_prompt(value), self.timeout)
        if reply is None:
            return replace(cannot, error=error)
        cost, currency = self._cost(reply)
        spent = replace(
            cannot, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, cost=cost, currency=currency
        )
        if reply.refusal:
            return replace(spent, error=f"the model refused: {' '.join(str(reply.refusal).split())[:200]}")
        try:
            verdicts, reasons = parse_reply(reply.text)
        except Malformed as exc:
            return replace(spent, error=f"malformed reply: {exc}")
        return replace(spent, status="judged", verdicts=verdicts, reasons=reasons)

    def _cost(self, reply: Reply) -> tuple[float | None, str | None]:
        if self.prices is None or reply.input_tokens is None or reply.output_tokens is None:
            return None, None
        price = self.prices.price_of(reply.model, getattr(self.model, "model", None))
        if price is None:
            return None, None
        cost = (reply.input_tokens * price.input + reply.output_tokens * price.output) / self.prices.per_tokens
        return round(cost, 8), self.prices.currency


def _bounded(model: JudgeModel, user: str, timeout: float) -> tuple[Reply | None, str | None]:
    """``model.complete`` in a daemon thread, waited for at most ``timeout`` seconds: (reply, None), or
    (None, why). A call still running after the limit is abandoned (its thread ends with the process)."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["reply"] = model.complete(SYSTEM_PROMPT, user, timeout=timeout)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=call, name="chaoskit-judge", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return None, f"the model did not answer within {timeout:g}s (timeout)"
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, ModelRefused):
            return None, f"the model refused: {' '.join(str(exc).split())[:200]}"
        if isinstance(exc, TimeoutError) or "timed out" in str(exc).lower():
            return None, f"the model did not answer within {timeout:g}s (timeout: {exc})"
        return None, f"the model call failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    reply = box.get("reply")
    if not isinstance(reply, Reply):
        return None, f"the model returned {type(reply).__name__}, not a chaoskit.judge.Reply"
    return reply, None
