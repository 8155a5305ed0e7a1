"""chaoskit mcp-proxy's relay over stdio: cancellation order, lines of any length, the span before the answer, stops."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

#: a hand-written server: it logs every message it receives, in order; ``block`` answers only once its call is
#: cancelled (a server that ignores cancels and answers late); ``term`` stops the server with SIGTERM
SERVER = textwrap.dedent(
    r"""
    import json, os, signal, sys
    LOG = open(os.environ["TEST_LOG"], "a", buffering=1)
    with open(os.environ["TEST_PIDFILE"], "w") as fh:
        fh.write(str(os.getpid()))
    TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "block", "term")]
    held = {}
    for line in sys.stdin:
        msg = json.loads(line)
        LOG.write(json.dumps({"method": msg.get("method"), "id": msg.get("id"), "params": msg.get("params")}) + "\n")
        method = msg.get("method")
        if method == "notifications/cancelled":
            rid = msg["params"]["requestId"]
            if rid in held:
                result = {"content": [{"type": "text", "text": "late"}], "isError": False}
                print(json.dumps({"jsonrpc": "2.0", "id": held.pop(rid), "result": result}), flush=True)
            continue
        if "id" not in msg:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "resources/read":
            held[msg["id"]] = msg["id"]  # answered (late) only when cancelled
            continue
        elif method == "tools/call":
            name = msg["params"]["name"]
            if name == "block":
                held[msg["id"]] = msg["id"]
                continue
            if name == "term":
                os.kill(os.getpid(), signal.SIGTERM)
            text = msg["params"].get("arguments", {}).get("text", "")
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            result = {}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    """
)

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}

#: every wait below is bounded by this (a bound for slow machines, not a timing assertion)
BOUND_S = 60


class Proxy:
    """``chaoskit mcp-proxy`` in front of :data:`SERVER`, spoken to line by line; stopped by PID at the end."""

    def __init__(self, tmp_path: Path, plan: str | None = None) -> None:
        (tmp_path / "server.py").write_text(SERVER, encoding="utf-8")
        self.log = tmp_path / "server-log.jsonl"
        self.traces = tmp_path / "spans.jsonl"
        argv = [sys.executable, "-m", "chaoskit_mcp", "--traces", str(self.traces)]
        if plan is not None:
            (tmp_path / "plan.yaml").write_text(plan, encoding="utf-8")
            argv += ["--plan", str(tmp_path / "plan.yaml")]
        argv += ["--", sys.executable, str(tmp_path / "server.py")]
        self.pidfile = tmp_path / f"server-{len(list(tmp_path.glob('server-*.pid')))}.pid"
        self.pidfile.touch()
        env = {**os.environ, "TEST_LOG": str(self.log), "TEST_PIDFILE": str(self.pidfile)}
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, *messages: dict[str, Any] | bytes) -> None:
        """Write the messages in one write (so that nothing can come between them)."""
        assert self.proc.stdin is not None
        data = b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        line = self.lines.get(timeout=BOUND_S)
        assert line, "the proxy closed its output"
        return dict(json.loads(line))

    def until(self, request_id: Any) -> list[dict[str, Any]]:
        """Every message up to and including the answer to ``request_id``."""
        seen = [self.receive()]
        while seen[-1].get("id") != request_id or "method" in seen[-1]:
            seen.append(self.receive())
        return seen

    def start(self) -> None:
        self.send(INIT)
        assert "result" in self.until(0)[-1]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> tuple[list[dict[str, Any]], int]:
        """Close stdin; what the proxy still wrote, and its exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        status = self.proc.wait(timeout=BOUND_S)
        rest = []
        while (line := self.lines.get(timeout=BOUND_S)) != b"":
            rest.append(json.loads(line))
        return rest, status

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=BOUND_S)

    def server_log(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def spans(self) -> list[dict[str, Any]]:
        out = []
        text = self.traces.read_text(encoding="utf-8") if self.traces.exists() else ""
        for line in text.splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        if span["name"].startswith("tools/call "):
                            continue  # the CLIENT span toward the server, not an attempt (tests/integrations/mcp/test_mcp_client_span.py)
                        attrs = {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}
                        events = [e["name"] for e in span.get("events", [])]
                        messages = [
                            a["value"]["stringValue"]
                            for e in span.get("events", [])
                            for a in e.get("attributes", [])
                            if a["key"] == "exception.message"
                        ]
                        out.append({"name": span["name"], "events": events, "messages": messages, **attrs})
        return out

    def wait_span(self, request_id: str) -> dict[str, Any]:
        """The span of tools/call ``request_id``, once it is in the file (waited for, within the bound)."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            found = [s for s in self.spans() if s.get("jsonrpc.request.id") == request_id]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no span for request {request_id}")


@pytest.fixture
def proxy(tmp_path: Path) -> Any:
    made: list[Proxy] = []

    def make(plan: str | None = None) -> Proxy:
        made.append(Proxy(tmp_path, plan))
        return made[-1]

    yield make
    for p in made:
        p.kill()
    # no process left behind: every server the proxies started is gone (a bound, not a timing assertion)
    pids = [int(text) for p in made if (text := p.pidfile.read_text().strip())]
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    assert [pid for pid in pids if alive(pid)] == []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def cancel(request_id: int) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": "the user gave up"}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}


def test_a_cancel_sent_with_its_request_never_overtakes_it(proxy: Any) -> None:
    p = proxy()
    p.start()
    # the first call makes the proxy list the tools first: the request is held while the cancel is read
    p.send(call(5, "echo", text="x"), cancel(5), PING)
    seen = p.until(99)
    assert [m.get("id") for m in seen] == [99], "a cancelled request got an answer"
    log = [
        (m["method"], m["id"] if m["method"] != "notifications/cancelled" else m["params"]["requestId"])
        for m in p.server_log()
    ]
    if ("tools/call", 5) in log:
        assert ("notifications/cancelled", 5) not in log[: log.index(("tools/call", 5))]
    else:
        assert ("notifications/cancelled", 5) not in log  # withdrawn: the server heard of neither
    span = p.wait_span("5")
    assert span["chaoskit.outcome"] == "cancelled" and span["chaoskit.tool.executed"] is False
    assert span["messages"] == ["the client cancelled the request (the user gave up)"]
    rest, status = p.close()
    assert rest == [] and status == 0


def test_a_late_cancel_ends_the_span_at_once_and_the_late_answer_is_dropped(proxy: Any) -> None:
    p = proxy()
    p.start()
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    p.until(1)
    p.send(call(7, "block"))
    deadline = time.monotonic() + BOUND_S
    while not any(m.get("id") == 7 for m in p.server_log()) and time.monotonic() < deadline:
        time.sleep(0.02)
    # the server has the call; the cancel follows it there, and the server answers anyway ("late")
    p.send(cancel(7), PING)
    seen = p.until(99)
    assert [m.get("id") for m in seen] == [99], "the late answer to a cancelled request reached the client"
    methods = [m["method"] for m in p.server_log()]
    assert methods.index("notifications/cancelled") > methods.index("tools/call")
    # the span is in the file while the session still runs: it ended at the cancel, not with the session
    span = p.wait_span("7")
    assert p.proc.poll() is None
    assert span["chaoskit.outcome"] == "cancelled" and span["chaoskit.tool.executed"] is True
    assert span["error.type"] == "RequestCancelled"
    assert span["messages"] == ["the client cancelled the request (the user gave up)"]
    # the session goes on
    p.send(call(8, "echo", text="after"))
    assert p.until(8)[-1]["result"]["content"][0]["text"] == "after"
    rest, status = p.close()
    assert rest == [] and status == 0


def test_a_cancelled_request_of_another_method_gets_no_late_answer(proxy: Any) -> None:
    p = proxy()
    p.start()
    p.send({"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "test://slow"}})
    deadline = time.monotonic() + BOUND_S
    while not any(m.get("id") == 6 for m in p.server_log()) and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send(cancel(6), PING)
    assert [m.get("id") for m in p.until(99)] == [99], "the late answer to a cancelled request reached the client"
    rest, status = p.close()
    assert rest == [] and status == 0


def test_a_client_that_gives_up_on_a_timeout_gets_no_late_answer(proxy: Any) -> None:
    p = proxy("faults:\n  - {type: timeout, tool: echo, on_call: [1], after_s: 1}\n")
    p.start()
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    p.until(1)
    p.send(call(3, "echo", text="x"), cancel(3), PING)
    assert [m.get("id") for m in p.until(99)] == [99]
    span = p.wait_span("3")
    assert p.proc.poll() is None  # ended at the cancel, before the session
    assert span["chaoskit.outcome"] == "cancelled" and span["chaoskit.fault.type"] == "timeout"
    assert span["chaoskit.tool.executed"] is False and span["chaoskit.fault.injected"] is True
    assert span["messages"] == ["the client cancelled the request (the user gave up)"]
    time.sleep(1.5)  # past the fault's after_s: a late answer would be out by now
    rest, status = p.close()
    assert [m.get("id") for m in rest] == [] and status == 0
    assert "tools/call" not in [m["method"] for m in p.server_log()]


def test_closing_the_session_with_a_call_open_records_it_plainly(proxy: Any) -> None:
    p = proxy()
    p.start()
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    p.until(1)
    p.send(call(4, "block"))
    deadline = time.monotonic() + BOUND_S
    while not any(m.get("id") == 4 for m in p.server_log()) and time.monotonic() < deadline:
        time.sleep(0.02)
    rest, status = p.close()
    assert rest == [] and status == 0
    span = p.wait_span("4")
    assert span["chaoskit.outcome"] == "cancelled"
    assert span["messages"] == ["the client closed the session before the answer"]


BIG = 65 * 1024 * 1024  # over the 64 MiB line limit the proxy used to have


def test_lines_over_64_mib_pass_both_ways_and_the_session_goes_on(proxy: Any) -> None:
    p = proxy()
    p.start()
    p.send(call(2, "echo", text="x" * BIG))
    answer = p.until(2)[-1]
    assert len(answer["result"]["content"][0]["text"]) == BIG
    # a line that is not JSON, as long: a parse error (-32700), and the session goes on
    p.send(b"{" * BIG + b"\n")
    error = p.receive()
    assert error["id"] is None and error["error"]["code"] == -32700
    p.send(call(3, "echo", text="small"))
    assert p.until(3)[-1]["result"]["content"][0]["text"] == "small"
    rest, status = p.close()
    assert rest == [] and status == 0
    assert [s["chaoskit.outcome"] for s in p.spans()] == ["ok", "ok"]


def test_the_span_is_in_the_file_before_the_answer_leaves(proxy: Any) -> None:
    for n in range(5):
        p = proxy()
        p.start()
        p.send(call(1, "echo", text=f"run {n}"))
        assert p.until(1)[-1]["result"]["content"][0]["text"] == f"run {n}"
        # what mcp 1.x's stdio_client does when a session fails: SIGKILL, right on the answer
        p.proc.send_signal(signal.SIGKILL)
        p.proc.wait(timeout=BOUND_S)
        assert [s["jsonrpc.request.id"] for s in p.spans()] == ["1"]
        p.traces.unlink()
        p.log.unlink()


def test_a_server_stopped_with_sigterm_is_described_as_stopped(proxy: Any) -> None:
    p = proxy()
    p.start()
    p.send(call(2, "term"))
    text = p.until(2)[-1]["result"]["content"][0]["text"]
    assert "was stopped (SIGTERM)" in text and "crashed" not in text
    rest, status = p.close()
    assert rest == [] and status == 0


def test_a_client_that_gives_up_on_a_slow_initialize_leaves_a_trace_check_explains(proxy: Any) -> None:
    p = proxy("faults:\n  - {type: slow_initialize, delay_s: 600}\n")
    p.send(INIT)
    deadline = time.monotonic() + BOUND_S
    while not p.spans() and time.monotonic() < deadline:
        time.sleep(0.02)
    p.kill()  # the client's initialize timed out: it kills its server
    [span] = p.spans()
    assert span["name"] == "initialize" and span["chaoskit.fault.type"] == "slow_initialize"
    assert span["chaoskit.fault.injected"] is True
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "check", str(p.traces)], capture_output=True, text=True, timeout=BOUND_S
    )
    assert done.returncode == 2  # cannot grade, never a verdict
    assert "slow_initialize (#0): initialize answered after 600s" in done.stderr
    assert "did the client give up before calling a tool?" in done.stderr
