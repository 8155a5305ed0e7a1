"""A backend that is down, hangs or answers 500 never crashes a chaos run, never holds its exit past the export
bound, and never costs a span of the run's local copy.

Each case runs a small battery (``examples/scenarios``, three repetitions) with ``chaoskit run --traces`` in a
child process whose only OTLP setting is the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``, with a longer
``OTEL_EXPORTER_OTLP_TIMEOUT`` than the bound (60 s: the bound must hold anyway). The wall-clock bound is a
generous one (the 5 s export bound + the interpreter's start and the battery's run + slack), not a timed
performance assertion: without the bound such a run waits up to 60 s at exit (30 s with the default timeout).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the export bound (5 s) + interpreter start + the battery itself + slack for a loaded CI machine; with the
#: 60 s OTEL_EXPORTER_OTLP_TIMEOUT below, an unbounded exit waits 60 s for a backend that hangs or is down
WALL_BOUND_S = 40.0


@contextmanager
def closed_port() -> Iterator[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@contextmanager
def hanging_server() -> Iterator[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    s.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(s.accept()[0])  # accepted, never read from nor answered
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        stop.set()
        t.join(2)
        for c in held:
            c.close()
        s.close()


@contextmanager
def answering(status: int) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


BACKENDS = {
    "down": closed_port,
    "hangs": hanging_server,
    "answers 500": lambda: answering(500),
    "down, over gRPC": closed_port,
    "hangs, over gRPC": hanging_server,
}


def _env(endpoint: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
            "OTEL_SERVICE_NAME": "export-safety",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(extra)
    return env


def _spans(path: Path) -> list[dict[str, Any]]:
    return [
        span
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def _attr(span: dict[str, Any], key: str) -> Any:
    for a in span.get("attributes", []):
        if a["key"] == key:
            return next(iter(a["value"].values()))
    return None


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_bad_backend_neither_crashes_nor_holds_the_run_nor_loses_a_local_span(backend: str, tmp_path: Path) -> None:
    traces, results = tmp_path / "traces.jsonl", tmp_path / "results.json"
    argv = [sys.executable, "-m", "chaoskit", "run", "examples/scenarios", "--repeat", "3", "-q"]
    argv += ["--traces", str(traces), "--json", str(results)]
    grpc = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} if "gRPC" in backend else {}
    with BACKENDS[backend]() as endpoint:
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, env=_env(endpoint, **grpc), capture_output=True, text=True, timeout=120)
        wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert wall < WALL_BOUND_S, f"the run took {wall:.1f} s to exit"

    episodes = json.loads(results.read_text(encoding="utf-8"))["episodes"]
    assert len(episodes) == 30
    spans = _spans(traces)
    roots = [s for s in spans if s["name"].startswith("invoke_agent ")]
    assert sorted(_attr(s, "chaoskit.episode.id") for s in roots) == sorted(e["episode_id"] for e in episodes)
    for e in episodes:
        attempts = [
            s
            for s in spans
            if s["name"].startswith("execute_tool ") and _attr(s, "chaoskit.episode.id") == e["episode_id"]
        ]
        assert len(attempts) == e["attempts"]["total"] > 0, e["scenario"]

    # the failure is one line, not one per batch or retry; the exporter's own retry chatter is not shown
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len([ln for ln in lines if "exporting spans to" in ln]) <= 1, proc.stderr
    assert [ln for ln in lines if ln.startswith("chaoskit: ")] == lines, proc.stderr
    undelivered = [ln for ln in lines if "were not delivered" in ln]
    assert len(undelivered) == 1, proc.stderr
    assert str(traces) in undelivered[0] and endpoint in undelivered[0]


SCRIPT = textwrap.dedent(
    """
    import sys, time
    import chaoskit
    from chaoskit import Plan, chaos

    @chaos
    def search(q):
        return [q]

    plan = Plan(seed=3, faults=[{"type": "http", "tool": "search", "on_call": 2, "status": 503}])
    for i in range(int(sys.argv[1])):
        with chaoskit.episode(f"ep-{i}", plan=plan) as ep:
            for j in range(5):
                try:
                    search(f"q{j}")
                except chaoskit.ToolHTTPError:
                    pass
            ep.finish("done")
    print("AGENT DONE", flush=True)
    """
)


@pytest.mark.parametrize("setting", ["env", "configure"])
def test_the_export_bound_is_configurable_and_holds_against_a_hanging_backend(setting: str, tmp_path: Path) -> None:
    local = tmp_path / "spans.jsonl"
    code = SCRIPT
    extra = {"CHAOSKIT_TRACES_FILE": str(local)}
    if setting == "env":
        extra["CHAOSKIT_EXPORT_TIMEOUT"] = "1"
    else:
        code = "import chaoskit\nchaoskit.configure(export_timeout=1)\n" + code
    with hanging_server() as endpoint:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-c", code, "40"],
            env=_env(endpoint, **extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert "AGENT DONE" in proc.stdout
    # a bound of 1 s: well under the 5 s default (generous: interpreter start and the agent count too)
    assert wall < 15, f"exit took {wall:.1f} s"
    spans = _spans(local)
    assert len([s for s in spans if s["name"] == "execute_tool search"]) == 200
    assert len([s for s in spans if s["name"].startswith("invoke_agent ")]) == 40
    warning = [ln for ln in proc.stderr.splitlines() if "were not delivered" in ln]
    assert len(warning) == 1 and "of 240 spans" in warning[0] and str(local) in warning[0], proc.stderr
    assert "export bound is 1 s" in warning[0]


def test_a_healthy_backend_gets_every_span_and_no_warning(tmp_path: Path) -> None:
    received: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

            req = ExportTraceServiceRequest()
            req.ParseFromString(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            received.append(sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, "40"],
            env=_env(f"http://127.0.0.1:{server.server_address[1]}"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert sum(received) == 240
    assert "not delivered" not in proc.stderr and "failed" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_export_timeout_variable_is_one_warning_and_the_default(value: str) -> None:
    code = "from chaoskit import telemetry\nprint(telemetry.export_timeout())\nprint(telemetry.export_timeout())"
    env = {**os.environ, "CHAOSKIT_EXPORT_TIMEOUT": value, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["5.0", "5.0"]
    assert proc.stderr.count("CHAOSKIT_EXPORT_TIMEOUT") == 1 and "seconds >= 0" in proc.stderr


def test_many_failing_exports_log_one_line_and_the_exporters_own_lines_are_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import chaoskit
    from chaoskit import Plan, chaos, telemetry

    @chaos
    def lookup(q: str) -> str:
        return q

    caplog.set_level(logging.DEBUG)
    with answering(500) as url:
        processor = telemetry.export_otlp(f"{url}/v1/traces")
        try:
            for round_ in range(3):
                with chaoskit.episode(f"round-{round_}", plan=Plan(seed=1, faults=[])):
                    for i in range(600):  # more than one batch (512) each round
                        lookup(str(i))
                processor.force_flush()
        finally:
            telemetry.remove_processor(processor)
    ours = [r for r in caplog.records if r.name == "chaoskit" and r.levelno >= logging.WARNING]
    failed = [r.getMessage() for r in ours if "exporting spans to" in r.getMessage()]
    assert len(failed) == 1 and "500" in failed[0], [r.getMessage() for r in ours]
    lost = [r.getMessage() for r in ours if "were not delivered" in r.getMessage()]
    assert len(lost) == 1 and "of 1803 spans" in lost[0], lost
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING]
