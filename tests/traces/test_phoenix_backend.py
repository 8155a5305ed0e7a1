"""A real OTel backend in the suite: chaoskit exports to a live Arize Phoenix, reads the spans back, grades alike.

Phoenix runs from its own venv (created on first use, cached in ~/.cache/chaoskit-test; never a dependency of
chaoskit), inside a network namespace that has only loopback, together with the exporting processes: its gRPC
server binds every interface. ``tests/_phoenix_roundtrip.py`` does the work inside the namespace; these tests
compare, for every episode and for OTLP over HTTP and over gRPC, the verdict, every check result, the score and
the attempt count that the runner computed in-process with those graded from the spans Phoenix gives back
(and from the local ``--traces`` file). They skip only when the package registry cannot be reached or a
network namespace cannot be made, and say so; on CI (root, registry reachable) they run.
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

from examples.phoenix.local import PhoenixUnavailable, ensure_phoenix_venv, namespace_problem, run_in_namespace

ROOT = Path(__file__).resolve().parents[2]

#: the scenario's own success criteria, judged by the runner from the agent's output and end state only
CRITERIA = {"outcome", "output_contains", "output_not_contains", "end_state", "metamorphic_end_state"}


@pytest.fixture(scope="module")
def phoenix_roundtrip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the round trip once for the module (Phoenix takes some 15 s to start) and return its report."""
    problem = namespace_problem()
    if problem is not None:
        pytest.skip(f"Phoenix needs a network namespace with only loopback, and none can be made here: {problem}")
    started = time.monotonic()
    try:
        python = ensure_phoenix_venv()
    except PhoenixUnavailable as exc:
        pytest.skip(str(exc))
    install_s = time.monotonic() - started
    work = tmp_path_factory.mktemp("phoenix")
    out = work / "report.json"
    argv = [sys.executable, str(ROOT / "tests" / "_phoenix_roundtrip.py")]
    argv += ["--phoenix-python", str(python), "--workdir", str(work), "--out", str(out)]
    try:
        code, output = run_in_namespace(argv, timeout=240)
    finally:
        _kill_leftover(work / "phoenix.pid")
    assert code == 0, f"the round trip failed (exit {code}):\n{output[-6000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    report["install_s"] = round(install_s, 1)
    print(f"[phoenix] venv {install_s:.0f} s; " + json.dumps(report["timing"]))
    return report


def _kill_leftover(pid_file: Path) -> None:
    """Last resort: the driver stops Phoenix itself; if it could not, stop it here by its PID's group."""
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


def _assert_graded_alike(report: dict[str, Any], protocol: str) -> None:
    side = report["protocols"][protocol]
    assert side.get("error") is None, f"{protocol}: {side['error']}\nexporter stderr:\n{side.get('stderr', '')}"
    episodes = side["episodes"]
    assert len(episodes) == 16  # 4 scenarios x 2 agents x 2 repetitions
    assert side["episodes_in_phoenix"] == len(episodes)
    verdicts = set()
    for ep in episodes:
        runner, phoenix, local = ep["runner"], ep["phoenix"], ep["local"]
        label = f"{protocol} {ep['scenario']} {ep['agent']}"
        by_runner = sorted(_key(c) for c in runner["checks"] if c["name"] not in CRITERIA)
        assert sorted(map(_key, phoenix["checks"])) == by_runner, label
        assert sorted(map(_key, local["checks"])) == by_runner, label
        assert phoenix["score"] == local["score"] == runner["score"], label
        assert phoenix["attempts"] == local["attempts"] == runner["attempts"]["total"], label
        criteria_ok = all(c["passed"] for c in runner["checks"] if c["name"] in CRITERIA)
        assert runner["passed"] == (phoenix["passed"] and criteria_ok), label
        verdicts.add(runner["passed"])
    assert verdicts == {True, False}  # the careful agent passes, the naive one fails: both kinds are compared


def test_phoenix_roundtrip_over_otlp_http(phoenix_roundtrip: dict[str, Any]) -> None:
    _assert_graded_alike(phoenix_roundtrip, "http/protobuf")


def test_phoenix_roundtrip_over_otlp_grpc(phoenix_roundtrip: dict[str, Any]) -> None:
    _assert_graded_alike(phoenix_roundtrip, "grpc")


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_phoenix_check_from_phoenix_grades_as_check_of_the_file(
    phoenix_roundtrip: dict[str, Any], protocol: str
) -> None:
    """``chaoskit check --from-phoenix URL --project NAME`` gives what ``chaoskit check local.jsonl`` gives."""
    side = phoenix_roundtrip["protocols"][protocol]
    assert side.get("error") is None, side["error"]
    from_phoenix, from_file = side["cli_phoenix"], side["cli_file"]
    assert from_phoenix["exit"] == from_file["exit"] == 1, from_phoenix.get("stderr")  # the naive agent fails
    assert len(from_phoenix["episodes"]) == 16
    # on a difference, say exactly which check of which episode differs, and how (seen once in a full run)
    differing = [
        (eid, a, b)
        for eid in sorted(from_phoenix["episodes"])
        for a, b in zip(from_phoenix["episodes"][eid][0], from_file["episodes"].get(eid, [[]])[0], strict=False)
        if a != b
    ]
    assert not differing, "\n".join(f"{eid}:\n  phoenix {a}\n  file    {b}" for eid, a, b in differing)
    assert from_phoenix["episodes"] == from_file["episodes"]


def test_phoenix_shows_fault_spans_as_errors(phoenix_roundtrip: dict[str, Any]) -> None:
    """What a person sees in Phoenix: each injected fault is a span with status ERROR naming the fault."""
    side = phoenix_roundtrip["protocols"]["http/protobuf"]
    assert side.get("error") is None, side["error"]
    faults = side["faults_seen"]
    # 4 scenarios x 2 agents x 2 repetitions: 1 http 500, 1 rate limit and 2 timeouts per pair
    assert sorted({s["fault_type"] for s in faults}) == ["http", "rate_limit", "timeout"]
    for span in faults:
        assert span["name"].startswith("execute_tool "), span
        assert span["status_code"] == 2, span  # OTLP's STATUS_CODE_ERROR: red in the trace view
        assert span["status_message"], span
        assert "exception" in span["events"], span
        # Phoenix reads the standard gen_ai.tool.call.arguments: the tool span shows its input (issue 27)
        assert span["span_kind"] == "TOOL", span
        # (Phoenix stores the parsed arguments under tool.parameters.<name>, which its tool view lists; a null
        # argument has no attribute)
        given = {k: v for k, v in json.loads(span["arguments"]).items() if v is not None}
        assert given and span["tool_parameters"] == given, span


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_phoenix_write_back_annotates_each_episode_with_its_grades(
    phoenix_roundtrip: dict[str, Any], protocol: str
) -> None:
    """``chaoskit check --from-phoenix … --write-back``: one annotation per check on each episode's span, listed
    by Phoenix's own REST API with the check's label, score and explanation."""
    side = phoenix_roundtrip["protocols"][protocol]
    assert side.get("error") is None, side["error"]
    wrote = side["write_back"]
    assert wrote["exit"] == 1, wrote.get("stderr")
    n = sum(len(checks) for checks, _, _ in wrote["episodes"].values())
    assert f"wrote {n} annotation(s) on 16 episode span(s) back to Phoenix" in wrote["stderr"]
    notes = side["annotations"]
    assert len(notes) == n and len({a["span_id"] for a in notes}) == 16
    got = sorted(
        (a["name"], a["annotator_kind"], a["result"]["label"], a["result"]["score"], a["result"]["explanation"])
        for a in notes
    )
    want = sorted(
        (c["name"], "CODE", c["severity"], 1.0 if c["passed"] else 0.0, c["message"])
        for checks, _, _ in wrote["episodes"].values()
        for c in checks
    )
    assert got == want
    assert any(a["result"]["label"] == "fail" and a["metadata"]["evidence"] for a in notes)


def test_phoenix_trace_read_back_replays_as_the_local_cassette(phoenix_roundtrip: dict[str, Any]) -> None:
    """An episode recorded with ``chaoskit run --record`` while exporting to Phoenix, read back from Phoenix and
    rerun with ``chaoskit replay --from-phoenix`` under its scenario's 500 after_write, changes the same verdicts
    as the replay of the local cassette: the naive agent now repeats the refund."""
    side = phoenix_roundtrip["replay"]
    assert side.get("error") is None, side["error"]
    phoenix, local = side["from_phoenix"], side["from_file"]
    assert phoenix["exit"] == local["exit"] == 1, (phoenix["stderr"], local["stderr"])
    assert phoenix["comparison"] == local["comparison"]
    assert phoenix["comparison"]["changed"]["no_duplicate_writes"] == ["pass", "fail"]
