"""Breakdowns by agent, domain, fault and tag, the scenario x agent matrix, episode facts, the attempts timeline,
and oracles that see the initial state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _battery_world import FETCH, PLAIN, SAVE, W, write

from chaoskit.runner._battery import run_battery

CAREFUL, NAIVE = f"{W}:careful", f"{W}:naive"


@pytest.fixture
def result(tmp_path: Path) -> dict[str, Any]:
    d = tmp_path / "scenarios"
    write(d, "save.yaml", SAVE)
    write(d, "fetch.yaml", FETCH)
    write(d, "plain.yaml", PLAIN)
    r = run_battery([d], agents=[CAREFUL, NAIVE], repeat=2)
    data: dict[str, Any] = json.loads(json.dumps(r.to_dict()))  # what a results file holds
    return data


def _rate(passes: int, n: int) -> float:
    return round(passes / n, 6)


def test_episodes_carry_tags_domain_and_faults(result: dict[str, Any]) -> None:
    by = {e["scenario"]: e for e in result["episodes"]}
    assert by["save-after-500"]["tags"] == ["domain:shop", "fault:http", "difficulty:easy", "write"]
    assert by["save-after-500"]["domain"] == "shop" and by["save-after-500"]["faults"] == ["http"]
    assert by["fetch-timeout"]["domain"] == "catalog" and by["fetch-timeout"]["faults"] == ["timeout"]
    assert by["plain-save"]["domain"] is None and by["plain-save"]["faults"] == []


def test_breakdowns(result: dict[str, Any]) -> None:
    b = result["summary"]["breakdowns"]
    assert set(b) == {"agent", "domain", "fault", "tag", "model", "architecture"}
    assert b["model"] == b["architecture"] == {}  # no agent here is labelled with a model or an architecture
    # naive fails only save-after-500 (its repeated write), in both repetitions
    assert b["agent"]["careful"]["n"] == 6 and b["agent"]["careful"]["passes"] == 6
    assert b["agent"]["naive"]["n"] == 6 and b["agent"]["naive"]["passes"] == 4
    assert b["agent"]["naive"]["pass_at_1"]["value"] == _rate(4, 6)
    assert 0 < b["agent"]["naive"]["pass_at_1"]["low"] < _rate(4, 6) < b["agent"]["naive"]["pass_at_1"]["high"] < 1
    assert set(b["domain"]) == {"shop", "catalog", "(none)"}
    assert b["domain"]["shop"]["passes"] == 2 and b["domain"]["shop"]["n"] == 4
    assert set(b["fault"]) == {"http", "timeout", "none"}
    assert b["fault"]["none"]["n"] == 4 and b["fault"]["none"]["passes"] == 4
    assert b["tag"]["write"]["n"] == 4 and b["tag"]["smoke"]["passes"] == 4
    for stats in b["agent"].values():
        assert set(stats) == {"n", "passes", "pass_at_1", "mean_score", "mean_attempts"}
        assert set(stats["pass_at_1"]) == {"value", "low", "high", "n"}
    fetch_attempts = [e["attempts"]["total"] for e in result["episodes"] if e["scenario"] == "fetch-timeout"]
    assert b["fault"]["timeout"]["mean_attempts"] == round(sum(fetch_attempts) / len(fetch_attempts), 3)


def test_matrix(result: dict[str, Any]) -> None:
    m = result["summary"]["matrix"]
    assert list(m) == ["fetch-timeout", "plain-save", "save-after-500"]
    assert m["save-after-500"]["careful"]["passes"] == 2 and m["save-after-500"]["naive"]["passes"] == 0
    assert m["plain-save"]["naive"]["pass_at_1"]["value"] == 1.0

    # no object but an episode holds scenario + agent + passed together
    def walk(x: Any, path: str) -> None:
        if isinstance(x, dict):
            if {"scenario", "agent", "passed"} <= set(x):
                assert path.startswith("episodes"), path
            for k, v in x.items():
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")

    for key in ("summary", "verdict", "config"):
        walk(result[key], key)


def test_surface_stats_are_in_the_summary(result: dict[str, Any]) -> None:
    stats = result["summary"]["surface_stats"]
    assert set(stats) >= {"volume", "slope_epsilon", "slope_lambda"}
    assert 0 <= stats["volume"]["low"] <= stats["volume"]["value"] <= stats["volume"]["high"] <= 1


def test_attempts_timeline(result: dict[str, Any]) -> None:
    e = next(e for e in result["episodes"] if e["scenario"] == "fetch-timeout" and e["agent"] == CAREFUL)
    tl = e["attempts"]["timeline"]
    assert [(a["tool"], a["attempt"]) for a in tl] == [("fetch", 1), ("fetch", 2), ("save", 1)]
    assert len(tl) == e["attempts"]["total"]
    first, retry, save = tl
    assert first["fault"] == "timeout" and not first["executed"] and first["outcome"] != "success"
    assert retry["fault"] is None and retry["executed"] and save["executed"]
    assert 0 <= first["t_ms"] <= retry["t_ms"] <= save["t_ms"]
    assert all(a["ms"] >= 0 for a in tl)
    assert set(first) == {"tool", "attempt", "t_ms", "ms", "outcome", "fault", "executed"}


def test_timeline_is_capped(tmp_path: Path) -> None:
    p = write(tmp_path / "scenarios", "plain.yaml", PLAIN)
    (e,) = run_battery([p], agent=f"{W}:chatty").episodes
    assert e.attempts["total"] == 251
    tl = e.attempts["timeline"]
    assert len(tl) == 200 and all(a["tool"] == "fetch" for a in tl)


ORACLE = f"""\
name: one-more-record
task: "Save item 4832"
agent: {W}:seeded
success:
  output_contains: ["saved"]
  state: {W}:one_more
"""


def test_oracle_of_two_parameters_sees_the_initial_state(tmp_path: Path) -> None:
    p = write(tmp_path / "scenarios", "oracle.yaml", ORACLE)
    r = run_battery([p])
    (e,) = r.episodes
    assert e.passed and e.oracle is not None and e.oracle["ok"]
    # the initial copy holds the one seeded record, untouched by the agent's save
    assert e.oracle["state"] == "1"
    # an env that cannot be copied is reported as the oracle's error, never as a crash of the agent
    r = run_battery([p], agent=f"{W}:locked")
    (e,) = r.episodes
    assert e.outcome == "completed" and not e.passed and e.oracle is not None
    assert "cannot copy the initial state" in (e.oracle["error"] or "")
    end_state = next(c for c in e.checks if c["name"] == "end_state")
    assert not end_state["passed"] and "deepcopy" in end_state["message"]


def test_oracle_of_one_parameter_gets_the_final_state(tmp_path: Path) -> None:
    p = write(tmp_path / "scenarios", "save.yaml", SAVE)
    (e,) = run_battery([p]).episodes
    assert e.oracle is not None and e.oracle["ok"] and e.oracle["state"] == '["4832"]'
