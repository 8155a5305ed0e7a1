"""What exporting over OTLP costs an agent: the latency added per tool call, and export throughput.

    python benchmarks/bench_export.py [--calls 2000] [--rounds 3] [--spans 20000] [--chaoskit DIR]

Each case runs in a fresh process (chaoskit reads ``OTEL_EXPORTER_OTLP_*`` once per process) that makes
``--calls`` traced ``@chaos`` tool calls inside one episode, under a plan whose fault never fires (the hot
path), with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at:

- nothing (no export: the baseline);
- a closed port on 127.0.0.1 (a bound socket that does not listen: every connection is refused);
- a server that accepts connections and never answers;
- a server that answers every export with HTTP 500;
- a local OTLP/HTTP sink that accepts every span (a stub receiver in this process; no Phoenix needed).

For each: µs per call (the best and the median of ``--rounds`` runs, rounds interleaved so machine noise hits
every case alike), µs added over no export, and how long the process took to exit after its last call (the shutdown
flush, bounded by ``CHAOSKIT_EXPORT_TIMEOUT``, 5 s by default). Then export throughput: ``--spans`` calls
exported to the sink with the batch processor: spans delivered per second from the first call until
``telemetry.flush()`` returned, the drain alone (from the last call to the end of the flush), and how many
spans a full queue dropped (the calls come faster than one export thread encodes and sends).
``--chaoskit DIR`` puts DIR first on ``PYTHONPATH`` (to measure another checkout).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHILD = r"""
import json, sys, time
import chaoskit
from chaoskit import Plan, chaos, telemetry

@chaos
def tool(order_id, amount=1.0):
    return {order_id: amount}

calls = int(sys.argv[1])
plan = Plan(seed=1, faults=[{"type": "error", "tool": "tool", "on_call": 10**9}])
with chaoskit.episode("warm-up", plan=plan):
    for i in range(200):
        tool("R-1")
t0 = time.perf_counter()
with chaoskit.episode("bench", plan=plan):
    for i in range(calls):
        tool("R-1")
t1 = time.perf_counter()
flushed = None
if len(sys.argv) > 2:
    telemetry.flush()
    flushed = time.perf_counter()
print(json.dumps({"us": (t1 - t0) / calls * 1e6, "calls_s": t1 - t0,
                  "flush_s": None if flushed is None else flushed - t1}), flush=True)
"""


class Sink:
    """A stub OTLP/HTTP receiver on 127.0.0.1 that accepts every export and counts the spans."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.spans = 0
        self.lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if sink.status == 200:
                    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

                    if self.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    req = ExportTraceServiceRequest()
                    req.ParseFromString(body)
                    n = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                    with sink.lock:
                        sink.spans += n
                self.send_response(sink.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def closed_port() -> Iterator[str]:
    """A port bound on 127.0.0.1 and not listening: connecting to it is refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@contextmanager
def hanging_server() -> Iterator[str]:
    """A server that accepts connections and never answers (nor reads)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            held.append(conn)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        stop.set()
        t.join(1)
        for c in held:
            c.close()
        s.close()


@contextmanager
def http_server(status: int) -> Iterator[Sink]:
    sink = Sink(status)
    try:
        yield sink
    finally:
        sink.close()


def run_child(endpoint: str | None, calls: int, pythonpath: str | None, flush: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-c", CHILD, str(calls)] + (["flush"] if flush else [])
    # in the other checkout's directory: ``python -c`` puts the working directory first on sys.path
    proc = subprocess.Popen(argv, env=env, cwd=pythonpath, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    done = time.perf_counter()
    _, err = proc.communicate(timeout=120)
    exit_s = time.perf_counter() - done
    if proc.returncode != 0 or not line:
        raise SystemExit(f"the benchmark process failed (exit {proc.returncode}):\n{err[-2000:]}")
    out: dict[str, Any] = json.loads(line)
    out["exit_s"] = exit_s
    out["stderr_lines"] = len([ln for ln in err.splitlines() if ln.strip()])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--chaoskit", default=None, help="a directory to put first on PYTHONPATH")
    args = ap.parse_args()
    path = os.path.abspath(args.chaoskit) if args.chaoskit else None

    results: dict[str, list[dict[str, Any]]] = {}
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("no export", lambda: nullcase()),
        ("closed port", closed_port),
        ("hanging server", hanging_server),
        ("HTTP 500 server", lambda: url_of(http_server(500))),
        ("OTLP sink (200)", lambda: url_of(http_server(200))),
    ]
    for _ in range(args.rounds):
        for name, make in cases:
            with make() as endpoint:
                results.setdefault(name, []).append(run_child(endpoint, args.calls, path))

    base = min(r["us"] for r in results["no export"])
    print(f"per-call latency, {args.calls} traced calls, best of {args.rounds} (python {sys.version.split()[0]})")
    median_base = statistics.median(r["us"] for r in results["no export"])
    print(
        f"{'backend':<18}{'µs/call':>10}{'added':>10}{'median':>10}{'added':>10}"
        f"{'exit after last call':>24}{'stderr lines':>14}"
    )
    for name, _make in cases:
        best = min(r["us"] for r in results[name])
        median = statistics.median(r["us"] for r in results[name])
        worst_exit = max(r["exit_s"] for r in results[name])
        print(
            f"{name:<18}{best:>10.2f}{best - base:>+10.2f}{median:>10.2f}{median - median_base:>+10.2f}"
            f"{worst_exit:>22.2f} s{max(r['stderr_lines'] for r in results[name]):>14}"
        )

    with http_server(200) as sink:
        t0 = time.perf_counter()
        out = run_child(sink.url, args.spans, path, flush=True)
        wall = time.perf_counter() - t0
        received = sink.spans
    expected = args.spans + 200 + 2  # the calls, the warm-up calls, two episode spans
    total = out["calls_s"] + out["flush_s"]
    print(
        f"\nexport throughput to a local OTLP/HTTP sink, {args.spans} calls as fast as they go: "
        f"{received / total:,.0f} spans/s delivered from the first call to the end of the flush "
        f"({out['calls_s']:.2f} s of calls at {args.spans / out['calls_s']:,.0f} calls/s + "
        f"{out['flush_s']:.2f} s draining the queue); {received}/{expected} spans delivered "
        f"({expected - received} dropped by the full queue: OTEL_BSP_MAX_QUEUE_SIZE); process wall time {wall:.2f} s"
    )


@contextmanager
def nullcase() -> Iterator[None]:
    yield None


@contextmanager
def url_of(cm: Any) -> Iterator[str]:
    with cm as sink:
        yield sink.url


if __name__ == "__main__":
    main()
