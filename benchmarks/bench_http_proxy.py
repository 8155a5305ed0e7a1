"""Added latency per call of the HTTP chaos proxy against a direct connection, median and p99, in one run.

    python benchmarks/bench_http_proxy.py [--n 2000] [--rounds 5] [--body 200] [--client raw|httpx] [--model]

The upstream (a minimal ASGI app under uvicorn) and each proxy run in their own processes, so the client,
the proxy and the upstream do not share a GIL. The client keeps one connection alive per case: by default a
raw socket that sends a fixed request and reads the answer by its ``Content-Length`` (about 0.02 ms a call,
so that on a 2-core machine the client takes little CPU from the processes measured); ``--client httpx`` is
an ``httpx.Client`` (about 0.3 ms a call more, on both sides of the difference). Cases, run interleaved in
rounds (direct, proxy, proxy + traces, direct, ...) so machine noise hits all alike:

- ``direct``: client -> upstream;
- ``proxy``: client -> proxy -> upstream, the plan has a fault on another route (every call is counted and
  decided, none fires), tracing on (spans made, no file);
- ``proxy+traces``: the same with ``--traces`` (each span written to the file as its call ends).

``--model``: each call is a streamed OpenAI chat completion instead (``POST /v1/chat/completions``, the
upstream sends 20 server-sent events of about ``--body`` bytes in all, then ``data: [DONE]``), read whole by an
``httpx`` client; through the proxy it is a model call, counted and decided (the plan's model fault targets
another model), passed through byte for byte.

Per case: the median and p99 of the per-call latency over all rounds, and the added latency against
``direct`` (median and p99 differences, and the ratio). The target (issue 15) is < 1 ms median added.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

_PLAN = (
    "seed: 1\nfaults:\n  - type: http\n    tool: POST /never\n    status: 503\n"
    "  - type: overloaded\n    model: never-*\n"
)
_CHAT = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]})


def _sse_chunks(body_size: int) -> list[bytes]:
    """A streamed chat completion as OpenAI sends it: 20 content chunks, the finish chunk, ``[DONE]``."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    piece = "x" * max(1, body_size // 20)
    out = [{**head, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for _ in range(20)]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [f"data: {json.dumps(c)}\n\n".encode() for c in out] + [b"data: [DONE]\n\n"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _upstream_main(port: int, body_size: int) -> None:
    import uvicorn

    body = json.dumps({"ok": True, "data": "x" * max(0, body_size - 24)}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    chunks = _sse_chunks(body_size)
    sse = [(b"content-type", b"text/event-stream")]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/v1/chat/completions":
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": sse})
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", access_log=False)


def _proxy_main(port: int, upstream: str, plan: str, traces: str | None) -> None:
    import logging

    from chaoskit_http import ProxyServer

    logging.getLogger("chaoskit.http").setLevel(logging.WARNING)
    ProxyServer(plan, upstream=upstream, listen=f"127.0.0.1:{port}", traces=traces).run()


def _start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"could not start {args}")


class _RawClient:
    """A keep-alive HTTP/1.1 client on a plain socket: one fixed GET, the answer read by its Content-Length."""

    def __init__(self, base_url: str) -> None:
        host, port = base_url.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))
        self.sock = self._connect()
        self.request = f"GET /orders/42 HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: */*\r\n\r\n".encode()

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.address)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def get(self, path: str) -> _RawClient:
        """Send the request (``path`` is always /orders/42) and read the whole answer; raises unless 200.
        A connection the server closed while it was idle (uvicorn's 5 s keep-alive, between rounds) is
        opened again, as httpx does."""
        try:
            self.sock.sendall(self.request)
            buf = self._recv()
        except OSError:
            self.sock.close()
            self.sock = self._connect()
            self.sock.sendall(self.request)
            buf = self._recv()
        while b"\r\n\r\n" not in buf:
            buf += self._recv()
        head, _, body = buf.partition(b"\r\n\r\n")
        fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:])
        length = int({k.strip().lower(): v for k, v in fields.items()}[b"content-length"])
        while len(body) < length:
            body += self._recv()
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
        return self

    def _recv(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        return data

    def raise_for_status(self) -> None:
        """Checked in :meth:`get` already."""


class _ModelClient:
    """An ``httpx.Client`` that posts one streamed chat completion per call and reads the stream to its end."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url)
        self.expected = b"".join(_sse_chunks(_ModelClient.body))

    body = 200

    def get(self, path: str) -> _ModelClient:
        headers = {"content-type": "application/json"}
        with self.client.stream("POST", "/v1/chat/completions", content=_CHAT, headers=headers) as resp:
            data = b"".join(resp.iter_raw())
        if resp.status_code != 200 or data != self.expected:
            raise RuntimeError(f"HTTP {resp.status_code}: the stream did not come through as sent")
        return self

    def raise_for_status(self) -> None:
        """Checked in :meth:`get` already."""


def _time(client: httpx.Client | _RawClient | _ModelClient, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        client.get("/orders/42").raise_for_status()
        out.append(time.perf_counter() - t)
    return out


def _cpu(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds (user + system) the process has used so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(0.99 * len(xs)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="calls per case per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--body", type=int, default=200, help="response body size in bytes")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw", help="the benchmark's own client")
    parser.add_argument("--model", action="store_true", help="streamed chat completions instead of GETs")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-proxy", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        _upstream_main(args.serve_upstream, args.body)
        return
    if args.serve_proxy:
        port, upstream, plan, traces = args.serve_proxy
        _proxy_main(int(port), upstream, plan, None if traces == "-" else traces)
        return

    tmp = Path(tempfile.mkdtemp(prefix="chaoskit-bench-http-"))
    plan = tmp / "plan.yaml"
    plan.write_text(_PLAN)
    traces = tmp / "spans.jsonl"
    up_port, p_port, t_port = _free_port(), _free_port(), _free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    procs = [_start(["--serve-upstream", str(up_port), "--body", str(args.body)], up_port)]
    try:
        procs.append(_start(["--serve-proxy", str(p_port), upstream, str(plan), "-"], p_port))
        procs.append(_start(["--serve-proxy", str(t_port), upstream, str(plan), str(traces)], t_port))
        _ModelClient.body = args.body
        make: Any = _ModelClient if args.model else _RawClient if args.client == "raw" else httpx.Client
        cases: dict[str, httpx.Client | _RawClient | _ModelClient] = {
            "direct": make(base_url=upstream),
            "proxy": make(base_url=f"http://127.0.0.1:{p_port}"),
            "proxy+traces": make(base_url=f"http://127.0.0.1:{t_port}"),
        }
        for client in cases.values():
            _time(client, 200)  # warm up: connections, imports, caches
        samples: dict[str, list[float]] = {name: [] for name in cases}
        owner = {"direct": procs[0], "proxy": procs[1], "proxy+traces": procs[2]}
        cpu = dict.fromkeys(cases, 0.0)
        for _ in range(args.rounds):
            for name, client in cases.items():
                before = _cpu(owner[name])
                samples[name] += _time(client, args.n)
                cpu[name] += _cpu(owner[name]) - before
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    base_med = statistics.median(samples["direct"])
    base_p99 = _p99(samples["direct"])
    what = "streamed chat completions (httpx client)" if args.model else f"{args.client} client"
    print(
        f"HTTP proxy, {args.rounds} x {args.n} calls per case, {args.body}-byte responses, {what} "
        f"(ms per call; target < 1 ms added median), load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'case':<14}{'median':>9}{'p99':>9}{'added med':>11}{'added p99':>11}{'ratio':>8}{'cpu/call':>10}")
    for name, xs in samples.items():
        med, p99 = statistics.median(xs), _p99(xs)
        print(
            f"{name:<14}{med * 1e3:>9.3f}{p99 * 1e3:>9.3f}{(med - base_med) * 1e3:>11.3f}"
            f"{(p99 - base_p99) * 1e3:>11.3f}{med / base_med:>8.2f}{cpu[name] / len(xs) * 1e3:>10.3f}"
        )
    print("cpu/call: CPU time of the serving process per call (the upstream's for direct, the proxy's otherwise)")
    lines = traces.read_text().splitlines() if traces.exists() else []
    # a line holds the spans that ended while the writer was busy: count the spans, not the lines
    spans = sum(
        len(scope["spans"])
        for line in lines
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
    )
    if args.model:
        # the standalone proxy runs outside any episode: a model call's chat span is an episode's step
        print(f"spans written with --traces: {spans} (model calls outside an episode are counted, not recorded)")
    else:
        print(f"spans written with --traces: {spans} (every call: {len(samples['proxy+traces']) + 200})")


if __name__ == "__main__":
    main()
