"""Process-wide settings, behind a lock, with a reset for tests."""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._engine import AttemptInfo
    from ._plan import Plan

_DEFAULT_SECRET_KEYS = (
    "password", "passwd", "pwd", "passphrase", "secret", "token", "api_key", "authorization", "auth",
    "credential", "credentials", "private_key", "cookie", "session_key", "access_key", "client_secret", "bearer",
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")


def _words(key: str) -> tuple[str, ...]:
    return tuple(w for w in _SPLIT.split(_CAMEL.sub("_", key).lower()) if w)


class SecretKeys:
    """Decides whether an argument name looks secret, by whole words of the name.

    ``access_token``, ``apiKey``, ``X-Api-Key`` and ``client_secret`` match; ``author`` and ``max_tokens`` do
    not (substring matching would redact them and hide what the agent actually sent).
    """

    def __init__(self, keys: Iterable[str]) -> None:
        self.phrases = frozenset("".join(_words(k)) for k in keys)
        self._cache: dict[str, bool] = {}

    def __call__(self, key: str) -> bool:
        hit = self._cache.get(key)
        if hit is None:
            words = _words(key)
            hit = any(w in self.phrases for w in words) or any(
                a + b in self.phrases for a, b in itertools.pairwise(words)
            )
            if len(self._cache) < 4096:
                self._cache[key] = hit
        return hit


@dataclass
class _Config:
    max_attr_chars: int = 4096
    max_output_chars: int = 8192
    record_results: bool = False
    secret_keys: tuple[str, ...] = _DEFAULT_SECRET_KEYS
    is_secret: SecretKeys = field(default_factory=lambda: SecretKeys(_DEFAULT_SECRET_KEYS))
    on_attempt: tuple[Callable[[AttemptInfo], Any], ...] = ()
    known_tools: set[str] = field(default_factory=set)
    env_plan: Plan | None = None
    env_plan_loaded: bool = False


_lock = threading.Lock()
CONFIG = _Config()


def configure(
    *,
    max_attr_chars: int | None = None,
    max_output_chars: int | None = None,
    record_results: bool | None = None,
    secret_keys: Iterable[str] | None = None,
    on_attempt: Iterable[Callable[[AttemptInfo], Any]] | None = None,
) -> None:
    """Change process-wide settings.

    ``secret_keys`` replaces the argument names whose values are redacted in spans; a name matches by whole
    words (``token`` matches ``access_token`` and ``authToken`` but not ``max_tokens``).

    ``on_attempt`` takes callables that receive a frozen :class:`chaoskit.AttemptInfo` after every tool
    attempt; a hook that raises is logged and ignored so it can never break the agent.
    """
    with _lock:
        if max_attr_chars is not None:
            CONFIG.max_attr_chars = max(64, int(max_attr_chars))
        if max_output_chars is not None:
            CONFIG.max_output_chars = max(64, int(max_output_chars))
        if record_results is not None:
            CONFIG.record_results = bool(record_results)
        if secret_keys is not None:
            CONFIG.secret_keys = tuple(secret_keys)
            CONFIG.is_secret = SecretKeys(CONFIG.secret_keys)
        if on_attempt is not None:
            CONFIG.on_attempt = tuple(on_attempt)


def reset() -> None:
    """Restore the defaults and forget the CHAOSKIT_PLAN plan (for tests).

    The names of wrapped tools are kept: the wrapped functions still exist, and forgetting them would make
    episodes warn that a plan names a tool that was never wrapped.
    """
    global CONFIG
    with _lock:
        CONFIG = _Config(known_tools=CONFIG.known_tools)


def config() -> _Config:
    return CONFIG


def disabled() -> bool:
    """``CHAOSKIT_DISABLE`` turns every fault off; read on each call so tests and shells can flip it."""
    v = os.environ.get("CHAOSKIT_DISABLE")
    if not v:
        return False
    return v.strip().lower() not in ("0", "false", "no", "off", "")


def env_plan() -> Plan | None:
    """The plan named by ``CHAOSKIT_PLAN`` (loaded once; a malformed one raises PlanError at first use)."""
    cfg = CONFIG
    if cfg.env_plan_loaded:
        return cfg.env_plan
    path = os.environ.get("CHAOSKIT_PLAN")
    plan = None
    if path:
        from ._plan import Plan

        # a file path, or inline YAML/JSON (JSON is YAML), named as the variable in errors
        inline = path.lstrip().startswith("{") or "\n" in path
        plan = Plan.from_yaml(path, source="CHAOSKIT_PLAN") if inline else Plan.from_yaml(path)
    with _lock:
        cfg.env_plan = plan
        cfg.env_plan_loaded = True
    return plan


def remember_tool(name: str) -> None:
    CONFIG.known_tools.add(name)
