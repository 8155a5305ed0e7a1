"""OTLP-JSON encoding of finished spans, side by side: chaoskit's encoder against the official OTel encoders.

    python benchmarks/bench_otlp_encode.py [--episodes 20] [--repeat 7]

The spans are those of real chaoskit episodes (an irreversible tool failing once with HTTP 500 then
succeeding, a read-only tool called three times; 6 spans an episode). Encoders, each ending in the compact JSON
line a span file holds:

- ``chaoskit``: ``telemetry.to_otlp_json`` (what every span file and ``--traces`` line goes through);
- ``protobuf``: the OTLP exporters' ``encode_spans``, protobuf's ``MessageToDict``, the ids turned to hex (what
  ``to_otlp_json`` was before);
- ``otlp-json-common``: ``opentelemetry-exporter-otlp-json-common``'s ``encode_spans(...).to_dict()``, when it
  is installed (a beta, not a chaoskit dependency).

Reported: µs of CPU time per span (best of ``--repeat``), and whether each writes chaoskit's bytes.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
import timeit
from collections.abc import Callable
from typing import Any

import chaoskit
from chaoskit import telemetry


def refund_spans(episodes: int) -> list[Any]:
    """``episodes`` refund episodes (3 lookups, a write failed once with a 500, retried with its key): spans."""

    @chaoskit.chaos(irreversible=True, idempotency_arg="key")
    def issue_refund(order: str, key: str) -> dict[str, Any]:
        return {"order": order, "refunded": True, "items": [1, 2, 3]}

    @chaoskit.chaos
    def lookup(order: str) -> str:
        return f"order {order}: shipped"

    plan = chaoskit.Plan.from_dict(
        {"seed": 1, "faults": [{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500}]}
    )
    with telemetry.capture() as cap:
        for n in range(episodes):
            with chaoskit.episode(f"refund-{n}", plan, task="refund order 7"):
                for i in range(3):
                    lookup(str(i))
                try:
                    issue_refund("7", key="k-1")
                except chaoskit.ToolHTTPError:
                    pass
                issue_refund("7", key="k-1")
    return list(cap.spans)


def _protobuf(spans: list[Any]) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    def hex_ids(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v)
                for k, v in obj.items()
            }
        return [hex_ids(v) for v in obj] if isinstance(obj, list) else obj

    return dict(hex_ids(MessageToDict(encode_spans(spans), use_integers_for_enums=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    spans = refund_spans(opts.episodes)
    encoders: dict[str, Callable[[list[Any]], dict[str, Any]]] = {
        "chaoskit": telemetry.to_otlp_json,
        "protobuf": _protobuf,
    }
    try:
        from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as json_encode

        encoders["otlp-json-common"] = lambda s: json_encode(s).to_dict()
    except ImportError:
        pass
    ours = json.dumps(telemetry.to_otlp_json(spans), separators=(",", ":"))
    print(f"{len(spans)} spans of {opts.episodes} episodes; CPU time, best of {opts.repeat}")
    print(f"{'encoder':<18} {'µs/span':>8} {'same bytes':>11} {'same data':>10}")
    for name, encode in encoders.items():
        line = json.dumps(encode(spans), separators=(",", ":"))
        best = min(
            timeit.repeat(
                lambda e=encode: json.dumps(e(spans), separators=(",", ":")),  # type: ignore[misc]
                number=10,
                repeat=opts.repeat,
                timer=time.process_time,
            )
        )
        same_data = json.loads(line) == json.loads(ours)
        print(f"{name:<18} {best / 10 / len(spans) * 1e6:>8.1f} {line == ours!s:>11} {same_data!s:>10}")


if __name__ == "__main__":
    main()
