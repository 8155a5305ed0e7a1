"""Turning tool arguments and results into span attributes: canonical JSON, stable hash, redaction, caps."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import chaoskit.engine._config as _config

if TYPE_CHECKING:
    from chaoskit.engine._attempt import Attempt

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


def start_attributes(attempt: Attempt, args_json: str | None) -> dict[str, Any]:
    """The attributes an attempt's span starts with: one dict, since the SDK cleans attributes per call."""
    spec = attempt.spec
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": spec.name,
        "gen_ai.tool.type": spec.tool_type,
        "chaoskit.attempt": attempt.n,
        "chaoskit.tool.irreversible": spec.irreversible,
    }
    if spec.idempotent:
        attrs["chaoskit.tool.idempotent"] = True
    if attempt.episode is not None:
        attrs["chaoskit.episode.id"] = attempt.episode.id
    if attempt.call_id:
        attrs["gen_ai.tool.call.id"] = attempt.call_id
    if spec.description:
        attrs["gen_ai.tool.description"] = cap(spec.description, 512)
    if args_json is not None:
        attrs["chaoskit.args.hash"] = attempt.hash
        attrs["chaoskit.args"] = args_json
    if attempt.idem is not None:
        attrs["chaoskit.idempotency_key"] = attempt.idem
    if attempt.skipped is not None:
        attrs["chaoskit.fault.skipped"] = attempt.skipped
    fault = attempt.fault
    if fault is not None:
        attrs["chaoskit.fault.type"] = fault.type
        attrs["chaoskit.fault.index"] = attempt.fault_index
        for key, value in fault.params().items():
            if value is None or value is False or key in ("value", "garbage", "text"):
                continue
            name = "chaoskit.fault.http.status" if key == "status" else f"chaoskit.fault.{key}"
            attrs[name] = value if isinstance(value, bool | int | float | str) else to_attr_json(value)
        status = getattr(fault, "status", None)
        if status is not None:
            attrs["chaoskit.fault.http.status"] = status
        if fault.type == "prompt_injection":
            attrs["chaoskit.fault.text"] = cap(getattr(fault, "text", ""))
            attrs["chaoskit.fault.asks_for"] = list(getattr(fault, "asks_for", []))
    return attrs


def add_http_error(attrs: dict[str, Any], exc: BaseException) -> None:
    # duck-typed so a real client's 429 (ToolHTTPError, or an exception with .status/.status_code
    # and .retry_after) is gradable from the trace like an injected one
    status = getattr(exc, "status", None)
    if status is None:
        status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        attrs["http.response.status_code"] = status
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int | float) and not isinstance(retry_after, bool):
        attrs["chaoskit.retry_after"] = float(retry_after)
