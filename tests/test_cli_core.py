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
