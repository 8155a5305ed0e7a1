"""What chaoskit's local span sinks cost per span, in CPU time: each face of the span writer, and the capture.

    python benchmarks/bench_span_sinks.py [--episodes 100] [--repeat 7]

The spans are those of real chaoskit episodes (an irreversible tool failing once with HTTP 500 then
succeeding, a read-only tool called three times; 6 spans an episode), fed to:

- ``file writer``: ``telemetry.SpanFileWriter(at_once=True)``, a span at a time (encode, write, flush);
- ``exporter``: ``telemetry.JsonLinesSpanExporter``, batches of 512 (what the SDK's batch processor hands it);
- ``--traces``: the runner's ``TraceSink``, a line per episode;
- ``capture``: ``SpanCapture.processor.on_end`` (the in-memory capture of tests and the runner).

Reported: µs of CPU time per span, best of ``--repeat``. Then ``write_jsonl call``: a ``@chaos`` call under a
plan that does not fire, with ``telemetry.write_jsonl`` attached, µs of CPU time per call (the call, its span
and the writer thread's share; best of ``--repeat`` runs of 5,000 calls, each ended by a flush). To compare two
checkouts, run this file of each with ``PYTHONPATH`` set to that checkout, from a folder outside both, alternating.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

# the same spans as the encoder benchmark (this folder is on sys.path when a benchmark runs as a script)
from bench_otlp_encode import refund_spans

import chaoskit
from chaoskit import telemetry
from chaoskit.runner._spans import TraceSink


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    spans = refund_spans(opts.episodes)
    folder = tempfile.mkdtemp(prefix="chaoskit-bench-")

    def writer() -> None:
        w = telemetry.SpanFileWriter(os.path.join(folder, "writer.jsonl"), at_once=True)
        for span in spans:
            w.on_end(span)
        w.shutdown()

    def exporter() -> None:
        e = telemetry.JsonLinesSpanExporter(os.path.join(folder, "exporter.jsonl"))
        for i in range(0, len(spans), 512):
            e.export(spans[i : i + 512])
        e.shutdown()

    def traces() -> None:
        sink = TraceSink(os.path.join(folder, "traces.jsonl"))
        for i in range(0, len(spans), 6):
            sink.write_spans(spans[i : i + 6])
        sink.close()

    def capture() -> None:
        cap = telemetry.SpanCapture()
        for span in spans:
            cap.processor.on_end(span)

    cases: dict[str, Callable[[], None]] = {
        "file writer": writer,
        "exporter": exporter,
        "--traces": traces,
        "capture": capture,
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(opts.repeat):  # interleaved, so machine noise hits every case alike
        for name, fn in cases.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    print(f"{len(spans)} spans of {opts.episodes} episodes; CPU µs per span, best of {opts.repeat}")
    for name, seconds in best.items():
        print(f"{name:<12} {seconds / len(spans) * 1e6:>8.2f}")
    print(f"write_jsonl call {_file_calls(folder, opts.repeat):>5.2f}")


def _file_calls(folder: str, repeat: int, calls: int = 5000) -> float:
    @chaoskit.chaos
    def tool(order_id: str) -> str:
        return order_id

    writer = telemetry.write_jsonl(os.path.join(folder, "calls.jsonl"))
    plan = chaoskit.Plan(seed=1, faults=[{"type": "error", "tool": "tool", "on_call": 10**9}])
    best = float("inf")
    with chaoskit.episode("bench", plan=plan):
        for _ in range(repeat):
            t0 = time.process_time()
            for _ in range(calls):
                tool("R-1")
            telemetry.flush()
            best = min(best, time.process_time() - t0)
    telemetry.remove_processor(writer)
    return best / calls * 1e6


if __name__ == "__main__":
    main()
