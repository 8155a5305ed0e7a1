"""The answer checks share one episode's ground truth and reading (``episode_truth``, ``read_against``) instead of
each computing them: the verdicts are those of each check run alone on a fresh copy of the episode (the
reference path), on the example battery's traces and on tampered and incomplete files."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import chaoskit.grading._against as against
import chaoskit.grading._truth as truth
from chaoskit import Trace
from chaoskit.cli._main import main
from chaoskit.grading.checks import DEFAULT_CHECKS, evidence_gaps, run_checks
from chaoskit.semconv import EPISODE_REQUIRED_TOOLS
from chaoskit.traces._records import EpisodeRecord

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def battery_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spans of the example battery (every domain's five agents), as ``chaoskit run --traces`` writes them."""
    out = tmp_path_factory.mktemp("battery") / "battery.jsonl"
    # in a subprocess: the battery's agents start threads and servers this test process need not keep
    subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", str(ROOT / "examples"), "--traces", str(out), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
        check=False,  # the battery's bad agents fail their checks on purpose
    )
    assert out.stat().st_size > 0
    return out


def _reference(ep: EpisodeRecord, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Each check alone on its own copy of the episode, nothing remembered from another check."""
    gaps = evidence_gaps(Trace([ep]))
    if gaps:
        return [r.to_dict() for r in gaps]
    out = []
    for name in DEFAULT_CHECKS:
        truth._RECENT.clear()
        against._RECENT.clear()
        out += [r.to_dict() for r in run_checks(Trace([copy.deepcopy(ep)]), [name], **params)]
    return out


def _shared(ep: EpisodeRecord, params: dict[str, Any]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in run_checks(Trace([ep]), **params)]


def test_battery_verdicts_with_the_shared_truth_are_the_reference_verdicts(battery_traces: Path) -> None:
    episodes = Trace.load(battery_traces).episodes
    assert len(episodes) >= 100  # every scenario of every domain against its agents
    severities = set()
    for ep in episodes:
        tools = ep.tools()
        # with and without required tools: the truth differs by them and must not be shared across them
        for params in ({}, {"required_tools": tools[:1]}, {"required_tools": [*tools[1:], "never_called"]}):
            shared = _shared(ep, params)
            assert shared == _reference(ep, params), (ep.name, params)
            severities |= {r["severity"] for r in shared}
    assert severities == {"pass", "warn", "fail"}  # the battery grades every way: the comparison is not vacuous


def test_checks_of_one_episode_run_interleaved_with_another_keep_their_own_truth(battery_traces: Path) -> None:
    episodes = [ep for ep in Trace.load(battery_traces).episodes if ep.attempts][:40]
    expected = [_reference(ep, {}) for ep in episodes]
    # the shared truth is remembered for a few episodes: grading them in another order changes no verdict
    for ep, want in zip(reversed(episodes), reversed(expected), strict=True):
        assert _shared(ep, {}) == want
    for ep, want in zip(episodes, expected, strict=True):
        assert _shared(ep, {}) == want


def test_a_record_whose_required_tools_attribute_changed_is_graded_afresh() -> None:
    # a refund that answered with an error (after_write) and was never confirmed: owed a report only when required
    from _helpers import issue_refund

    import chaoskit
    from chaoskit import Plan, telemetry

    plan = Plan(seed=1, faults=[{"type": "error", "tool": "issue_refund", "calls": "1-3"}])
    with telemetry.capture() as cap, chaoskit.episode("refund", plan=plan) as run:
        for _ in range(3):
            try:
                issue_refund("4832")
            except Exception:
                pass
        run.finish("Here you go.")
    ep = Trace.from_otlp_json(telemetry.to_otlp_json(cap.spans)).episodes[0]
    ep.attributes[EPISODE_REQUIRED_TOOLS] = "search"
    first = _shared(ep, {})
    ep.attributes[EPISODE_REQUIRED_TOOLS] = "issue_refund"
    second = _shared(ep, {})  # right after the first: the episode's truth is still remembered
    assert second != first  # the required tool changed the verdict: a stale shared truth would have hidden it
    assert second == _reference(ep, {})
    ep.attributes[EPISODE_REQUIRED_TOOLS] = "search"
    assert first == _reference(ep, {})


def _episode_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_tampered_and_incomplete_battery_files_are_never_a_pass(
    battery_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _episode_lines(battery_traces)
    # a chaoskit attempt span without its attempt number: the file cannot be graded
    doc = json.loads(lines[0])
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    tool = next(s for s in spans if any(a["key"] == "chaoskit.attempt" for a in s["attributes"]))
    tool["attributes"] = [a for a in tool["attributes"] if a["key"] != "chaoskit.attempt"]
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text(json.dumps(doc) + "\n" + "".join(lines[1:]), encoding="utf-8")
    # a file cut in the middle of a line
    cut = tmp_path / "cut.jsonl"
    text = "".join(lines)
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    for bad in (tampered, cut):
        assert main(["check", str(bad)]) == 2
        out = capsys.readouterr()
        assert "cannot grade" in out.err and " — ok" not in out.out
    # the whole file graded by chaoskit check: the verdicts of the reference path, episode by episode
    assert main(["check", str(battery_traces), "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    by_id = {ep.id: ep for ep in Trace.load(battery_traces).episodes}
    for item in report["episodes"]:
        assert item["checks"] == _reference(by_id[item["id"]], {})
