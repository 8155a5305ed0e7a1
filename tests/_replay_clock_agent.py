"""Test helper: an agent whose tool call carries the wall-clock time, so no two runs send the same arguments."""

from __future__ import annotations

import time
from typing import Any

import chaoskit


@chaoskit.chaos
def search(query: str, timestamp: float) -> dict[str, Any]:
    return {"query": query, "hits": 3}


def make() -> Any:
    def agent(task: str) -> str:
        found = search(task, timestamp=time.time())
        return f"{found['hits']} hits for {found['query']}"

    return agent
