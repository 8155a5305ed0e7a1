"""A real Jaeger v2 in the suite: chaoskit exports to it, reads the spans back, grades alike, writes grades back.

Jaeger is built on first use from the Go module proxy (``go`` builds ``github.com/jaegertracing/jaeger/cmd/jaeger``
at v1.75.0 into ~/.cache/chaoskit-test; the first build takes minutes, later runs reuse it) and runs inside a
network namespace that has only loopback, with the exporting processes, on free ports of 127.0.0.1.
``tests/_jaeger_roundtrip.py`` does the work inside the namespace; these tests compare, for every episode and for
OTLP over HTTP and over gRPC, the verdict, every check result, the score and the attempt count that the runner
computed in-process with those graded from Jaeger's api_v3 (``chaoskit check --from-jaeger``) and from the local
``--traces`` file, and look at the ``/api/traces`` answer that Jaeger's UI renders. They skip only where Go is
missing, the module proxy refuses the module or a network namespace cannot be made, and say so.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from examples.jaeger.local import JaegerUnavailable, ensure_jaeger_binary
from examples.phoenix.local import namespace_problem, run_in_namespace

ROOT = Path(__file__).resolve().parents[2]

#: the scenario's own success criteria, judged by the runner from the agent's output and end state only
CRITERIA = {"outcome", "output_contains", "output_not_contains", "end_state", "metamorphic_end_state"}
PROTOCOLS = ["http/protobuf", "grpc"]


@pytest.fixture(scope="module")
def jaeger_roundtrip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the round trip once for the module and return its report."""
    problem = namespace_problem()
    if problem is not None:
        pytest.skip(f"Jaeger runs in a network namespace with only loopback, and none can be made here: {problem}")
    started = time.monotonic()
    try:
        binary = ensure_jaeger_binary()  # the first build: up to 30 min on 2 cores; then cached
    except JaegerUnavailable as exc:
        pytest.skip(str(exc))
    build_s = time.monotonic() - started
    work = tmp_path_factory.mktemp("jaeger")
    out = work / "report.json"
    argv = [sys.executable, str(ROOT / "tests" / "_jaeger_roundtrip.py")]
    argv += ["--jaeger", str(binary), "--workdir", str(work), "--out", str(out)]
    record = os.environ.get("CHAOSKIT_RECORD_JAEGER")  # a folder: record the fixtures of tests/data/jaeger there
    if record:
        argv += ["--record", record]
    try:
        code, output = run_in_namespace(argv, timeout=300)
    finally:
        _kill_leftover(work / "jaeger.pid")
    assert code == 0, f"the round trip failed (exit {code}):\n{output[-6000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    print(f"[jaeger] binary {build_s:.0f} s; " + json.dumps(report["timing"]))
    return report


def _kill_leftover(pid_file: Path) -> None:
    """Last resort: the driver stops Jaeger itself; if it could not, stop it here by its PID's group."""
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(2)


def _key(check: dict[str, Any]) -> tuple[Any, ...]:
    return (check["name"], check["passed"], check["severity"], check["message"], tuple(check["evidence"]))


def _side(report: dict[str, Any], protocol: str) -> dict[str, Any]:
    side: dict[str, Any] = report["protocols"][protocol]
    assert side.get("error") is None, f"{protocol}: {side['error']}\n{side.get('log', '')}"
    return side


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jaeger_roundtrip_grades_as_the_runner_and_the_local_file(
    jaeger_roundtrip: dict[str, Any], protocol: str
) -> None:
    side = _side(jaeger_roundtrip, protocol)
    episodes = side["episodes"]
    assert len(episodes) == 16  # 4 scenarios x 2 agents x 2 repetitions
    assert side["episodes_in_jaeger"] == len(episodes)
    verdicts = set()
    for ep in episodes:
        runner, jaeger, local = ep["runner"], ep["jaeger"], ep["local"]
        label = f"{protocol} {ep['scenario']} {ep['agent']}"
        by_runner = sorted(_key(c) for c in runner["checks"] if c["name"] not in CRITERIA)
        assert sorted(map(_key, jaeger["checks"])) == by_runner, label
        assert sorted(map(_key, local["checks"])) == by_runner, label
        assert jaeger["score"] == local["score"] == runner["score"], label
        assert jaeger["attempts"] == local["attempts"] == runner["attempts"]["total"], label
        criteria_ok = all(c["passed"] for c in runner["checks"] if c["name"] in CRITERIA)
        assert runner["passed"] == (jaeger["passed"] and criteria_ok), label
        verdicts.add(runner["passed"])
    assert verdicts == {True, False}  # the careful agent passes, the naive one fails: both kinds are compared


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_check_from_jaeger_grades_as_check_of_the_local_file(jaeger_roundtrip: dict[str, Any], protocol: str) -> None:
    """``chaoskit check --from-jaeger URL --service S`` (api_v3) gives what ``chaoskit check local.jsonl`` gives."""
    side = _side(jaeger_roundtrip, protocol)
    from_jaeger, from_file = side["cli_jaeger"], side["cli_file"]
    assert from_jaeger["exit"] == from_file["exit"] == 1, from_jaeger.get("stderr")  # the naive agent fails
    assert len(from_jaeger["episodes"]) == 16
    assert from_jaeger["episodes"] == from_file["episodes"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jaegers_ui_shows_attempts_under_their_episode_with_errors_and_fault_tags(
    jaeger_roundtrip: dict[str, Any], protocol: str
) -> None:
    side = _side(jaeger_roundtrip, protocol)
    ui = side["ui"]
    assert sorted(ui) == sorted(e["episode_id"] for e in side["episodes"])
    injected = 0
    for ep in side["episodes"]:
        view = ui[ep["episode_id"]]
        assert view["operation"].startswith("invoke_agent "), view["operation"]
        assert view["attempts_elsewhere"] == []
        assert len(view["attempts"]) == ep["runner"]["attempts"]["total"]
        for at in view["attempts"]:
            assert at["operation"].startswith("execute_tool "), at
            assert at["ref"] == ["CHILD_OF", True, True], at  # a child of its episode, in its trace
            if at["injected"] and at["error_type"]:
                injected += 1
                assert at["status"] == "ERROR" and at["error_tag"] is True, at  # red in the UI
                assert {"chaoskit.fault.type", "chaoskit.fault.injected"} <= set(at["fault_tags"]), at
    assert injected >= 16  # at least one injected error fault per episode


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_runs_evaluation_events_are_on_the_episode_in_jaegers_ui(
    jaeger_roundtrip: dict[str, Any], protocol: str
) -> None:
    """``chaoskit run`` puts one ``gen_ai.evaluation.result`` event per check on each episode's span."""
    side = _side(jaeger_roundtrip, protocol)
    for ep in side["episodes"]:
        events = side["ui"][ep["episode_id"]]["evaluations"]
        got = sorted(
            (e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.label"], e["gen_ai.evaluation.explanation"])
            for e in events
        )
        want = sorted((c["name"], c["severity"], c["message"]) for c in ep["runner"]["checks"])
        assert got == want, ep["scenario"]
        for e in events:
            assert e["gen_ai.evaluation.score.value"] in (0.0, 1.0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_write_back_puts_the_grades_under_each_episode_and_they_grade_as_before(
    jaeger_roundtrip: dict[str, Any], protocol: str
) -> None:
    side = _side(jaeger_roundtrip, protocol)
    wrote = side["write_back"]
    assert wrote["exit"] == 1, wrote.get("stderr")
    assert "wrote the grades of 16 episode(s) back to Jaeger" in wrote["stderr"]
    n_failed = 0
    for eid, (checks, _score, _attempts) in wrote["episodes"].items():
        (back,) = side["ui_after"][eid]["written_back"]
        (ref,) = back["refs"]
        assert ref["refType"] == "CHILD_OF"
        got = sorted(
            (e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.label"], e["gen_ai.evaluation.explanation"])
            for e in back["evaluations"]
        )
        assert got == sorted((c["name"], c["severity"], c["message"]) for c in checks)
        failed = [e for e in back["evaluations"] if e["gen_ai.evaluation.score.label"] == "fail"]
        for e in failed:
            assert e["gen_ai.evaluation.score.value"] == 0.0
            # the evidence (an array, which Jaeger shows as its JSON text) names spans of this episode's trace
            evidence = set(json.loads(e["chaoskit.evaluation.evidence"]))
            assert evidence and evidence <= set(side["ui_after"][eid]["span_ids"]), e
        n_failed += len(failed)
    assert n_failed >= 8  # the naive agent's episodes fail: their failing results are on the trace too
    # the written-back spans and events change no grade
    assert side["cli_jaeger_after"]["episodes"] == side["cli_jaeger"]["episodes"]
    assert side["cli_jaeger_after"]["exit"] == side["cli_jaeger"]["exit"]
