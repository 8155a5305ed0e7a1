"""Process-wide settings (``configure``), behind a lock, and what is read from the environment."""

from __future__ import annotations

import itertools
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import chaoskit.semconv as sc
import chaoskit.telemetry as telemetry
from chaoskit._errors import ConfigError, PlanError
from chaoskit.plan._locate import _suggest
from chaoskit.plan._model import Plan

if TYPE_CHECKING:
    from chaoskit.engine._info import AttemptInfo

_DEFAULT_SECRET_KEYS = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "authorization",
    "auth",
    "credential",
    "credentials",
    "private_key",
    "cookie",
    "session_key",
    "access_key",
    "client_secret",
    "bearer",
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
        #: names already found not secret: ``clean.issuperset(args)`` clears a whole call's names at once
        self.clean: set[str] = set()

    def __call__(self, key: str) -> bool:
        hit = self._cache.get(key)
        if hit is None:
            words = _words(key)
            hit = any(w in self.phrases for w in words) or any(
                a + b in self.phrases for a, b in itertools.pairwise(words)
            )
            if len(self._cache) < 4096:
                self._cache[key] = hit
                if not hit:
                    self.clean.add(key)
        return hit


_OFF = ("0", "false", "no", "off")


def _trace_from_env() -> bool:
    """``CHAOSKIT_TRACE=0`` (or false/no/off) turns span recording off; read at import and at each reset."""
    return os.environ.get("CHAOSKIT_TRACE", "").strip().lower() not in _OFF


def latest_genai_from_env() -> bool:
    """``OTEL_SEMCONV_STABILITY_OPT_IN`` (a comma-separated list) holds ``gen_ai_latest_experimental``: write the
    latest GenAI conventions only, not the shapes they deprecate (docs/semconv.md); read at import and each reset."""
    values = os.environ.get(sc.SEMCONV_OPT_IN_ENV, "")
    return sc.SEMCONV_GENAI_LATEST in (v.strip() for v in values.split(","))


@dataclass
class _Config:
    trace: bool = field(default_factory=_trace_from_env)
    #: ``gen_ai_latest_experimental`` opted in (see :func:`latest_genai_from_env`)
    latest_genai: bool = field(default_factory=latest_genai_from_env)
    #: the second name the arguments are written under: ``chaoskit.args`` (readers of earlier traces, dashboards),
    #: or, with the latest conventions, ``gen_ai.tool.call.arguments`` again (one store, no branch on the hot path)
    args_alias: str = field(init=False, default=sc.ARGS)
    max_attr_chars: int = 4096
    max_output_chars: int = 8192
    record_results: bool = False
    secret_keys: tuple[str, ...] = _DEFAULT_SECRET_KEYS
    is_secret: SecretKeys = field(default_factory=lambda: SecretKeys(_DEFAULT_SECRET_KEYS))
    on_attempt: tuple[Callable[[AttemptInfo], Any], ...] = ()
    known_tools: set[str] = field(default_factory=set)
    env_plan: Plan | None = None
    env_plan_loaded: bool = False

    def __post_init__(self) -> None:
        self.args_alias = sc.GEN_AI_TOOL_CALL_ARGUMENTS if self.latest_genai else sc.ARGS


_lock = threading.Lock()
CONFIG = _Config()


_CONFIGURE_ARGS = (
    "trace",
    "max_attr_chars",
    "max_output_chars",
    "record_results",
    "secret_keys",
    "on_attempt",
    "export_timeout",
)
_MIN_CHARS = 64


def configure(
    *,
    trace: bool | None = None,
    max_attr_chars: int | None = None,
    max_output_chars: int | None = None,
    record_results: bool | None = None,
    secret_keys: Iterable[str] | None = None,
    on_attempt: Callable[[AttemptInfo], Any] | Iterable[Callable[[AttemptInfo], Any]] | None = None,
    export_timeout: float | None = None,
    **unknown: Any,
) -> None:
    """Change process-wide settings. Every argument is checked first: a bad one raises
    :class:`chaoskit.ConfigError` naming it and what is allowed, and then nothing is changed.

    ``trace=False`` (or ``CHAOSKIT_TRACE=0`` in the environment) records no spans: faults still fire and
    episodes still list their attempts, but no argument is described (``AttemptInfo.args_hash`` is None).

    ``max_attr_chars`` / ``max_output_chars`` (whole numbers >= 64) cap span attributes and the recorded final
    answer. ``secret_keys`` replaces the argument names whose values are redacted in spans: a list of names
    (a bare string is rejected, it would be read letter by letter); a name matches by whole words (``token``
    matches ``access_token`` and ``authToken`` but not ``max_tokens``).

    ``on_attempt`` takes a callable, or a list of them, that receive a frozen :class:`chaoskit.AttemptInfo`
    after every tool attempt; a hook that raises is logged and ignored so it can never break the agent.

    ``export_timeout`` (seconds >= 0; default 5, or ``CHAOSKIT_EXPORT_TIMEOUT``) bounds how long a flush and the
    shutdown at exit wait for an OTLP backend, whatever ``OTEL_EXPORTER_OTLP_TIMEOUT`` says; what is not sent
    by then is given up, with one warning naming how many spans and the local copy.
    """
    if unknown:
        name = sorted(unknown)[0]
        raise ConfigError(
            f"configure(): no argument {name!r}{_suggest(name, _CONFIGURE_ARGS)}; "
            f"the arguments are: {', '.join(_CONFIGURE_ARGS)}"
        )
    chars = {
        k: _check_chars(v, k)
        for k, v in (("max_attr_chars", max_attr_chars), ("max_output_chars", max_output_chars))
        if v is not None
    }
    if trace is not None and not isinstance(trace, bool):
        raise ConfigError(f"configure(trace=...): expected True or False, got {type(trace).__name__} {trace!r}")
    if record_results is not None and not isinstance(record_results, bool):
        raise ConfigError(
            f"configure(record_results=...): expected True or False, got "
            f"{type(record_results).__name__} {record_results!r}"
        )
    keys = _check_secret_keys(secret_keys) if secret_keys is not None else None
    hooks = _check_hooks(on_attempt) if on_attempt is not None else None
    bound = _check_seconds(export_timeout) if export_timeout is not None else None
    with _lock:
        if bound is not None:
            telemetry.set_export_timeout(bound)
        if trace is not None:
            CONFIG.trace = trace
        for k, v in chars.items():
            setattr(CONFIG, k, v)
        if record_results is not None:
            CONFIG.record_results = record_results
        if keys is not None:
            CONFIG.secret_keys = keys
            CONFIG.is_secret = SecretKeys(keys)
        if hooks is not None:
            CONFIG.on_attempt = hooks


def _check_chars(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"configure({name}=...): expected a whole number of characters >= {_MIN_CHARS}, got "
            f"{type(value).__name__} {value!r}"
        )
    if value < _MIN_CHARS:
        raise ConfigError(f"configure({name}=...): expected a whole number of characters >= {_MIN_CHARS}, got {value}")
    return value


def _check_seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"configure(export_timeout=...): expected a number of seconds >= 0, got {type(value).__name__} {value!r}"
        )
    return float(value)


def _check_secret_keys(value: Any) -> tuple[str, ...]:
    allowed = "a list of argument names, e.g. secret_keys=['token', 'ssn']"
    if isinstance(value, str | bytes):
        # iterating a string gives its letters: redaction of the name itself would silently stop
        raise ConfigError(f"configure(secret_keys=...): got the bare string {value!r}; expected {allowed}")
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise ConfigError(f"configure(secret_keys=...): expected {allowed}, got {type(value).__name__}")
    keys = tuple(value)
    bad = [k for k in keys if not isinstance(k, str) or not k.strip()]
    if bad:
        raise ConfigError(
            f"configure(secret_keys=...): every name must be a non-empty string, got {bad[0]!r}; expected {allowed}"
        )
    return keys


def _check_hooks(value: Any) -> tuple[Callable[[AttemptInfo], Any], ...]:
    allowed = "a callable taking one chaoskit.AttemptInfo, or a list of them"
    if callable(value):
        return (value,)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigError(f"configure(on_attempt=...): expected {allowed}, got {type(value).__name__}")
    hooks = tuple(value)
    for i, hook in enumerate(hooks):
        if not callable(hook):
            raise ConfigError(
                f"configure(on_attempt=...): item {i} is a {type(hook).__name__}, not callable; expected {allowed}"
            )
    return hooks


def as_plan(value: Any, argument: str) -> Plan | None:
    """``value`` as a Plan: a Plan, None, or a dict validated at once with ``Plan.from_dict`` (so that a bad
    plan fails where it is given, not at the first tool call). Anything else is a ConfigError."""
    if value is None or isinstance(value, Plan):
        return value
    if isinstance(value, Mapping):
        return Plan.from_dict(value, source=f"{argument}=<dict>")
    hint = "; to load a file, pass Plan.from_yaml(path)" if isinstance(value, str | os.PathLike) else ""
    raise ConfigError(
        f"{argument}: expected a chaoskit.Plan, a dict (read with Plan.from_dict) or None, "
        f"got {type(value).__name__}{hint}"
    )


def restore_defaults() -> None:
    """Restore the default settings and forget the CHAOSKIT_PLAN plan; part of ``chaoskit.reset()``.

    The names of wrapped tools are kept: the wrapped functions still exist, and forgetting them would make
    episodes warn that a plan names a tool that was never wrapped.
    """
    global CONFIG
    with _lock:
        CONFIG = _Config(known_tools=CONFIG.known_tools)
        telemetry.set_export_timeout(None)


def config() -> _Config:
    """The current settings (replaced as a whole by a reset, so read them through here or ``CONFIG``)."""
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
        # a file path, or inline YAML/JSON (JSON is YAML), named as the variable in errors
        inline = path.lstrip().startswith("{") or "\n" in path
        try:
            plan = Plan.from_yaml(path, source="CHAOSKIT_PLAN") if inline else Plan.from_yaml(path)
        except PlanError as exc:
            if inline:
                raise
            # the file's own errors name the file; say also where that file name came from
            wrapped = PlanError(str(exc), source=f"CHAOSKIT_PLAN={path}")
            wrapped.line, wrapped.field, wrapped.reason = exc.line, exc.field, exc.reason
            raise wrapped from None
        except (OSError, ValueError, TypeError) as exc:
            raise PlanError(
                f"cannot read the plan file: {type(exc).__name__}: {exc}; expected the path of a "
                f"YAML/JSON plan file or an inline plan",
                source=f"CHAOSKIT_PLAN={path}",
            ) from None
    with _lock:
        cfg.env_plan = plan
        cfg.env_plan_loaded = True
    return plan


def remember_tool(name: str) -> None:
    """Note that a tool of this name exists (for the "plan names an unknown tool" warning)."""
    CONFIG.known_tools.add(name)
