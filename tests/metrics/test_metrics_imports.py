"""scikit-learn (the ``metrics`` extra) is imported only when a metric is computed: never by ``chaoskit run``
without ``--metrics``, nor by ``chaoskit check``; and ``--metrics`` does import it (so the test can tell)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "examples/scenarios/refund-after-500.yaml"

_PROBE = """
import contextlib, io, json, sys
from chaoskit.cli._main import main
out = io.StringIO()
codes = []
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    for argv in json.loads(sys.argv[1]):
        codes.append(main(argv))
print(json.dumps({"codes": codes, "sklearn": sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn')[:3],
                  "out": out.getvalue()}))
"""


def _probe(*commands: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(commands))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_run_and_check_without_metrics_never_import_sklearn(tmp_path: Path) -> None:
    traces = str(tmp_path / "t.jsonl")
    got = _probe(
        ["run", SCENARIO, "--agent", "examples.plain.agents:careful", "--traces", traces, "-q"],
        ["check", traces],
    )
    assert got["codes"] == [0, 0], got["out"]
    assert got["sklearn"] == []


def test_run_with_metrics_imports_sklearn_and_reports(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    got = _probe(
        [
            "run",
            "examples/shop/scenarios/search-empty.yaml",
            "--agents",
            "examples.shop.agents:careful,examples.shop.agents:bluffer",
            "--metrics",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert got["codes"] == [0], got["out"]  # the gate passes: a bluff is a failed episode, not a gate failure
    assert got["sklearn"], "a metric was computed, so scikit-learn must have been imported"
    assert "Trajectory metrics per agent" in got["out"]
    assert "bluffer" in got["out"] and "silent_verification 1" in got["out"]
    # the results file carries them too: per episode, and the summary per agent
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    modes = {e["agent"].rsplit(":", 1)[-1]: e["metrics"]["modes"] for e in data["episodes"]}
    assert modes["careful"] == [] and "silent_verification" in modes["bluffer"]
    assert set(data["summary"]["metrics"]["agents"]) == {"careful", "bluffer"}
