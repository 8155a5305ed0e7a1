"""The proxies a scenario's out-of-process tools need for one episode (``mcp:``), and the agent's environment.

:func:`tool_proxies` is the one hook the command-line episode calls around the agent's process: it yields the
environment variables that point the agent at its proxies, and stops any proxy it started once the agent
is done. Each key of a scenario that names out-of-process tools has one entry in :data:`PROXIES`; the proxy
itself is a ``chaoskit`` subcommand from an extra, started as a process, so the runner imports none of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from chaoskit._errors import ChaoskitError
from chaoskit.plan._model import Plan
from chaoskit.runner._scenario import Scenario
from chaoskit.runner._servers import McpServer

__all__ = ["PROXIES", "ProxyError", "tool_proxies"]

#: how long a proxy the runner starts may take to listen
_READY_S = 30.0


class ProxyError(ChaoskitError):
    """A proxy for the scenario's tools could not be started."""


def _chaoskit() -> list[str]:
    return [sys.executable, "-m", "chaoskit"]


def _argv(command: list[str]) -> list[str]:
    # `python` in a scenario means the interpreter the battery runs on (its virtualenv, its packages)
    return [sys.executable, *command[1:]] if command[0] in ("python", "python3") else list(command)


def _plan_file(plan: Plan, extra_faults: list[dict[str, Any]], path: Path) -> Path:
    data = plan.to_dict()
    data["faults"] = [*data["faults"], *extra_faults]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@contextlib.contextmanager
def _listening(argv: list[str], ready: Path, env: dict[str, str]) -> Iterator[str]:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + _READY_S
        while not ready.exists() or not ready.read_text(encoding="utf-8").strip():
            if proc.poll() is not None:
                raise ProxyError(f"the proxy `{' '.join(argv[3:5])}` exited with status {proc.returncode}")
            if time.monotonic() > deadline:
                raise ProxyError(f"the proxy did not listen within {_READY_S:g}s")
            time.sleep(0.02)
        yield ready.read_text(encoding="utf-8").strip()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def _mcp(server: McpServer, plan: Plan, workdir: Path, traces: Path) -> Iterator[dict[str, str]]:
    plan_path = _plan_file(plan, list(server.faults), workdir / "mcp-plan.yaml")
    proxy = [*_chaoskit(), "mcp-proxy", "--plan", str(plan_path), "--traces", str(traces)]
    if server.irreversible:
        proxy += ["--irreversible", ",".join(server.irreversible)]
    if server.transport == "stdio":
        assert server.command is not None
        yield {"CHAOSKIT_MCP_COMMAND": json.dumps([*proxy, "--", *_argv(server.command)])}
        return
    ready = workdir / "mcp-proxy.url"
    proxy += ["--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    proxy += ["--upstream", server.url] if server.url else ["--", *_argv(server.command or [])]
    env = {k: v for k, v in os.environ.items() if k not in ("CHAOSKIT_PLAN", "CHAOSKIT_TRACES_FILE")}
    with _listening(proxy, ready, env) as url:
        yield {"CHAOSKIT_MCP_URL": url}


#: scenario key -> ``(scenario, plan, workdir, traces file) -> context manager yielding the agent's env``
PROXIES: dict[str, Callable[[Any, Plan, Path, Path], contextlib.AbstractContextManager[dict[str, str]]]] = {
    "mcp": _mcp,
}


@contextlib.contextmanager
def tool_proxies(scenario: Scenario, plan: Plan, workdir: Path, traces: Path) -> Iterator[dict[str, str]]:
    """The agent's extra environment for the out-of-process tools ``scenario`` names (none: empty).

    The tools' faults are the proxies' to inject, so the agent's own ``CHAOSKIT_PLAN`` becomes an empty plan:
    a chaoskit-instrumented agent must not fault the same calls a second time. Proxies started here are
    stopped when the block ends; their spans go to ``traces``, the episode's span file.
    """
    keys = [key for key in PROXIES if getattr(scenario, key, None) is not None]
    if not keys:
        yield {}
        return
    empty = workdir / "agent-plan.yaml"
    empty.write_text("faults: []\n", encoding="utf-8")
    env = {"CHAOSKIT_PLAN": str(empty)}
    with contextlib.ExitStack() as stack:
        for key in keys:
            env.update(stack.enter_context(PROXIES[key](getattr(scenario, key), plan, workdir, traces)))
        yield env
