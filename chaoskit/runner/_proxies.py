"""The proxies a scenario's out-of-process tools need for one episode (``mcp:``, ``http:``), and the agent's env.

:func:`tool_proxies` is the one hook the command-line episode calls around the agent's process: it yields the
environment variables that point the agent at its proxies, and stops any proxy it started once the agent
is done. Each key of a scenario that names out-of-process tools has one entry in :data:`PROXIES`; the proxy
itself is a ``chaoskit`` subcommand from an extra, started as a process, so the runner imports none of it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.plan._locate import _line_for
from chaoskit.plan._model import Plan
from chaoskit.plan._yaml import load_yaml, read_source
from chaoskit.scenarios import operation_ids, read_document
from chaoskit.scenarios._scenario import Scenario
from chaoskit.scenarios._servers import PORT, READY_FILE, HttpUpstream, McpServer, http_route, on_this_python

__all__ = ["PROXIES", "ProxyError", "tool_proxies"]

#: how long a proxy the runner starts may take to listen
_READY_S = 30.0


class ProxyError(ChaoskitError):
    """A proxy for the scenario's tools could not be started."""


def _chaoskit() -> list[str]:
    return [sys.executable, "-m", "chaoskit"]


def _plan_file(plan: Plan, extra_faults: list[dict[str, Any]], path: Path) -> Path:
    data = plan.to_dict()
    data["faults"] = [*data["faults"], *extra_faults]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return (": " + " | ".join(lines[-5:])) if lines else ""


def _from_file(ready: Path) -> Callable[[], str | None]:
    def read() -> str | None:
        text = ready.read_text(encoding="utf-8").strip() if ready.exists() else ""
        return text or None

    return read


def _from_port(port: int) -> Callable[[], str | None]:
    def probe() -> str | None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return f"http://127.0.0.1:{port}"
        except OSError:
            return None

    return probe


@contextlib.contextmanager
def _listening(
    argv: list[str], ready: Callable[[], str | None], env: dict[str, str], what: str, log: Path | None = None
) -> Iterator[str]:
    """Start ``argv`` in its own process group, yield its URL once ``ready()`` gives it, then stop the group.

    ``log`` takes its stdout and stderr (the last lines go into the error when it exits before it listens)."""
    err = log.open("wb") if log is not None else None
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, start_new_session=True)
    except OSError as exc:
        if err is not None:
            err.close()
        raise ProxyError(f"cannot start {what}: {exc}") from None
    try:
        deadline = time.monotonic() + _READY_S
        while (url := ready()) is None:
            if proc.poll() is not None:
                tail = _tail(log) if log is not None else ""
                raise ProxyError(f"{what} exited with status {proc.returncode} before it listened{tail}")
            if time.monotonic() > deadline:
                raise ProxyError(f"{what} did not listen within {_READY_S:g}s")
            time.sleep(0.02)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if err is not None:
            err.close()


def _proxy_env() -> dict[str, str]:
    # the runner's own plan and span file are the agent's: a proxy or an API it starts gets neither
    return {k: v for k, v in os.environ.items() if k not in ("CHAOSKIT_PLAN", "CHAOSKIT_TRACES_FILE")}


def _episode_env() -> dict[str, str]:
    """:func:`_proxy_env` with ``TRACEPARENT`` of the current span (the episode's, where the runner calls
    :func:`tool_proxies`): a proxy serving one episode puts its attempts in the episode's trace, as the one the
    agent starts itself (with the agent's environment) does."""
    env = _proxy_env()
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    if "traceparent" in carrier:
        env["TRACEPARENT"] = carrier["traceparent"]
    else:
        env.pop("TRACEPARENT", None)  # not the runner's own parent: the proxy's spans are no child of it
    return env


@contextlib.contextmanager
def _mcp(server: McpServer, plan: Plan, workdir: Path, traces: Path) -> Iterator[dict[str, str]]:
    plan_path = _plan_file(plan, list(server.faults), workdir / "mcp-plan.yaml")
    proxy = [*_chaoskit(), "mcp-proxy", "--plan", str(plan_path), "--traces", str(traces)]
    if server.irreversible:
        proxy += ["--irreversible", ",".join(server.irreversible)]
    if server.transport == "stdio":
        assert server.command is not None
        yield {"CHAOSKIT_MCP_COMMAND": json.dumps([*proxy, "--", *on_this_python(server.command)])}
        return
    ready = workdir / "mcp-proxy.url"
    proxy += ["--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    proxy += ["--upstream", server.url] if server.url else ["--", *on_this_python(server.command or [])]
    what = "the proxy `chaoskit mcp-proxy`"
    with _listening(proxy, _from_file(ready), _episode_env(), what, workdir / "mcp-proxy.log") as url:
        yield {"CHAOSKIT_MCP_URL": url}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _http_api(api: HttpUpstream, workdir: Path) -> Iterator[str]:
    """The API's base URL: ``api.url``, or the API ``api.command`` starts (stopped, group and all, at the end)."""
    if api.url is not None:
        yield api.url
        return
    assert api.command is not None
    ready = workdir / "http-api.url"
    port = str(_free_port())
    argv = [a.replace(PORT, port).replace(READY_FILE, str(ready)) for a in on_this_python(api.command)]
    probe = _from_file(ready) if any(READY_FILE in a for a in api.command) else _from_port(int(port))
    what = f"the API `{shlex.join(api.command)}`"
    with _listening(argv, probe, _proxy_env(), what, workdir / "http-api.log") as url:
        if not url.startswith(("http://", "https://")):
            raise ProxyError(f"{what} wrote {url[:200]!r} to {{ready_file}}; expected its http:// URL")
        yield url


def _openapi(api: HttpUpstream, path: Path) -> Path | None:
    """The OpenAPI file for the proxy: ``api.openapi`` with ``api.irreversible`` marked (a copy), or as it is."""
    if not api.irreversible:
        return Path(api.openapi) if api.openapi else None
    doc: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": "chaoskit", "version": "0"}, "paths": {}}
    if api.openapi:
        doc = copy.deepcopy(dict(read_document(api.openapi)))
    ops = operation_ids(api.openapi) if api.openapi else {}
    paths = doc.setdefault("paths", {})
    for tool in api.irreversible:
        method, template = http_route(tool) or ops[tool]
        ops_of = paths.setdefault(template, {})
        key = next((m for m in ops_of if str(m).upper() == method), method.lower())
        ops_of.setdefault(key, {})["x-chaoskit-irreversible"] = True
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _check_tools(api: HttpUpstream, plan: Plan) -> None:
    """Every tool the plan names is a route or an operationId of the API, else a PlanError at the fault's line."""
    ops = operation_ids(api.openapi) if api.openapi else {}
    for i, fault in enumerate(plan.faults):
        for name in fault.tool_names():
            if http_route(name) is not None or name in ops:
                continue
            source, line = plan._source, None
            with contextlib.suppress(OSError, ChaoskitError):
                if source is not None and Path(source).is_file():
                    line = _line_for(("faults", i, "tool"), load_yaml(*read_source(source, None))[1])
            known = (
                f"operationIds of {api.openapi}: {', '.join(sorted(ops)) or 'none'}" if api.openapi else "no openapi"
            )
            raise PlanError(
                f"{name!r} is no HTTP route of the http: API: name a route ('POST /refunds', 'GET /orders/{{id}}') "
                f"or an operationId ({known})",
                source=source,
                field=f"faults[{i}].tool",
                line=line,
            )


@contextlib.contextmanager
def _http(api: HttpUpstream, plan: Plan, workdir: Path, traces: Path) -> Iterator[dict[str, str]]:
    """``chaoskit http-proxy`` with the scenario's plan in front of the scenario's API, for one episode."""
    _check_tools(api, plan)
    plan_path = _plan_file(plan, [], workdir / "http-plan.yaml")
    ready = workdir / "http-proxy.url"
    with _http_api(api, workdir) as upstream:
        proxy = [*_chaoskit(), "http-proxy", "--plan", str(plan_path), "--traces", str(traces)]
        proxy += ["--upstream", upstream, "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
        proxy += ["--log-level", "warning"]
        openapi = _openapi(api, workdir / "http-openapi.yaml")
        if openapi is not None:
            proxy += ["--openapi", str(openapi)]
        what = "the proxy `chaoskit http-proxy`"
        with _listening(proxy, _from_file(ready), _episode_env(), what, workdir / "http-proxy.log") as url:
            yield {"CHAOSKIT_HTTP_URL": url}


#: scenario key -> ``(scenario, plan, workdir, traces file) -> context manager yielding the agent's env``
PROXIES: dict[str, Callable[[Any, Plan, Path, Path], contextlib.AbstractContextManager[dict[str, str]]]] = {
    "mcp": _mcp,
    "http": _http,
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
