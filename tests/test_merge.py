"""Sharding a battery and merging the shards gives the same verdict (and figures) as one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit._cli import main
from chaoskit._runner import RunConfig, plan_episodes
from chaoskit._scenario import load_battery

ROOT = Path(__file__).resolve().parents[1]
BATTERY = ROOT / "examples" / "scenarios"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def stable(data: dict[str, Any]) -> tuple[Any, ...]:
    eps = sorted((e["scenario"], e["repetition"], e["epsilon"], e["intensity"], e["seed"], e["passed"], e["score"],
                  json.dumps(e["attempts"], sort_keys=True)) for e in data["episodes"])
    s = data["summary"]
    return (data["verdict"]["ok"], data["verdict"]["reasons"], eps, s["overall"], s["surface"], s["breaks"])


def test_shards_partition_the_grid() -> None:
    scenarios = load_battery([BATTERY / "refund-*.yaml", BATTERY / "status-*.yaml"])
    full = plan_episodes(scenarios, RunConfig(repeat=3, intensities=(0.0, 0.2), perturbations=(0.0, 0.5)))
    parts = [plan_episodes(scenarios, RunConfig(repeat=3, intensities=(0.0, 0.2), perturbations=(0.0, 0.5),
                                                shard=(i, 3))) for i in (1, 2, 3)]
    keys = [(e.scenario.name, e.repetition, e.epsilon, e.intensity, e.seed) for p in parts for e in p]
    assert sorted(keys) == sorted((e.scenario.name, e.repetition, e.epsilon, e.intensity, e.seed) for e in full)
    assert all(parts)
    # every epsilon of a (scenario, repetition) stays in one shard: the metamorphic baseline travels with it
    for p in parts:
        units = {(e.scenario.name, e.repetition) for e in p}
        assert len(p) == len(units) * 4


@pytest.mark.parametrize("agent", ["examples.plain.agents:careful", "examples.plain.agents:naive"])
def test_merge_matches_one_run(tmp_path: Path, agent: str) -> None:
    common = [str(BATTERY / "refund-*.yaml"), str(BATTERY / "status-*.yaml"), "--agent", agent, "--repeat", "2",
              "--intensity", "0,0.3", "--perturb", "0.5", "--seed", "7", "-q", "--fail-under", "60"]
    rc_one = main(["run", *common, "--json", str(tmp_path / "one.json")])
    rcs = [main(["run", *common, "--shard", f"{i}/3", "--json", str(tmp_path / f"s{i}.json")]) for i in (1, 2, 3)]
    rc_merged = main(["merge", *(str(tmp_path / f"s{i}.json") for i in (1, 2, 3)), "--fail-under", "60",
                      "--json", str(tmp_path / "merged.json"), "--junit", str(tmp_path / "merged.xml")])
    one = json.loads((tmp_path / "one.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert rc_merged == rc_one
    assert stable(merged) == stable(one)
    assert len(merged["episodes"]) == sum(len(json.loads((tmp_path / f"s{i}.json").read_text())["episodes"])
                                          for i in (1, 2, 3))
    assert rcs  # shards ran


def test_merge_rejects_overlap_and_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(BATTERY / "refund-after-500.yaml")
    main(["run", f, "--json", str(tmp_path / "a.json"), "-q"])
    main(["run", f, "--seed", "2", "--json", str(tmp_path / "b.json"), "-q"])
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 2
    assert "more than one file" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "different seed" in capsys.readouterr().err
    (tmp_path / "c.json").write_text("{}")
    assert main(["merge", str(tmp_path / "c.json")]) == 2
