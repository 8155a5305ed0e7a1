"""The core never needs LangChain: import it and use @chaos in a process where langchain*/langgraph* and the
integrations cannot be imported at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from importlib.abc import MetaPathFinder

    BLOCKED = ("langchain", "langgraph", "langsmith", "chaoskit_langchain", "chaoskit_langgraph")

    class Block(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0].startswith(BLOCKED):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, Block())
    try:
        import langchain_core  # noqa: F401
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("the blocker did not work")

    import chaoskit
    from chaoskit import Plan, chaos, telemetry

    plan = Plan(faults=[{"type": "error", "tool": "search", "on_call": 1},
                        {"type": "empty", "tool": "asearch", "on_call": 1}])

    @chaos
    def search(q: str) -> list:
        return [q]

    @chaos
    async def asearch(q: str) -> list:
        return [q]

    with telemetry.capture() as cap, chaoskit.episode("no-langchain", plan=plan) as ep:
        try:
            search("a")
        except ConnectionResetError:
            pass
        assert search("b") == ["b"]
        assert asyncio.run(asearch("c")) == []
    assert [s.attributes["chaoskit.outcome"] for s in cap.attempt_spans()] == ["error", "ok", "ok"]
    assert ep.outcome == "completed"
    loaded = sorted(m for m in sys.modules if m.split(".")[0].startswith(BLOCKED))
    assert not loaded, loaded
    print("core ok without langchain")
    """
)


def test_core_imports_and_works_without_langchain() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "core ok without langchain" in proc.stdout
