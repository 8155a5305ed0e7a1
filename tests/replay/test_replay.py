"""Every replay command ``chaoskit run`` prints reproduces its episode exactly.

A battery runs over the example scenarios; each printed ``replay:`` command is parsed and run again
in-process, and the replayed episode must match the original: verdict, score, attempt counts per tool and
every check's verdict and message.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cli._main import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "examples" / "scenarios"
PLAIN = [str(p) for p in sorted(SCENARIOS.glob("*.yaml")) if not p.name.startswith("support-")]
CLI_AGENT = ROOT / "examples" / "plain" / "cli_agent.py"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _replays(text: str) -> list[str]:
    return [ln.split("replay: ", 1)[1] for ln in text.splitlines() if ln.strip().startswith("replay: ")]


#: a wait the checks measured ("retried 0.3ms after ..."): wall-clock time, which no replay repeats exactly
_MEASURED = re.compile(r"\b\d+(?:\.\d+)?(?:ms|s)\b")


def _fingerprint(e: dict[str, Any]) -> dict[str, Any]:
    return {
        "passed": e["passed"],
        "score": e["score"],
        "outcome": e["outcome"],
        "output": e["output"],
        "task": e["task"],
        "attempts": e["attempts"]["total"],
        "by_tool": e["attempts"]["by_tool"],
        "checks": sorted(
            (c["name"], c["passed"], c["severity"], _MEASURED.sub("<time>", c["message"])) for c in e["checks"]
        ),
    }


def _replay_all(argv: list[str], tmp_path: Path, *, at_least: int) -> list[str]:
    results = tmp_path / "battery.json"
    code, out, err = _run([*argv, "--json", str(results), "--max-failures", "1000", "-v"])
    assert code in (0, 1), err
    original = {
        (e["scenario"], e["repetition"], e["epsilon"], e["intensity"]): e
        for e in json.loads(results.read_text())["episodes"]
    }
    commands = _replays(out)
    assert len(commands) >= at_least, out
    for n, command in enumerate(commands):
        parts = shlex.split(command)
        assert parts[:2] == ["chaoskit", "run"], command
        again = tmp_path / f"replay-{n}.json"
        code, _out, err = _run([*parts[1:], "--json", str(again), "-q"])
        assert code in (0, 1), f"{command}\n{err}"
        replayed = json.loads(again.read_text())["episodes"]
        seed = int(parts[parts.index("--episode-seed") + 1])
        eps = float(parts[parts.index("--perturb") + 1])
        (mine,) = [e for e in replayed if e["epsilon"] == eps]
        (orig,) = [
            e
            for e in original.values()
            if e["seed"] == seed
            and e["scenario"] == mine["scenario"]
            and e["epsilon"] == eps
            and e["intensity"] == mine["intensity"]
        ]
        assert _fingerprint(mine) == _fingerprint(orig), command
        assert mine["replay"] == orig["replay"] == command
    return commands


def test_replays_of_a_battery_with_background_faults_and_perturbation(tmp_path: Path) -> None:
    commands = _replay_all(
        [
            "run",
            *PLAIN,
            "--agent",
            "examples.plain.agents:naive",
            "--repeat",
            "2",
            "--intensity",
            "0,0.3",
            "--perturb",
            "0.5",
            "--seed",
            "5",
        ],
        tmp_path,
        at_least=10,
    )
    assert any("--perturb 0.5" in c for c in commands) and any("--profile medium" in c for c in commands)


def test_replays_name_the_profile_file_not_its_name(tmp_path: Path) -> None:
    profile = tmp_path / "flaky-upstream.yaml"
    profile.write_text(
        "name: flaky upstream\nweights:\n  http_5xx: 3\n  rate_limit: 1\nparams:\n  rate_limit: {retry_after: 0.01}\n",
        encoding="utf-8",
    )
    commands = _replay_all(
        [
            "run",
            *PLAIN[:3],
            "--agent",
            "examples.plain.agents:naive",
            "--repeat",
            "2",
            "--intensity",
            "0.6",
            "--profile",
            str(profile),
            "--seed",
            "2",
        ],
        tmp_path,
        at_least=3,
    )
    assert all(f"--profile {shlex.quote(str(profile))}" in c for c in commands), commands
    assert not any("flaky upstream" in c for c in commands)


def test_replays_of_a_command_line_agent_keep_its_timeout(tmp_path: Path) -> None:
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(CLI_AGENT))} --policy naive --task {{task}}"
    refund = str(SCENARIOS / "refund-after-500.yaml")
    commands = _replay_all(
        ["run", refund, "--agent", agent, "--timeout", "45", "--intensity", "0.2", "--seed", "4"], tmp_path, at_least=1
    )
    assert all("--timeout 45" in c for c in commands), commands
