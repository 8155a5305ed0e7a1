"""Turning tool arguments and results into span attributes: canonical JSON, stable hash, redaction, caps."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from . import _config

REDACTED = "[REDACTED]"


def _default(obj: Any) -> Any:
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump()
        except Exception:
            pass
    text = repr(obj)
    # the default object repr carries a memory address, which would make the hash differ run to run
    return f"<{type(obj).__qualname__}>" if " at 0x" in text else text


def canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=_default, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        # dict keys that are not strings (ints mixed with strs, tuples) or circular data: normalise and retry,
        # because describing a call must never break the call
        return json.dumps(_plain(value, 0), sort_keys=True, default=_default, ensure_ascii=False,
                          separators=(",", ":"))


def _plain(value: Any, depth: int) -> Any:
    if depth > 32:
        return "…"
    if isinstance(value, Mapping):
        return {_key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    return value


def _key(k: Any) -> str:
    return k if isinstance(k, str) else canonical_json(k) if isinstance(k, tuple) else str(k)


def args_hash(args: Mapping[str, Any], *, exclude: str | None = None) -> str:
    """Stable hash of the canonical, redacted arguments.

    The idempotency key is left out so that retries compare equal; secret values are redacted first, so the
    hash cannot be used to confirm a guessed password (and a retry with a refreshed token is the same call).
    """
    if exclude is not None and exclude in args:
        args = {k: v for k, v in args.items() if k != exclude}
    return hashlib.sha256(canonical_json(redact(args)).encode()).hexdigest()[:16]


def _has_secret(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return True
    if isinstance(value, Mapping):
        secret = _config.CONFIG.is_secret
        return any(secret(str(k)) or _has_secret(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_secret(v, depth + 1) for v in value)
    return False


def describe_args(args: Mapping[str, Any], *, exclude: str | None = None) -> tuple[str, str]:
    """``(hash, attribute JSON)`` of a call's arguments.

    The common call has no secret-looking keys and no idempotency key, and then one JSON encoding serves
    both the hash and the attribute; this runs on every tool call.
    """
    if (exclude is None or exclude not in args) and not _has_secret(args):
        text = canonical_json(args)
        return hashlib.sha256(text.encode()).hexdigest()[:16], cap(text)
    return args_hash(args, exclude=exclude), to_attr_json(args)


def redact(value: Any, depth: int = 0) -> Any:
    if depth > 8:
        return "…"
    if isinstance(value, Mapping):
        secret = _config.CONFIG.is_secret
        return {
            str(k): (REDACTED if secret(str(k)) else redact(v, depth + 1))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v, depth + 1) for v in value]
    return value


def cap(text: str, limit: int | None = None) -> str:
    limit = limit or _config.CONFIG.max_attr_chars
    if len(text) <= limit:
        return text
    return text[: limit - 20] + f"…[+{len(text) - limit + 20} chars]"


def to_attr_json(value: Any, limit: int | None = None) -> str:
    return cap(canonical_json(redact(value)), limit)


def to_text(value: Any, limit: int | None = None) -> str:
    text = value if isinstance(value, str) else canonical_json(redact(value))
    return cap(text, limit or _config.CONFIG.max_output_chars)
