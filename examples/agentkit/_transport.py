"""How a scripted agent reaches its tools: directly, or through a replayed conversation; and what an error is."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from chaoskit import ToolHTTPError

__all__ = ["Direct", "ToolError", "Transport", "classify"]

_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_RETRY_AFTER = re.compile(r"Retry-After:\s*([0-9.]+)\s*s", re.I)


class ToolError(Exception):
    """A tool failure known only by its text (a ToolMessage with status "error" in a replayed conversation)."""


class Transport(Protocol):
    """Calls a tool by name, and waits."""

    def call(self, name: str, args: dict[str, Any]) -> Any: ...

    def sleep(self, seconds: float) -> None: ...


class Direct:
    """Plain Python tools, called in process; waits are real sleeps. The agent records its own model steps."""

    records_steps = True

    def __init__(self, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.tools = dict(tools)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        return self.tools[name](**args)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def classify(exc: BaseException) -> tuple[str, float | None]:
    """(kind, retry_after) of a tool failure. Kinds: ``rate_limit``, ``timeout``, ``server`` (5xx, connection
    reset), ``auth`` (401), ``client`` (any other rejection: 4xx, invalid operation, not found)."""
    text = str(exc)
    status = exc.status if isinstance(exc, ToolHTTPError) else None
    retry_after = exc.retry_after if isinstance(exc, ToolHTTPError) else None
    if status is None and (m := _STATUS.search(text)):
        status = int(m.group(1))
    if retry_after is None and (m := _RETRY_AFTER.search(text)):
        retry_after = float(m.group(1))
    if status == 429:
        return "rate_limit", retry_after
    if status == 401:
        return "auth", None
    if status is not None and status >= 500:
        return "server", retry_after
    if status is not None:
        return "client", None
    lowered = text.lower()
    if isinstance(exc, TimeoutError) or any(w in lowered for w in ("timed out", "timeouterror", "did not respond")):
        return "timeout", None
    if isinstance(exc, ConnectionError) or "Connection reset" in text or "Connection refused" in text:
        return "server", None
    return "client", None
