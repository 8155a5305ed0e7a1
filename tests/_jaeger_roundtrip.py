"""Test helper, run inside a network namespace: a real Jaeger v2 up, chaoskit runs exporting to it, read back.

``python tests/_jaeger_roundtrip.py --jaeger BIN --workdir D --out OUT.json [--record DIR]`` (as a child of
``unshare -n``): brings up loopback, starts Jaeger (``examples/jaeger/local.py``: in-memory storage, every
listener on a free port of 127.0.0.1) and, for each OTLP protocol (``http/protobuf`` and ``grpc``), runs
``chaoskit run`` over a few example scenarios in a child process whose exporter is set by the standard ``OTEL_*``
variables alone (the service by ``OTEL_SERVICE_NAME``). It then reads the service back with ``chaoskit check
--from-jaeger`` (api_v3) and with the ``/api/traces`` answer that Jaeger's UI renders, writes the grades back
(``--write-back``) and reads both again. OUT.json holds every side for the test to compare. With ``--record``
it also sends a small foreign trace (``tests/data/jaeger/foreign-otlp.json``) and records Jaeger's answers
about it, and about one chaoskit episode, as the test fixtures in DIR. Jaeger is stopped by its PID whatever
happens (context manager, atexit, SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _phoenix_roundtrip import AGENTS, SCENARIOS, _check_cli, _export_run, _grade  # noqa: E402

from chaoskit.scenarios._scenario import load_battery  # noqa: E402
from chaoskit.traces._jaeger import fetch_jaeger  # noqa: E402
from chaoskit.traces._records import TraceReadError  # noqa: E402
from chaoskit.traces._trace import Trace  # noqa: E402
from examples.jaeger.local import Jaeger  # noqa: E402
from examples.phoenix.local import loopback_up  # noqa: E402

PROTOCOLS = {"http/protobuf": "chaoskit-http", "grpc": "chaoskit-grpc"}
FOREIGN = ROOT / "tests" / "data" / "jaeger" / "foreign-otlp.json"
_ = (AGENTS, SCENARIOS)  # the battery the Phoenix round trip runs: the same one


def _get(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def _read_back(url: str, service: str, want: set[str], deadline_s: float = 60.0) -> tuple[Trace, float]:
    """Jaeger's api_v3 answer once it holds every wanted episode, complete (the batch processor writes later)."""
    started = time.monotonic()
    last = "nothing read yet"
    while time.monotonic() - started < deadline_s:
        try:
            got = fetch_jaeger(url, service, timedelta(hours=1), limit=1000, timeout=10)
            if got is not None:
                have = {e.id for e in got[0] if e.id}
                if want <= have:
                    return Trace(got[0]), time.monotonic() - started
                last = f"{len(want & have)} of {len(want)} episodes"
        except TraceReadError as exc:
            last = str(exc)  # not all spans stored yet: an episode misses attempts
        time.sleep(0.5)
    raise TimeoutError(f"Jaeger did not hold every episode of {service!r} within {deadline_s:g} s: {last}")


def _ui_traces(url: str, service: str) -> list[dict[str, Any]]:
    """``GET /api/traces?service=…``: the traces as Jaeger's UI gets them (its search page and trace view)."""
    now_us = int(time.time() * 1e6)
    query = {"service": service, "limit": 1000, "start": now_us - 3600 * 10**6, "end": now_us + 60 * 10**6}
    data: list[dict[str, Any]] = _get(f"{url}/api/traces?{urllib.parse.urlencode(query)}")["data"]
    return data


def _tags(item: dict[str, Any], key: str = "tags") -> dict[str, Any]:
    return {t["key"]: t["value"] for t in item.get(key) or ()}


def _ui_view(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """What the UI shows, per episode id: each attempt's parent, status and fault tags; the evaluation events
    on the episode's span; and the spans under the episode that are neither attempts nor model steps."""
    out: dict[str, Any] = {}
    for tr in traces:
        spans = {sp["spanID"]: sp for sp in tr["spans"]}
        for sp in spans.values():
            tags = _tags(sp)
            if "chaoskit.episode.id" not in tags or not sp["operationName"].startswith("invoke_agent "):
                continue  # the attempts carry the episode's id too
            children = [c for c in spans.values() if any(r["spanID"] == sp["spanID"] for r in c["references"])]
            out[tags["chaoskit.episode.id"]] = {
                "operation": sp["operationName"],
                "evaluations": _evaluations(sp),
                "attempts": [_attempt(c, sp) for c in spans.values() if "chaoskit.attempt" in _tags(c)],
                "span_ids": sorted(spans),
                "attempts_elsewhere": [
                    c["operationName"] for c in spans.values() if "chaoskit.attempt" in _tags(c) and c not in children
                ],
                "written_back": [
                    {"operation": c["operationName"], "evaluations": _evaluations(c), "refs": c["references"]}
                    for c in children
                    if c["operationName"].startswith("chaoskit.evaluation")
                ],
            }
    return out


def _evaluations(span: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        f
        for f in (_tags(log, "fields") for log in span.get("logs") or ())
        if f.get("event") == "gen_ai.evaluation.result"
    ]


def _attempt(span: dict[str, Any], episode: dict[str, Any]) -> dict[str, Any]:
    tags = _tags(span)
    (ref,) = span["references"]
    return {
        "operation": span["operationName"],
        "ref": [ref["refType"], ref["spanID"] == episode["spanID"], ref["traceID"] == episode["traceID"]],
        "injected": bool(tags.get("chaoskit.fault.injected")),
        "error_type": tags.get("error.type"),
        "status": tags.get("otel.status_code"),
        "error_tag": tags.get("error"),
        "fault_tags": sorted(k for k in tags if k.startswith("chaoskit.fault.")),
    }


def _protocol(jg: Jaeger, proto: str, service: str, workdir: Path, by_name: dict[str, Path]) -> dict[str, Any]:
    endpoint = jg.otlp_http if proto.startswith("http") else jg.otlp_grpc
    started = time.monotonic()
    results = _export_run(proto, endpoint, service, workdir / service, service=service)
    episodes = results["episodes"]
    trace, waited = _read_back(jg.url, service, {e["episode_id"] for e in episodes})
    local = Trace.load(workdir / service / "local.jsonl")
    side: dict[str, Any] = {
        "service": service,
        "seconds": round(time.monotonic() - started, 1),
        "waited_s": round(waited, 1),
        "episodes_in_jaeger": len(trace.episodes),
        "stderr": results["stderr"][-2000:],
        "cli_jaeger": _check_cli("--from-jaeger", jg.url, "--service", service, "--limit", "1000"),
        "cli_file": _check_cli(str(workdir / service / "local.jsonl")),
        "ui": _ui_view(_ui_traces(jg.url, service)),
        "episodes": [
            {
                "scenario": e["scenario"],
                "agent": e["agent"],
                "episode_id": e["episode_id"],
                "runner": {k: e[k] for k in ("checks", "score", "passed", "attempts")},
                "jaeger": _grade(trace, e["episode_id"], by_name[e["scenario"]]),
                "local": _grade(local, e["episode_id"], by_name[e["scenario"]]),
            }
            for e in episodes
        ],
    }
    # the grades written back: sent over OTLP (this protocol), then seen in the UI and ignored by the reader
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
    side["write_back"] = _check_cli(
        "--from-jaeger", jg.url, "--service", service, "--limit", "1000", "--write-back", env=env
    )
    side["ui_after"] = _wait_written_back(jg.url, service, len(episodes))
    side["cli_jaeger_after"] = _check_cli("--from-jaeger", jg.url, "--service", service, "--limit", "1000")
    return side


def _wait_written_back(url: str, service: str, n: int, deadline_s: float = 30.0) -> dict[str, Any]:
    started = time.monotonic()
    view: dict[str, Any] = {}
    while time.monotonic() - started < deadline_s:
        view = _ui_view(_ui_traces(url, service))
        if sum(len(v["written_back"]) for v in view.values()) >= n:
            break
        time.sleep(0.5)
    return view


def _record(jg: Jaeger, out: Path, chaoskit_service: str) -> None:
    """Record Jaeger's own answers as test fixtures: about a foreign trace sent as OTLP-JSON, and one episode."""
    out.mkdir(parents=True, exist_ok=True)
    doc = json.loads(FOREIGN.read_text())
    req = urllib.request.Request(
        f"{jg.otlp_http}/v1/traces", data=json.dumps(doc).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200, resp.status
    spans = [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
    trace_id = spans[0]["traceId"]
    start_ns = min(int(sp["startTimeUnixNano"]) for sp in spans)
    service = next(
        kv["value"]["stringValue"]
        for kv in doc["resourceSpans"][0]["resource"]["attributes"]
        if kv["key"] == "service.name"
    )
    v3 = {
        "query.service_name": service,
        "query.start_time_min": _rfc3339(start_ns - 3600 * 10**9),
        "query.start_time_max": _rfc3339(start_ns + 3600 * 10**9),
        "query.num_traces": 20,  # without it, v1.75.0 answers 500 "search depth must be greater than 0 …"
    }
    answers = {
        "v3-find-traces.json": f"/api/v3/traces?{urllib.parse.urlencode(v3)}",
        "v3-get-trace.json": f"/api/v3/traces/{trace_id}",
        "ui-get-trace.json": f"/api/traces/{trace_id}",
        "ui-find-traces.json": "/api/traces?"
        + urllib.parse.urlencode(
            {"service": service, "start": start_ns // 1000 - 3600 * 10**6, "end": start_ns // 1000 + 3600 * 10**6}
        ),
    }
    for name, path in answers.items():
        for _ in range(40):  # the batch processor stores the trace within a second or so
            try:
                answer = _get(jg.url + path)
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # api_v3's "No traces found" until it is stored; anything else is a bug
                    raise RuntimeError(f"{path}: HTTP {exc.code} {exc.read()[:300]!r}") from None
                answer = None
            if answer and (answer.get("data") or answer.get("result")):
                break
            time.sleep(0.25)
        (out / name).write_text(json.dumps(answer, indent=1, ensure_ascii=False) + "\n")
    # one chaoskit episode (the naive agent's refund after a 500, graded back) as both APIs give it
    ui = _ui_traces(jg.url, chaoskit_service)
    one = next(
        tr
        for tr in ui
        if any(str(_tags(sp).get("chaoskit.episode.agent", "")).endswith(":naive") for sp in tr["spans"])
        and any("chaoskit.fault.after_write" in _tags(sp) for sp in tr["spans"])
    )
    (out / "ui-chaoskit-episode.json").write_text(json.dumps({"data": [one]}, indent=1, ensure_ascii=False) + "\n")
    (out / "v3-chaoskit-episode.json").write_text(
        json.dumps(_get(f"{jg.url}/api/v3/traces/{one['traceID']}"), indent=1, ensure_ascii=False) + "\n"
    )


def _rfc3339(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jaeger", required=True, type=Path)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that Jaeger is stopped on the way out
    loopback_up()
    by_name = {load_battery([p])[0].name: p for p in SCENARIOS}
    report: dict[str, Any] = {"protocols": {}}
    with Jaeger(args.jaeger, args.workdir / "jaeger", pid_file=args.workdir / "jaeger.pid") as jg:
        report["startup_s"] = round(jg.startup_s, 1)
        report["argv"] = jg.argv()[1:]
        for proto, service in PROTOCOLS.items():
            try:
                report["protocols"][proto] = _protocol(jg, proto, service, args.workdir, by_name)
            except Exception:
                report["protocols"][proto] = {"error": traceback.format_exc(limit=3), "log": jg.log()}
        if args.record is not None:
            _record(jg, args.record, PROTOCOLS["http/protobuf"])
    report["timing"] = {"jaeger_startup_s": report["startup_s"]} | {
        p: side.get("seconds") for p, side in report["protocols"].items()
    }
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
