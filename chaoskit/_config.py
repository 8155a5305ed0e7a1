"""Process-wide settings, behind a lock, with a reset for tests."""

from __future__ import annotations

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
    "password", "passwd", "pwd", "secret", "token", "api_key", "apikey", "api-key", "authorization",
    "auth", "credential", "private_key", "cookie", "session_key", "access_key", "client_secret",
)


def _secret_regex(keys: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(k.lower()).replace("_", "[_-]?") for k in keys))


@dataclass
class _Config:
    max_attr_chars: int = 4096
    max_output_chars: int = 8192
    record_results: bool = False
    secret_keys: tuple[str, ...] = _DEFAULT_SECRET_KEYS
    secret_re: re.Pattern[str] = field(default_factory=lambda: _secret_regex(_DEFAULT_SECRET_KEYS))
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
            CONFIG.secret_re = _secret_regex(CONFIG.secret_keys)
        if on_attempt is not None:
            CONFIG.on_attempt = tuple(on_attempt)


def reset() -> None:
    """Restore the defaults and forget the CHAOSKIT_PLAN plan and known tools (for tests)."""
    global CONFIG
    with _lock:
        CONFIG = _Config()


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

        plan = Plan.from_yaml(path) if not path.lstrip().startswith("{") else Plan.model_validate_json(path)
    with _lock:
        cfg.env_plan = plan
        cfg.env_plan_loaded = True
    return plan


def remember_tool(name: str) -> None:
    CONFIG.known_tools.add(name)
