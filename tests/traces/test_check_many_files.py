"""``chaoskit check`` over many files (a rotated exporter's directory, a glob, several paths): an episode split
across files is graded once, whole, serially, with processes and on a local Ray alike; a cut one is never a pass."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_streaming import _by_id, _episodes, _interleaved, _write

from chaoskit.cli._main import main


@pytest.fixture(scope="module")
def template() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    return _episodes(12)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chaoskit[ray]')")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def _rotated(tmp_path: Path, template: Any, cuts: tuple[int, ...] = (9, 25)) -> tuple[Path, Path, list[Any]]:
    """The same interleaved spans as one file and as a directory of rotated files (cut mid-episode)."""
    spans, res, scope = template
    spans = _interleaved(spans, seed=3)
    whole = _write(tmp_path / "whole.jsonl", spans, res, scope, per_line=2)
    d = tmp_path / "rotated"
    d.mkdir()
    bounds = [0, *cuts, len(spans)]
    names = ["traces-2026-12-04T10-00.jsonl", "traces-2026-12-04T11-00.jsonl", "traces.jsonl"]
    traces = []
    for name, a, b in zip(names, bounds[:-1], bounds[1:], strict=True):
        _write(d / name, spans[a:b], res, scope, per_line=2)
        traces.append({s["traceId"] for s in spans[a:b]})
    assert traces[0] & traces[1] and traces[1] & traces[2]  # episodes split across two files
    (d / "empty-fresh.jsonl").write_text("")  # the exporter's file just rotated: skipped
    return whole, d, spans


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    rc = main(["check", "--json", *args])
    cap = capsys.readouterr()
    return rc, (json.loads(cap.out) if cap.out.strip() else {}), cap.err


def test_an_episode_split_across_rotated_files_is_graded_once_whole(
    template: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, d, _ = _rotated(tmp_path, template)
    files = sorted(p for p in d.iterdir() if p.stat().st_size)
    rc_whole, ref, _ = _check(capsys, str(whole))
    assert rc_whole == 1 and len(ref["episodes"]) == 13
    for args in ([str(d)], [str(d / "traces*.jsonl")], [str(p) for p in files]):
        rc, report, err = _check(capsys, *args)
        assert (rc, err) == (1, ""), args
        assert _by_id(report) == _by_id(ref), args
        assert len(report["episodes"]) == 13
    # the episode split across two files names the file of its root span
    sources = {e["source"] for e in report["episodes"]}
    assert sources <= {str(p) for p in files} and len(sources) > 1


@pytest.mark.parametrize("executor", [None, "process", "ray"])
def test_serial_processes_and_ray_give_the_same_verdicts(
    template: Any, tmp_path: Path, executor: str | None, request: pytest.FixtureRequest, capsys: Any
) -> None:
    if executor == "ray":
        request.getfixturevalue("local_ray")
    whole, d, _ = _rotated(tmp_path, template)
    _, ref, _ = _check(capsys, str(whole))
    extra = ["--executor", executor, "--workers", "2"] if executor else []
    rc, report, err = _check(capsys, str(d), *extra)
    assert (rc, err) == (1, "")
    assert _by_id(report) == _by_id(ref)
    assert [e["id"] for e in report["episodes"]] == [e["id"] for e in _check(capsys, str(d))[1]["episodes"]]


@pytest.mark.parametrize("executor", [None, "process"])
def test_an_episode_cut_across_files_cannot_be_graded(
    template: Any, tmp_path: Path, executor: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    _, d, _ = _rotated(tmp_path, template)
    # the middle file lost: the episodes it held part of are missing attempts
    (d / "traces-2026-12-04T11-00.jsonl").unlink()
    extra = ["--executor", executor] if executor else []
    rc, report, err = _check(capsys, str(d), *extra)
    assert rc == 2 and report == {}
    assert "cannot grade:" in err and "spans are missing" in err
    assert str(d / "traces") in err and ", line " in err


def test_a_changed_span_across_files_cannot_be_graded(
    template: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, res, scope = template
    d = tmp_path / "d"
    d.mkdir()
    _write(d / "a.jsonl", spans, res, scope, per_line=3)
    changed = json.loads(json.dumps(next(s for s in spans if s["name"].startswith("execute_tool issue_refund"))))
    changed["endTimeUnixNano"] = str(int(changed["endTimeUnixNano"]) + 1000)
    _write(d / "b.jsonl", [changed], res, scope, per_line=1)
    rc, report, err = _check(capsys, str(d))
    assert rc == 2 and report == {}
    assert "appears twice with different content" in err


def test_a_directory_or_glob_without_files_cannot_be_graded(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["check", str(tmp_path / "empty")]) == 2
    assert "holds no trace file" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "nothing-*.jsonl")]) == 2
    assert "no trace file matches" in capsys.readouterr().err


def test_ray_address_needs_the_ray_executor(template: Any, tmp_path: Path, capsys: Any) -> None:
    whole, _, _ = _rotated(tmp_path, template)
    assert main(["check", str(whole), "--ray-address", "auto"]) == 2
    assert "--ray-address is for --executor ray" in capsys.readouterr().err


def test_check_start_up_imports_no_ray(template: Any, tmp_path: Path) -> None:
    _, d, _ = _rotated(tmp_path, template)
    code = (
        "import sys\nfrom chaoskit.cli._main import main\n"
        f"rc = main(['check', {str(d)!r}, '--executor', 'process'])\n"
        "assert 'ray' not in sys.modules, 'ray imported'\nsys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "ray imported" not in proc.stderr


def test_an_extra_attempt_in_a_later_file_is_graded_as_the_files_read_whole(
    template: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an episode complete in the first file, one more attempt of it in the next: read all whole, as one file
    spans, res, scope = template
    extra = json.loads(json.dumps(next(s for s in spans if s["name"].startswith("execute_tool issue_refund"))))
    extra["spanId"] = "00000000000000ff"
    d = tmp_path / "d"
    d.mkdir()
    _write(d / "a.jsonl", spans, res, scope, per_line=3)
    _write(d / "b.jsonl", [extra], res, scope, per_line=1)
    one = _write(tmp_path / "one.jsonl", [*spans, extra], res, scope, per_line=3)
    rc_one, ref, err_one = _check(capsys, str(one))
    rc, report, err = _check(capsys, str(d))
    assert rc == rc_one and err.replace(str(d / "b.jsonl"), "F") == err_one.replace(str(one), "F")
    assert _by_id(report) == _by_id(ref)
