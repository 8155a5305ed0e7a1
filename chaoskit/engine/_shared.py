"""Call counters of one episode whose tool calls several processes serve (a proxy started per MCP session)."""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator, MutableMapping
from typing import Any

from chaoskit.engine._context import ACTIVE, Active, Scope, live_active
from chaoskit.plan._model import Plan

__all__ = ["SharedScope"]

_COUNT = re.compile(r"count\((\d+)\)")


class SharedScope:
    """The counters of one episode, carried in a JSON-able mapping from one process to the next.

    ``with shared.activate(counts):`` makes ``plan`` active with each tool's call counter and each fault's fire
    count taken from ``counts`` (``{"calls": {tool: calls so far}, "fired": [[fault index, tool, fires]]}``),
    and writes them back there on exit. The caller keeps ``counts`` where the other processes read it, under a
    lock held for the whole block (count and decide only: keep the tool's run outside it). What a process keeps
    only for itself: a tool's first result (``stale``) and ``cascading_failure`` outages in progress.
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._scope = Scope()

    @contextlib.contextmanager
    def activate(self, counts: MutableMapping[str, Any]) -> Iterator[Plan]:
        """Make the plan active with the counters in ``counts``; write them back when the block ends."""
        scope = self._scope
        calls = counts.get("calls")
        scope.counters = {
            str(tool): itertools.count(int(n) + 1) for tool, n in (calls.items() if isinstance(calls, dict) else ())
        }
        fired = counts.get("fired")
        scope.fired = {(int(i), str(t)): int(n) for i, t, n in (fired if isinstance(fired, list) else ())}
        current = live_active()
        token = ACTIVE.set(Active(self.plan, scope, current.episode if current else None))
        try:
            yield self.plan
        finally:
            ACTIVE.reset(token)
            counts["calls"] = {tool: _made(counter) for tool, counter in scope.counters.items()}
            counts["fired"] = [[i, t, n] for (i, t), n in scope.fired.items()]


def _made(counter: itertools.count[int]) -> int:
    # an itertools.count shows the next number it gives ("count(4)"): 3 calls were counted
    found = _COUNT.fullmatch(repr(counter))
    if found is None:  # pragma: no cover - CPython and PyPy both show count(N)
        raise RuntimeError(f"cannot read a call counter: {counter!r}")
    return int(found.group(1)) - 1
