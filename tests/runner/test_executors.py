"""The thread, process and Ray executors: the same results, spans once each, lost workers, Ctrl-C, huge grids."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from chaoskit.report._merge import merge_results
from chaoskit.runner._battery import run_battery
from chaoskit.runner._grid import RunConfig, count_episodes, plan_episodes
from chaoskit.scenarios._battery_file import select

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [str(ROOT / "examples" / "scenarios")]
AGENTS = ["examples.plain.agents:careful", "examples.plain.agents:naive"]
GRID: dict[str, Any] = {"agents": AGENTS, "repeat": 2, "intensities": (0.0, 0.3), "seed": 7}

#: a measured time in a check's message ("retried 0.006s after ...") is the only thing allowed to differ
_TIMING = re.compile(r"\d+(?:\.\d+)?\s?m?s\b")


def _comparable(result: Any) -> dict[str, Any]:
    """The results as JSON, less what is not a result: timings, run-wide random ids, how it was scheduled."""
    data = json.loads(_TIMING.sub("T", json.dumps(result.to_dict())))
    data.pop("elapsed_s")
    data["config"].pop("workers")
    data["config"].pop("executor")
    for e in data["episodes"]:
        for key in ("duration_s", "trace_id", "episode_id"):
            e.pop(key)
        for c in e["checks"]:
            c["evidence"] = len(c["evidence"])  # span ids: fresh in every run
        for t in e["attempts"]["timeline"]:
            t.pop("t_ms")
            t.pop("ms")
    return data


@pytest.fixture(scope="module")
def serial() -> dict[str, Any]:
    return _comparable(run_battery(SCENARIOS, **GRID))


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chaoskit[ray]')")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def test_the_grid_is_lazy_and_counted_without_being_made() -> None:
    scenarios = select(SCENARIOS).scenarios
    for shard in (None, (1, 3), (2, 3), (3, 3)):
        config = RunConfig(
            repeat=3, agents=tuple(AGENTS), intensities=(0.0, 0.2), perturbations=(0.0, 0.5), shard=shard
        )
        grid = plan_episodes(scenarios, config)
        assert count_episodes(scenarios, config) == len(grid)
        assert [ep.index for ep in grid] == list(range(len(grid)))
    huge = RunConfig(repeat=10**9, agents=tuple(AGENTS))
    assert count_episodes(scenarios, huge) == 10**9 * len(AGENTS) * len(scenarios)


@pytest.mark.parametrize(("executor", "workers"), [("thread", 3), ("process", 2)])
def test_every_executor_gives_the_serial_results(serial: dict[str, Any], executor: str, workers: int) -> None:
    result = run_battery(SCENARIOS, executor=executor, workers=workers, **GRID)
    assert result.config["executor"] == executor
    assert _comparable(result) == serial


def test_ray_gives_the_serial_results(serial: dict[str, Any], local_ray: Any) -> None:
    result = run_battery(SCENARIOS, executor="ray", workers=2, **GRID)
    assert _comparable(result) == serial
    assert not any(e.retried for e in result.episodes)


def _spans(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend(ss["spans"])
    return out


def _assert_each_span_once(result: Any, traces: Path) -> None:
    spans = _spans(traces)
    ids = [s["spanId"] for s in spans]
    assert len(ids) == len(set(ids)), "a span was written twice"
    attempts = [s for s in spans if s["name"].startswith("execute_tool")]
    assert len(attempts) == sum(e.attempts["total"] for e in result.episodes)
    roots = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(roots) == len(result.episodes)
    assert not Path(f"{traces}.parts").exists(), "the workers' part files are merged and removed"


@pytest.mark.parametrize("executor", ["process", "ray"])
def test_every_attempt_span_reaches_traces_once(executor: str, tmp_path: Path, request: Any) -> None:
    if executor == "ray":
        request.getfixturevalue("local_ray")
    traces = tmp_path / "spans.jsonl"
    result = run_battery(SCENARIOS, executor=executor, workers=2, traces=traces, **GRID)
    _assert_each_span_once(result, traces)


def _run_killed_once(executor: str, tmp_path: Path) -> Any:
    """Four episodes of an armed copy of refund-after-500: the first worker to run one is killed mid-episode."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _executor_agents import arm, disarm

    scenario, killed = arm(ROOT / "examples" / "scenarios" / "refund-after-500.yaml", tmp_path)
    traces = tmp_path / "spans.jsonl"
    try:
        result = run_battery(
            [scenario], agent="_executor_agents:killed_once", repeat=4, executor=executor, workers=2, traces=traces
        )
    finally:
        disarm(scenario)
    assert killed.exists(), "a worker was killed"
    assert [e.repetition for e in result.episodes] == [0, 1, 2, 3], "each episode counted once"
    retried = [e for e in result.episodes if e.retried]
    assert len(retried) == 1
    assert retried[0].to_dict()["retried"] is True
    assert all(e.passed for e in result.episodes), "the retry ran the episode to its end"
    _assert_each_span_once(result, traces)
    return result


def test_a_killed_worker_process_has_its_episode_retried_once(tmp_path: Path) -> None:
    _run_killed_once("process", tmp_path)


def test_a_lost_ray_worker_has_its_episode_retried_once(local_ray: Any, tmp_path: Path) -> None:
    _run_killed_once("ray", tmp_path)


def test_sharded_process_runs_merge_to_the_serial_result(serial: dict[str, Any]) -> None:
    shards = [run_battery(SCENARIOS, executor="process", workers=2, shard=(i, 2), **GRID).to_dict() for i in (1, 2)]
    merged = _comparable(merge_results(shards))
    assert merged["episodes"] == serial["episodes"]
    assert merged["verdict"] == serial["verdict"]


def test_ctrl_c_on_a_huge_grid_writes_the_partial_report(tmp_path: Path) -> None:
    out, lines = tmp_path / "results.json", tmp_path / "episodes.jsonl"
    # Ctrl-C as a terminal sends it to a foreground process: a suite started in the background (`pytest &`,
    # nohup) hands its children SIGINT ignored, and Python then never raises KeyboardInterrupt
    foreground = "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    foreground += "runpy.run_module('chaoskit', run_name='__main__')"
    cmd = [sys.executable, "-c", foreground, "run", str(ROOT / "examples" / "scenarios" / "refund-after-500.yaml")]
    cmd += ["--agent", AGENTS[0], "--repeat", str(10**9), "--executor", "process", "--workers", "2"]
    cmd += ["--jsonl", str(lines), "--json", str(out), "--quiet"]
    # faulthandler on: if the run hangs after Ctrl-C, SIGABRT makes it print where each thread waits
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # a 10**9-episode grid made up front would never get here: episodes stream out as they finish
        deadline = time.monotonic() + 120
        while (not lines.exists() or len(lines.read_text().splitlines()) < 6) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, stacks = proc.communicate(timeout=30)
            pytest.fail(f"the run did not end within 120 s of Ctrl-C; where it waited:\n{stacks[-8000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    data = json.loads(out.read_text())
    assert data["partial"] is True
    assert data["verdict"]["ok"] is False
    assert data["verdict"]["reasons"][0].startswith("partial run: interrupted")
    assert len(data["episodes"]) >= 6
    assert [e["repetition"] for e in data["episodes"]] == sorted(e["repetition"] for e in data["episodes"])
    assert all(e["replay"].startswith("chaoskit run ") for e in data["episodes"])
    assert "partial report" in stderr


def test_async_agents_run_in_worker_processes() -> None:
    grid: dict[str, Any] = {"agent": "examples.plain.agents:careful_async", "repeat": 2, "seed": 3}
    serial = run_battery(SCENARIOS, **grid)
    assert _comparable(run_battery(SCENARIOS, executor="process", workers=2, **grid)) == _comparable(serial)


def test_a_partial_shard_makes_the_merged_result_partial() -> None:
    grid: dict[str, Any] = {"agent": AGENTS[0], "executor": "process", "workers": 2}
    one, two = (run_battery(SCENARIOS, shard=(i, 2), **grid).to_dict() for i in (1, 2))
    assert not one["partial"]
    two["partial"] = True
    merged = merge_results([one, two], sources=["s1.json", "s2.json"])
    assert merged.partial
    assert merged.to_dict()["partial"] is True
    assert not merged.ok
    assert merged.verdict.reasons[0] == "partial run: s2.json was interrupted (Ctrl-C)"


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """An OTLP/HTTP endpoint on 127.0.0.1 keeping (span name, span id) of every span it is sent."""
    got: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            with lock:
                got.extend((s.name, s.span_id) for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans)
            payload = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def test_every_worker_exports_each_attempt_span_to_the_collector_once(
    collector: tuple[str, list[tuple[str, bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, got = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    result = run_battery(SCENARIOS, executor="process", workers=2, **GRID)
    attempts = [sid for name, sid in got if name.startswith("execute_tool")]
    assert len(attempts) == len(set(attempts)), "an attempt span reached the collector twice"
    assert len(attempts) == sum(e.attempts["total"] for e in result.episodes)
    assert sum(name.startswith("invoke_agent") for name, _ in got) == len(result.episodes)
