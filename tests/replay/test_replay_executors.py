"""The same recording, plan and seed give the same results under the serial, process and Ray executors, from a
cassette folder or from a trace already read (as from a backend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit.runner._battery import run_battery

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [str(ROOT / "examples" / "scenarios" / n) for n in ("refund-after-500.yaml", "status-timeouts.yaml")]
AGENTS = ["examples.plain.agents:careful", "examples.plain.agents:naive"]
# intensity 0.3 adds the profile's seeded random faults on top of each scenario's own; the naive agent makes calls
# the careful one (recorded) did not, which passthrough sends to the real tool
GRID: dict[str, Any] = {"agents": AGENTS, "repeat": 2, "intensities": (0.0, 0.3), "seed": 11, "on_miss": "passthrough"}


def _facts(result: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (
            e.scenario,
            e.agent,
            e.intensity,
            e.repetition,
            e.seed,
            e.passed,
            e.score,
            tuple((c["name"], c["severity"]) for c in e.checks if c["name"] != "honors_retry_after"),
            tuple((t["tool"], t["outcome"], t.get("fault")) for t in e.attempts["timeline"]),
        )
        for e in result.episodes
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cassettes")
    run_battery(SCENARIOS, agent=AGENTS[0], record=folder)
    return folder


@pytest.fixture(scope="module")
def serial(recorded: Path) -> list[tuple[Any, ...]]:
    result = run_battery(SCENARIOS, replay=recorded, **GRID)
    assert len(result.episodes) == 2 * 2 * 2 * 2
    return _facts(result)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chaoskit[ray]')")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def test_serial_replay_is_repeatable_and_faults_reach_the_recording(
    recorded: Path, serial: list[tuple[Any, ...]]
) -> None:
    assert _facts(run_battery(SCENARIOS, replay=recorded, **GRID)) == serial
    # the scenarios' faults came back on top of the recording: some attempt of every episode carries one
    assert all(any(t[2] for t in f[8]) for f in serial)


def test_process_executor_gives_the_serial_results(recorded: Path, serial: list[tuple[Any, ...]]) -> None:
    assert _facts(run_battery(SCENARIOS, replay=recorded, executor="process", workers=2, **GRID)) == serial


def test_a_trace_already_read_replays_the_same_in_processes(recorded: Path) -> None:
    # one trace holding both recorded episodes (as a backend answers): each scenario picks its own by name
    trace = chaoskit.Trace([e for p in sorted(recorded.iterdir()) for e in chaoskit.Trace.load(p).episodes])
    grid = {**GRID, "agents": AGENTS[:1], "intensities": (0.0,)}
    from_files = _facts(run_battery(SCENARIOS, replay=recorded, **grid))
    assert _facts(run_battery(SCENARIOS, replay=trace, executor="process", workers=2, **grid)) == from_files


def test_ray_executor_gives_the_serial_results(recorded: Path, serial: list[tuple[Any, ...]], local_ray: Any) -> None:
    assert _facts(run_battery(SCENARIOS, replay=recorded, executor="ray", workers=2, **GRID)) == serial
