"""What the complete local span file costs a tool call, beside no file and the SDK's (dropping) batch processor.

    python benchmarks/bench_span_file.py [--calls 50000] [--rounds 3]

Each case runs in a fresh process that makes ``--calls`` traced ``@chaos`` calls at full speed inside one episode,
under a plan whose fault never fires, and then flushes:

- ``none``: no span file (the baseline);
- ``sdk-batch``: the SDK's ``BatchSpanProcessor`` around ``telemetry.JsonLinesSpanExporter`` (what
  ``write_jsonl`` was before: a bounded queue that drops the spans it has no room for);
- ``write_jsonl``: ``telemetry.write_jsonl`` (``SpanFileWriter``: every span, back-pressure when the writer lags).

For each: µs per call (best and median of ``--rounds``, rounds interleaved so machine noise hits every case
alike), the ratio to ``none``, the time of the final flush, and how many of the episode's spans the file holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import chaoskit
from chaoskit import Plan, chaos, telemetry
from opentelemetry.sdk.trace.export import BatchSpanProcessor

@chaos
def tool(order_id, amount=1.0):
    return {order_id: amount}

case, calls, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if case == "sdk-batch":
    telemetry.add_processor(BatchSpanProcessor(telemetry.JsonLinesSpanExporter(path), schedule_delay_millis=500))
elif case == "write_jsonl":
    telemetry.write_jsonl(path)
plan = Plan(seed=1, faults=[{"type": "error", "tool": "tool", "on_call": 10**9}])
t0 = time.perf_counter()
with chaoskit.episode("bench", plan=plan):
    for i in range(calls):
        tool("R-1")
t1 = time.perf_counter()
telemetry.flush()
t2 = time.perf_counter()
spans = 0
if case != "none":
    with open(path, "rb") as fh:
        for line in fh:
            doc = json.loads(line)
            spans += sum(len(ss["spans"]) for rs in doc["resourceSpans"] for ss in rs["scopeSpans"])
print(json.dumps({"us_per_call": (t1 - t0) / calls * 1e6, "flush_s": t2 - t1, "spans": spans}))
"""

CASES = ("none", "sdk-batch", "write_jsonl")


def run(case: str, calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
        env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{ROOT / 'integrations'}"
        out = subprocess.run(
            [sys.executable, "-c", CHILD, case, str(calls), str(Path(tmp) / "spans.jsonl")],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=600,
        )
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {c: [] for c in CASES}
    for _ in range(args.rounds):
        for case in CASES:
            results[case].append(run(case, args.calls))
    base = statistics.median(r["us_per_call"] for r in results["none"])
    print(f"{args.calls} calls in one episode ({args.calls + 1} spans), {args.rounds} rounds, interleaved")
    print(f"{'case':<12} {'best µs':>8} {'median µs':>10} {'x none':>7} {'flush s':>8} {'spans in file':>14}")
    for case in CASES:
        us = [r["us_per_call"] for r in results[case]]
        spans = min(int(r["spans"]) for r in results[case])
        flush = statistics.median(r["flush_s"] for r in results[case])
        print(
            f"{case:<12} {min(us):>8.2f} {statistics.median(us):>10.2f} {statistics.median(us) / base:>7.2f} "
            f"{flush:>8.2f} {spans if case != 'none' else '-':>14}"
        )


if __name__ == "__main__":
    main()
