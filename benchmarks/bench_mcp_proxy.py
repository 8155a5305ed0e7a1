"""Latency the MCP proxy adds per tools/call, against a direct connection to the same server, in one run.

    python benchmarks/bench_mcp_proxy.py [--calls 400] [--rounds 5] [--server both|raw|sdk] [--baseline REF]

Each case is a server process spoken to over stdio with newline-delimited JSON-RPC, by a client that sends one
``tools/call`` and waits for its answer (no SDK on the client side: what is timed is the transport and the
proxy). The cases: the server directly; through ``chaoskit mcp-proxy`` with no span file; with
``--traces`` (each span written as its call ends, before its answer leaves); with tracing off
(``CHAOSKIT_TRACE=0``); with ``--baseline REF``, also ``--traces`` with the proxy of git commit REF (its
``chaoskit`` and ``integrations`` trees, taken with ``git archive``), to measure what a change costs per call.
Rounds interleave the cases so that machine noise hits all alike. The table gives each case's median and p99
and, for the proxy cases, the added median and p99 and the ratio to direct; ``cpu ms`` is the CPU time (user
+ system, from /proc on Linux) the process the client speaks to spends per call: the server's for ``direct``,
the proxy's own (not its server's) otherwise; it holds still on a busy machine, where latencies do not. By
default both servers are
measured, one table each: ``raw``, a tiny hand-written MCP server answering in microseconds, so the proxy's
own cost shows; ``sdk``, the example server built on the official SDK (examples/mcp/server.py), a realistic
upstream. Target: < 1 ms added median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RAW_SERVER = r"""
import json, sys
INFO = {"name": "raw", "version": "1"}
TOOL = {"name": "lookup_order", "description": "Look up an order.", "inputSchema": {"type": "object"}}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": INFO}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        args = msg["params"].get("arguments") or {}
        text = json.dumps({"order_id": args.get("order_id"), "total": 42.5})
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""

INIT = {
    "jsonrpc": "2.0",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


class Session:
    """One server process (direct or behind the proxy), initialized."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0, cwd=cwd)
        self.next_id = 0
        self.call({**INIT})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.call({"jsonrpc": "2.0", "method": "tools/list"})

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    def call(self, message: dict[str, object]) -> dict[str, object]:
        assert self.proc.stdout is not None
        self.next_id += 1
        self.send({**message, "id": self.next_id})
        return dict(json.loads(self.proc.stdout.readline()))

    def tool_call(self) -> float:
        request: dict[str, object] = {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "lookup_order", "arguments": {"order_id": "A-1001"}},
        }
        start = time.perf_counter()
        answer = self.call(request)
        took = time.perf_counter() - start
        assert "result" in answer, answer
        return took

    def cpu(self) -> float:
        """The process's CPU seconds so far (user + system); 0 where /proc is missing."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> float:
        """Close stdin; the seconds until the process exited."""
        assert self.proc.stdin is not None
        start = time.perf_counter()
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return time.perf_counter() - start


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def baseline_tree(ref: str, tmp: Path) -> Path:
    """The ``chaoskit`` and ``integrations`` trees of git commit ``ref``, unpacked under ``tmp``."""
    tree = tmp / f"baseline-{ref}"
    if not tree.exists():
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "chaoskit", "integrations"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def run(
    server_kind: str, calls: int, rounds: int, tmp: Path, baseline: str | None = None, only: list[str] | None = None
) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Per case, the per-call latencies and the exit times, rounds interleaved, against one kind of server."""
    if server_kind == "raw":
        (tmp / "server.py").write_text(RAW_SERVER, encoding="utf-8")
        server = [sys.executable, str(tmp / "server.py")]
    else:
        server = [sys.executable, str(ROOT / "examples/mcp/server.py")]
    plan = tmp / "plan.yaml"
    # a plan with a fault that targets the tool but never fires: the decision runs on every call
    plan.write_text("faults:\n  - {type: error, tool: lookup_order, on_call: [1000000]}\n", encoding="utf-8")
    proxy = [sys.executable, "-m", "chaoskit_mcp", "--plan", str(plan)]
    base = dict(os.environ)
    cases = {
        "direct": (server, base),
        "proxy": ([*proxy, "--", *server], base),
        "proxy --traces": ([*proxy, "--traces", str(tmp / f"spans-{server_kind}.jsonl"), "--", *server], base),
        "proxy, tracing off": ([*proxy, "--", *server], {**base, "CHAOSKIT_TRACE": "0"}),
    }
    if baseline:
        # the same command, importing REF's packages first (the run's working directory holds no package)
        tree = baseline_tree(baseline, tmp)
        old = {**base, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "integrations")])}
        traces = str(tmp / f"spans-{server_kind}-baseline.jsonl")
        cases[f"proxy @{baseline[:10]}"] = ([*proxy, "--", *server], old)
        cases[f"--traces @{baseline[:10]}"] = ([*proxy, "--traces", traces, "--", *server], old)
    if only:
        cases = {name: case for name, case in cases.items() if name == "direct" or name in only}
    out: dict[str, tuple[list[float], list[float], list[float]]] = {name: ([], [], []) for name in cases}
    for _ in range(rounds):
        for name, (argv, env) in cases.items():
            session = Session(argv, env, tmp)
            for _ in range(20):  # warm up
                session.tool_call()
            cpu = session.cpu()
            out[name][0].extend(session.tool_call() for _ in range(calls))
            out[name][2].append(session.cpu() - cpu)
            out[name][1].append(session.close())
    return out


def report(server_kind: str, results: dict[str, tuple[list[float], list[float], list[float]]]) -> None:
    """One table: per case, median and p99, and for the proxy cases what they add to direct."""
    direct = results["direct"][0]
    direct_med, direct_p99 = statistics.median(direct), pct(direct, 0.99)
    what = "a raw JSON-RPC server (the proxy's own cost)" if server_kind == "raw" else "an MCP SDK server"
    print(f"\nserver: {server_kind}, {what}; {len(direct)} calls per case")
    head = (
        f"{'case':<24} {'median ms':>10} {'p99 ms':>9} {'added med':>10} {'added p99':>10} {'ratio':>6} {'exit s':>7}"
        f" {'cpu ms':>7}"
    )
    print(head)
    print("-" * len(head))
    for name, (values, exits, cpus) in results.items():
        med, p99 = statistics.median(values), pct(values, 0.99)
        added = "" if name == "direct" else f"{(med - direct_med) * 1000:>10.3f} {(p99 - direct_p99) * 1000:>10.3f}"
        ratio = "" if name == "direct" else f"{med / direct_med:>6.2f}"
        cpu = sum(cpus) / len(values) * 1000
        line = f"{name:<24} {med * 1000:>10.3f} {p99 * 1000:>9.3f} {added:>21} {ratio:>6} {max(exits):>7.2f}"
        print(f"{line} {cpu:>7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="tools/call per case per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--server", choices=("both", "raw", "sdk"), default="both")
    parser.add_argument("--only", nargs="*", help="time only these cases (names as printed), and direct")
    parser.add_argument("--baseline", metavar="REF", help="also time --traces with the proxy of git commit REF")
    opts = parser.parse_args()
    kinds = ("raw", "sdk") if opts.server == "both" else (opts.server,)
    with tempfile.TemporaryDirectory() as tmp:
        results = {kind: run(kind, opts.calls, opts.rounds, Path(tmp), opts.baseline, opts.only) for kind in kinds}
    print(f"MCP proxy, {opts.rounds} rounds x {opts.calls} tools/call per case (ms per call; target < 1 ms added)")
    for kind, result in results.items():
        report(kind, result)
    print("\nexit s: the longest wait from closing the client's stdin to the process's exit (target: < 2 s)")


if __name__ == "__main__":
    main()
