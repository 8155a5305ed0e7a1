"""A tiny agent world for the battery tests: a store, agents of known quality, oracles and scenario texts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from chaoskit import chaos


class Store:
    def __init__(self, seeded: bool = False) -> None:
        self.saved: list[tuple[str, str | None]] = [("old", None)] if seeded else []

    @chaos
    def fetch(self, item: str) -> dict[str, str]:
        return {"item": item, "price": "12"}

    @chaos(irreversible=True, idempotency_arg="key")
    def save(self, item: str, key: str | None = None) -> str:
        if key is not None and any(k == key for _, k in self.saved):
            return "ok"
        self.saved.append((item, key))
        return "ok"


class Agent:
    """Fetches then saves item 4832; retries each tool ``retries`` times, with an idempotency key or not."""

    def __init__(self, *, retries: int = 2, key: bool = True, seeded: bool = False) -> None:
        self.env = Store(seeded)
        self.retries = retries
        self.key = key

    def _try(self, fn: Any, *args: Any, **kwargs: Any) -> bool:
        for _ in range(self.retries + 1):
            try:
                fn(*args, **kwargs)
                return True
            except Exception:
                pass
        return False

    def invoke(self, task: str) -> str:
        if not self._try(self.env.fetch, "4832"):
            return "I could not fetch 4832: it failed"
        if not self._try(self.env.save, "4832", key="k-4832" if self.key else None):
            return "I could not save 4832: it failed"
        return "saved 4832"


def careful() -> Agent:
    return Agent()


def naive() -> Agent:
    return Agent(key=False)


def give_up() -> Agent:
    return Agent(retries=0)


def seeded() -> Agent:
    return Agent(seeded=True)


def locked() -> Agent:
    agent = Agent()
    agent.env.lock = threading.Lock()  # type: ignore[attr-defined]  # an env copy.deepcopy cannot copy
    return agent


def chatty() -> Any:
    """Reads 250 times, then saves: more attempts than a timeline lists."""
    agent = Agent()

    def run(task: str) -> str:
        for _ in range(250):
            agent.env.fetch("4832")
        agent.env.save("4832", key="k")
        return "saved 4832"

    return run, agent.env


def saved_once(env: Store) -> tuple[bool, Any]:
    return len(env.saved) == 1, sorted(item for item, _ in env.saved)


def one_more(initial: Store, final: Store) -> tuple[bool, Any]:
    """(initial, final): exactly one record added, and the initial state is the untouched copy."""
    added = [x for x in final.saved if x not in initial.saved]
    return len(final.saved) == len(initial.saved) + 1 and len(added) == 1, len(initial.saved)


W = "_battery_world"

SAVE = f"""\
name: save-after-500
task: "Save item 4832 now"
agent: {W}:careful
faults:
  - {{type: http, tool: save, on_call: 1, status: 500, after_write: true}}
success:
  output_contains: ["saved"]
  checks: [no_duplicate_writes, no_bluff]
  state: {W}:saved_once
tags: [domain:shop, fault:http, difficulty:easy, write]
"""

FETCH = f"""\
name: fetch-timeout
task: "Save item 4832 after a slow read"
agent: {W}:careful
faults:
  - {{type: timeout, tool: fetch, on_call: 1}}
success:
  output_contains: ["saved"]
  checks: [no_duplicate_writes]
tags: [domain:catalog, fault:timeout, difficulty:medium]
"""

PLAIN = f"""\
name: plain-save
task: "Save item 4832"
agent: {W}:careful
success:
  output_contains: ["saved"]
tags: [smoke]
"""


def write(dir_: Path, name: str, text: str) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    p = dir_ / name
    p.write_text(text, encoding="utf-8")
    return p
