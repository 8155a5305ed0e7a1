"""How fast ``Trace.from_otlp_json`` + every default check grade an OTLP-JSON Lines file, and that it scales
linearly: 10k and 100k spans by default, 1M with ``--full``.

    python benchmarks/bench_trace.py            # 10k, 100k  (well under a minute)
    python benchmarks/bench_trace.py --full     # also 1M (about 1 GB of JSON in a temporary folder)
    python benchmarks/bench_trace.py --sizes 10000,50000

The file is made from the spans of one real episode (chaoskit tools under a fault plan, plus a foreign LLM
span), copied with fresh trace, span and episode ids and shifted times, 512 spans per line as the batch
exporter writes them. Reported: spans/s for reading and for reading + checks, µs per span (flat when
linear), and peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import chaoskit
from chaoskit import Plan, Trace, chaos, checks, telemetry

# the tests' tools: the benchmark grades the same kind of episode the reader tests do
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import issue_refund, read_page, search

PLAN = Plan(
    seed=3,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 0.001},
        {"type": "garbage", "tool": "search", "on_call": 2, "garbage": {"price": 4242}},
        {"type": "prompt_injection", "tool": "read_page", "on_call": 1},
        {"type": "error", "tool": "lookup", "calls": "1-2"},
    ],
)


@chaos
def lookup(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "status": "pending"}


def _template() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """One real episode's spans as OTLP-JSON dicts, plus its resource and scope."""
    tracer = telemetry.get_tracer()
    with telemetry.capture() as cap:
        with chaoskit.episode("bench", plan=PLAN) as ep:
            for call in (
                lambda: issue_refund("4832"),
                lambda: issue_refund("4832"),
                lambda: search("a"),
                lambda: search("a"),
                lambda: search("a"),
                lambda: lookup("1"),
                lambda: lookup("1"),
                lambda: lookup("1"),
                lambda: read_page("u"),
            ):
                try:
                    call()
                except Exception:
                    pass
            with tracer.start_as_current_span("chat model"):
                pass
            ep.finish("Refund issued.")
        doc = telemetry.to_otlp_json(cap.spans)
    rs = doc["resourceSpans"][0]
    ss = rs["scopeSpans"][0]
    return ss["spans"], rs["resource"], ss["scope"]


def write_file(path: Path, n_spans: int, per_line: int = 512) -> int:
    """Write about n_spans spans (whole episodes); returns the exact number written."""
    spans, resource_, scope = _template()
    text = json.dumps(spans, separators=(",", ":"))
    # placeholders for the ids and times that change per copy
    trace_id = spans[0]["traceId"]
    episode_id = next(a["value"]["stringValue"] for a in spans[-1]["attributes"] if a["key"] == "chaoskit.episode.id")
    base = min(int(s["startTimeUnixNano"]) for s in spans)
    # NUL never appears raw in JSON text, so it can mark the placeholders
    text = text.replace(trace_id, "\0T\0").replace(episode_id, "\0E\0")
    for i, s in enumerate(spans):
        text = text.replace(s["spanId"], f"\0S{i:02d}\0")
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            text = text.replace(f'"{s[key]}"', f'"\0N{int(s[key]) - base}\0"')
    parts = text.split("\0")
    written = 0
    lines: list[str] = []
    per_episode = len(spans)
    episodes_per_line = max(1, per_line // per_episode)
    t0 = base
    with path.open("w", encoding="utf-8") as fh:
        while written < n_spans:
            tid = uuid.uuid4().hex
            eid = uuid.uuid4().hex
            sid = uuid.uuid4().hex[:12]
            out = []
            for j, p in enumerate(parts):
                if j % 2 == 0:
                    out.append(p)
                elif p == "T":
                    out.append(tid)
                elif p == "E":
                    out.append(eid)
                elif p[0] == "S":
                    out.append(sid + p[1:] + "00")
                else:
                    out.append(str(t0 + int(p[1:])))
            lines.append("".join(out)[1:-1])
            written += per_episode
            t0 += 50_000_000
            if len(lines) >= episodes_per_line:
                fh.write(_line(lines, resource_, scope))
                lines = []
        if lines:
            fh.write(_line(lines, resource_, scope))
    return written


def _line(span_chunks: list[str], resource_: dict[str, Any], scope: dict[str, Any]) -> str:
    return (
        '{"resourceSpans":[{"resource":'
        + json.dumps(resource_, separators=(",", ":"))
        + ',"scopeSpans":[{"scope":'
        + json.dumps(scope, separators=(",", ":"))
        + ',"spans":['
        + ",".join(span_chunks)
        + "]}]}]}\n"
    )


def _peak_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024


def bench(n: int, folder: Path) -> dict[str, float]:
    path = folder / f"spans-{n}.jsonl"
    spans = write_file(path, n)
    size_mb = path.stat().st_size / 1e6
    t0 = time.perf_counter()
    trace = Trace.from_otlp_json(path)
    t1 = time.perf_counter()
    results = [checks.run_checks(t) for t in trace.split()]
    t2 = time.perf_counter()
    whole = checks.run_checks(trace)
    t3 = time.perf_counter()
    assert len(results) == len(trace.episodes) and whole
    path.unlink()
    return {
        "spans": spans,
        "mb": size_mb,
        "read_s": t1 - t0,
        "per_episode_s": t2 - t1,
        "whole_s": t3 - t2,
        "episodes": len(trace.episodes),
        "attempts": len(trace.attempts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="also run 1,000,000 spans")
    parser.add_argument("--sizes", help="comma-separated span counts (overrides the defaults)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [10_000, 100_000]
    if args.full and not args.sizes:
        sizes.append(1_000_000)
    print(
        f"{'spans':>9} {'MB':>7} {'episodes':>9} {'read s':>8} {'checks s':>9} {'total s':>8} "
        f"{'spans/s':>9} {'us/span':>8} {'peak MB':>8}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            r = bench(n, Path(tmp))
            total = r["read_s"] + r["per_episode_s"]
            rows.append((r["spans"], total))
            print(
                f"{r['spans']:>9,} {r['mb']:>7.1f} {r['episodes']:>9,} {r['read_s']:>8.2f} "
                f"{r['per_episode_s']:>9.2f} {total:>8.2f} {r['spans'] / total:>9,.0f} "
                f"{total / r['spans'] * 1e6:>8.1f} {_peak_mb():>8.0f}"
            )
    if len(rows) > 1:
        (n0, t0), (n1, t1) = rows[0], rows[-1]
        growth = (t1 / t0) / (n1 / n0)
        print(f"time grew {t1 / t0:.1f}x for {n1 / n0:.0f}x the spans (1.0 = linear): {growth:.2f}")
    print(
        "total = Trace.from_otlp_json(file) + checks.run_checks() on each episode (trace.split()); "
        "checks s = the default checks only"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
