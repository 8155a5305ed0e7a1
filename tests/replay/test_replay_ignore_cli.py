"""`chaoskit replay --ignore TOOL:ARG`: the per-tool matching rule on the command line (a timestamp left out)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chaoskit


def test_chaoskit_replay_ignores_a_timestamp_argument_when_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _replay_clock_agent import make

    from chaoskit.cli._main import main

    with chaoskit.episode("clock", record=tmp_path, task="kettle") as ep:
        ep.finish(make()("kettle"))
    cassette = str(tmp_path / "clock.jsonl")
    capsys.readouterr()
    # the recorded call had another timestamp: no match, and the error names the argument that differs
    assert main(["replay", cassette, "--agent", "_replay_clock_agent:make"]) == 2
    assert "nearest recorded" in capsys.readouterr().err
    assert main(["replay", cassette, "--agent", "_replay_clock_agent:make", "--ignore", "search:timestamp"]) == 0
    assert "verdicts unchanged" in capsys.readouterr().out
    with pytest.raises(SystemExit) as usage:  # a usage error, as argparse reports one
        main(["replay", cassette, "--agent", "_replay_clock_agent:make", "--ignore", "search"])
    assert usage.value.code == 2 and "expected TOOL:ARG" in capsys.readouterr().err
