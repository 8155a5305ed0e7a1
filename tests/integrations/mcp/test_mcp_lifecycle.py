"""chaoskit mcp-proxy's life: no orphan process, Streamable HTTP, bad input, and the command without the extra."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from chaoskit import PlanError

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

from chaoskit_mcp import load_plan  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

SERVER = textwrap.dedent(
    '''
    import os, signal, subprocess, sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("lifecycle")
    if os.environ.get("TEST_STUBBORN"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["TEST_PIDFILE"], "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}")

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    if __name__ == "__main__":
        app.run()
    '''
)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_dead(*pids: int) -> list[int]:
    """The pids still alive after a generous wait (a bound for slow machines, not a timing assertion)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def read_pids(path: Path) -> tuple[int, int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            a, b = path.read_text().split()
            return int(a), int(b)
        time.sleep(0.05)
    raise AssertionError("the server did not start")


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    path = tmp_path / "server.py"
    path.write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(path)]


def start_proxy(server: list[str], tmp_path: Path, *extra: str, stubborn: bool = False) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TEST_PIDFILE": str(tmp_path / "pids")}
    if stubborn:
        env["TEST_STUBBORN"] = "1"
    argv = [sys.executable, "-m", "chaoskit_mcp", "--traces", str(tmp_path / "spans.jsonl"), *extra, "--", *server]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    return dict(json.loads(proc.stdout.readline()))


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


@pytest.mark.parametrize("stubborn", [False, True], ids=["server-exits-on-eof", "server-ignores-eof-and-sigterm"])
def test_closing_stdin_stops_the_server_and_its_children(server: list[str], tmp_path: Path, stubborn: bool) -> None:
    proc = start_proxy(server, tmp_path, stubborn=stubborn)
    assert "result" in rpc(proc, INIT)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    assert rpc(proc, call)["result"]["content"][0]["text"] == "x"
    server_pid, grandchild = read_pids(tmp_path / "pids")
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=15) == 0
    assert wait_dead(server_pid, grandchild) == []
    # the span of the call was written before the proxy exited
    assert "execute_tool echo" in (tmp_path / "spans.jsonl").read_text()


def test_sigterm_stops_the_proxy_and_its_server(server: list[str], tmp_path: Path) -> None:
    proc = start_proxy(server, tmp_path)
    assert "result" in rpc(proc, INIT)
    server_pid, grandchild = read_pids(tmp_path / "pids")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    assert wait_dead(server_pid, grandchild) == []


def test_a_killed_proxy_takes_its_server_with_it(server: list[str], tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    proc = start_proxy(server, tmp_path)
    assert "result" in rpc(proc, INIT)
    server_pid, grandchild = read_pids(tmp_path / "pids")
    proc.kill()
    proc.wait()
    try:
        assert wait_dead(server_pid) == []
    finally:
        # the parent-death signal reaches the server only: a process the server started outlives a proxy killed
        # with SIGKILL (nothing is left to stop its group), so the test stops it by its PID
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)


def test_streamable_http_front_and_upstream(server: list[str], tmp_path: Path) -> None:
    import anyio

    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n  - {type: error, tool: echo, on_call: [2]}\n", encoding="utf-8")
    ready = tmp_path / "url"
    front = start_proxy(server, tmp_path, "--listen", "127.0.0.1:0", "--ready-file", str(ready))
    procs = [front]
    try:
        url = wait_url(ready, front)
        # a second proxy in front of the first: --upstream URL, with the plan
        ready2 = tmp_path / "url2"
        argv = [sys.executable, "-m", "chaoskit_mcp", "--listen", "127.0.0.1:0", "--ready-file", str(ready2)]
        argv += ["--plan", str(plan), "--traces", str(tmp_path / "outer.jsonl"), "--upstream", url]
        outer = subprocess.Popen(argv, stderr=subprocess.PIPE)
        procs.append(outer)
        outer_url = wait_url(ready2, outer)

        async def session() -> list[Any]:
            async with streamable_http_client(outer_url) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                assert [t.name for t in (await s.list_tools()).tools] == ["echo"]
                return [await s.call_tool("echo", {"text": str(i)}) for i in range(3)]

        results = anyio.run(session)
        assert [r.is_error for r in results] == [False, True, False]
        assert results[2].content[0].text == "2"
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        statuses = [p.wait(timeout=15) for p in reversed(procs)]
    assert statuses == [0, 0]  # a signal stops the front cleanly, also with a single session
    server_pid, grandchild = read_pids(tmp_path / "pids")
    assert wait_dead(server_pid, grandchild) == []
    assert '"network.transport"' in (tmp_path / "outer.jsonl").read_text()


def test_http_sessions_open_and_close_in_any_order(server: list[str], tmp_path: Path) -> None:
    import anyio

    ready = tmp_path / "url"
    front = start_proxy(server, tmp_path, "--listen", "127.0.0.1:0", "--ready-file", str(ready))
    try:
        url = wait_url(ready, front)

        async def echo(session: ClientSession, text: str) -> str:
            return str((await session.call_tool("echo", {"text": text})).content[0].text)

        async def sessions() -> list[str]:
            said = []
            with anyio.fail_after(60):
                async with streamable_http_client(url) as (rb, wb), ClientSession(rb, wb) as b:
                    await b.initialize()
                    async with streamable_http_client(url) as (ra, wa), ClientSession(ra, wa) as a:
                        await a.initialize()
                        said.append(await echo(a, "a"))
                    # A's DELETE ended A only: B, opened before A and still open, goes on
                    said.append(await echo(b, "b"))
                for text in ("c", "d"):  # and later sessions open as before
                    async with streamable_http_client(url) as (rc, wc), ClientSession(rc, wc) as c:
                        await c.initialize()
                        said.append(await echo(c, text))
            return said

        assert anyio.run(sessions) == ["a", "b", "c", "d"]
        assert front.poll() is None  # no session's end stopped the front
    finally:
        front.send_signal(signal.SIGTERM)
        _, err = front.communicate(timeout=15)
    assert front.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"ClosedResourceError" not in err


def wait_url(ready: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ready.exists() and ready.read_text().strip():
            return ready.read_text().strip()
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the proxy exited"
        time.sleep(0.05)
    raise AssertionError("the proxy did not listen")


def test_listening_beyond_loopback_warns(server: list[str], tmp_path: Path) -> None:
    ready = tmp_path / "url"
    proc = start_proxy(server, tmp_path, "--listen", "0.0.0.0:0", "--ready-file", str(ready))
    try:
        wait_url(ready, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert b"WARNING: listening on 0.0.0.0" in err


def run_cli(*args: str, block_mcp: bool = False) -> subprocess.CompletedProcess[str]:
    prelude = "import sys; sys.modules['mcp'] = None; " if block_mcp else ""
    code = prelude + "from chaoskit.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", "import sys; " + code, *args], capture_output=True, text=True)


def test_without_the_extra_the_command_says_what_to_install() -> None:
    done = run_cli("mcp-proxy", "--", "python", "server.py", block_mcp=True)
    assert done.returncode == 2
    assert "pip install 'chaoskit[mcp]'" in done.stderr


def test_the_command_is_registered_through_an_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="chaoskit.commands")}
    assert names.get("mcp-proxy") == "chaoskit_mcp:add_parser"
    done = run_cli("mcp-proxy", "--help")
    assert done.returncode == 0 and "--upstream" in done.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "either as a command after -- (stdio) or as --upstream URL"),
        (("--upstream", "http://x/mcp"), "--upstream URL needs --listen"),
        (("--listen", "nonsense", "--", "srv"), "expected HOST:PORT"),
    ],
)
def test_bad_arguments_are_named(args: tuple[str, ...], needle: str) -> None:
    done = run_cli("mcp-proxy", *args)
    assert done.returncode == 2 and needle in done.stderr


def test_protocol_faults_keep_plan_indices_and_bad_ones_name_the_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "seed: 4\nfaults:\n  - {type: tool_disappears, tool: a, on_call: [2]}\n  - {type: error, tool: a, on_call: [1]}\n"
    )
    core, _, protocol = load_plan(plan)
    assert [f.index for f in protocol] == [0]
    assert core.decide("a", 1, {}, {}) is not None and core.decide("a", 1, {}, {})[0] == 1
    assert core.decide("a", 2, {}, {}) is None  # the placeholder at index 0 never fires
    plan.write_text("faults:\n  - {type: list_changed, drop: search}\n")
    with pytest.raises(PlanError, match=r"faults\[0\]\.drop"):
        load_plan(plan)
    plan.write_text("faults:\n  - {type: malformed_result, shape: weird}\n")
    with pytest.raises(PlanError, match="content_not_a_list"):
        load_plan(plan)
    plan.write_text("faults:\n  - {type: tool_disappears}\n")
    with pytest.raises(PlanError, match="name the tool"):
        load_plan(plan)
