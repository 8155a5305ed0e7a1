from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit import __version__
from chaoskit.cli._main import main


def test_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "chaoskit", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"chaoskit {__version__}"


def test_validate_good_and_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("seed: 2\nfaults:\n  - {type: rate_limit, tool: search, probability: 0.5}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults:\n  - {type: rate_limit, tool: search, probability: 5}\n")
    assert main(["validate", str(good)]) == 0
    out = capsys.readouterr().out
    assert "seed 2, 1 fault(s)" in out and "rate_limit on search p=0.5" in out
    assert main(["validate", str(good), str(bad)]) == 2  # 2: a file could not be used, like every bad input
    err = capsys.readouterr().err
    assert f"{bad}:2: faults[0].probability: must be a number from 0 to 1, got 5" in err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: chaoskit" in capsys.readouterr().out


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    # `chaoskit check ... | head`: the reader closes the pipe; the command stops quietly, with 128 + SIGPIPE
    import json

    from _helpers import issue_refund

    import chaoskit
    from chaoskit import Plan, telemetry

    plan = Plan(seed=1, faults=[{"type": "error", "tool": "issue_refund", "on_call": 1}])
    with telemetry.capture() as cap:
        for i in range(40):
            with chaoskit.episode(f"refund-{i}", plan=plan) as ep:
                try:
                    issue_refund("4832")
                except Exception:
                    issue_refund("4832")
                ep.finish("Refund issued.")
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps(telemetry.to_otlp_json(cap.spans)) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaoskit", "check", str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.close()  # gone before the command writes a line
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
    assert proc.returncode == 141
