"""Real MCP servers for the proxy tests, installed on first use and cached outside the repo, and the processes a
test started, found by PID.

- ``mcp-server-time`` (PyPI) in its own virtualenv (it requires mcp>=2.3, which the mcp 1.x sub-run cannot
  share), ``~/.cache/chaoskit-test/mcp-server-time-<version>/``;
- ``@modelcontextprotocol/server-everything`` (npm, Node.js 20), ``~/.cache/chaoskit-test/npm-server-everything-
  <version>/``.

Each install runs once under a file lock (xdist workers share it) with a timeout; a server that cannot be
installed skips the test with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("CHAOSKIT_TEST_CACHE", Path.home() / ".cache" / "chaoskit-test"))
TIME_VERSION = "2026.10.19"
EVERYTHING_VERSION = "2026.8.31"
#: every step of an install (venv, pip, npm)
INSTALL_TIMEOUT_S = 300


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{name}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _install(what: str, target: Path, steps: list[list[str]], cwd: Path | None = None) -> None:
    """Run ``steps`` into ``target`` once (``target/READY`` marks it done); skip with the reason on failure."""
    if (target / "READY").exists():
        return
    with _locked(target.name):
        if (target / "READY").exists():
            return
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for step in steps:
            try:
                done = subprocess.run(
                    step, cwd=cwd or target, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                pytest.skip(f"{what} cannot be installed: {' '.join(step[:3])}: {exc}")
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                pytest.skip(f"{what} cannot be installed ({' '.join(step[:3])}): {' | '.join(tail)}")
        (target / "READY").write_text("ok\n")


def time_server() -> list[str]:
    """The command of PyPI's ``mcp-server-time`` (Python), in its own cached virtualenv."""
    target = CACHE / f"mcp-server-time-{TIME_VERSION}"
    py = target / "bin" / "python"
    _install(
        "mcp-server-time (PyPI)",
        target,
        [
            [sys.executable, "-m", "venv", str(target)],
            [str(py), "-m", "pip", "install", "-q", f"mcp-server-time=={TIME_VERSION}"],
        ],
    )
    return [str(target / "bin" / "mcp-server-time"), "--local-timezone", "UTC"]


def everything_server(mode: str = "stdio") -> list[str]:
    """The command of npm's ``@modelcontextprotocol/server-everything`` (Node.js), cached."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("@modelcontextprotocol/server-everything needs Node.js and npm, which are not installed")
    target = CACHE / f"npm-server-everything-{EVERYTHING_VERSION}"
    _install(
        "@modelcontextprotocol/server-everything (npm)",
        target,
        [
            ["npm", "init", "-y"],
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}",
            ],
        ],
    )
    entry = target / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    return [shutil.which("node") or "node", str(entry), mode]


# -- the processes a test started ------------------------------------------------------------------------------

TOKEN_VAR = "CHAOSKIT_TEST_PROCESS_TOKEN"


def pids_with(token: str) -> set[int]:
    """The live processes whose environment holds ``CHAOSKIT_TEST_PROCESS_TOKEN=token`` (a proxy the test started
    and everything it started: children inherit the variable)."""
    marker = f"{TOKEN_VAR}={token}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ.split(b"\0") and state != "Z":
            found.add(int(entry.name))
    return found


def assert_all_gone(pids: set[int], within_s: float = 10.0) -> None:
    """Each of ``pids`` has exited (within a bounded wait); any left are killed, and the test fails naming them."""
    deadline = time.monotonic() + within_s
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive if _alive(p)}
        if alive:
            time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    assert not alive, f"processes left behind: {sorted(alive)}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
