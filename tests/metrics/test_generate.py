"""``chaoskit generate``: seeded synthetic trajectories, byte-identical per seed, read back by chaoskit."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit import Trace
from chaoskit.cli._main import main
from chaoskit.metrics import generate, read_steps, read_trajectories, trajectories
from chaoskit.metrics._synthetic import ARCHITECTURES, parse_model
from chaoskit.semconv import STEP_KIND

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaoskit", "generate", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.mark.parametrize(("fmt", "name"), [("trajectory", "gen.json"), ("otlp", "gen.jsonl")])
def test_the_same_seed_writes_the_same_bytes_in_two_processes(tmp_path: Path, fmt: str, name: str) -> None:
    args = ["--format", fmt, "--seed", "5", "--tasks", "2", "--horizons", "10,20", "--fault-rate", "0.2"]
    one, two, other = tmp_path / f"1-{name}", tmp_path / f"2-{name}", tmp_path / f"3-{name}"
    for out, seed in ((one, "5"), (two, "5"), (other, "6")):
        done = _cli(*args[:3], seed, *args[4:], "--out", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"written to {out}" in done.stdout
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() != other.read_bytes()  # the seed matters


def test_the_trajectory_file_is_read_by_the_benchmark_reader(tmp_path: Path) -> None:
    out = tmp_path / "gen.json"
    rc = main(["generate", "--out", str(out), "--models", "a=0.9,b=0.5", "--horizons", "10,30", "--tasks", "2"])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["generator"]["models"] == {"a": 0.9, "b": 0.5} and "no model was called" in data["generator"]["note"]
    trajs = read_trajectories(out)
    assert len(trajs) == len(data["trajectories"]) == 2 * 3 * 2 * 2
    combos = {(t["model"], t["architecture"], t["horizon"]) for t in data["trajectories"]}
    assert combos == {(m, a, h) for m in "ab" for a in ARCHITECTURES for h in (10, 30)}
    for raw, traj in zip(data["trajectories"], trajs, strict=True):
        assert traj.task == raw["task_description"] and len(traj.steps) == len(raw["steps"])
        assert len(traj.steps) >= raw["horizon"] - 1
        if raw["architecture"] == "plan-execute":
            assert raw["steps"][0]["reasoning"].startswith("Plan: ")
        reflections = [s for s in raw["steps"] if s["reflection"]]
        if raw["architecture"] != "reflexion":
            assert not reflections
        errors = [o for s in raw["steps"] for o in s["tool_outputs"] if o.startswith("Error: ")]
        if raw["architecture"] == "reflexion":
            assert len(reflections) == len(errors)  # one reflection after each failed call


def test_the_otlp_file_is_graded_and_its_steps_read(tmp_path: Path) -> None:
    out = tmp_path / "gen.jsonl"
    assert main(["generate", "--format", "otlp", "--out", str(out), "--architectures", "reflexion", "--tasks", "2",
                 "--fault-rate", "0.3", "--models", "m=0.8", "--horizons", "12"]) == 0  # fmt: skip
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(ln)["resourceSpans"] for ln in lines)
    trace = Trace.load(str(out))
    found = trajectories(trace, read_steps(str(out)))
    assert len(found) == 2 and all(len(t.steps) >= 11 and t.attempts for t in found)
    assert {s.model for t in found for s in t.steps} == {"m"}
    kinds = [
        a["value"]["stringValue"]
        for ln in lines
        for rs in json.loads(ln)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
        for a in sp.get("attributes", [])
        if a["key"] == STEP_KIND
    ]
    failed = sum(1 for t in found for a in t.attempts if a.outcome == "error")
    assert failed > 0 and kinds == ["reflection"] * failed
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "check", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode in (0, 1) and "2 episode(s)" in done.stdout, done.stdout + done.stderr


def test_a_fault_free_skilled_agent_takes_the_horizon_in_steps() -> None:
    made = generate(models=["perfect=1"], horizons=[10, 21, 30], tasks=1, fault_rate=0.0)
    for g in made:
        t = g.trajectory
        items = (t["horizon"] - 1) // 2
        extra = 1 if t["architecture"] == "plan-execute" else 0
        assert len(t["steps"]) == 2 * items + 1 + extra and t["success"] and not t["failures"]


def test_a_lower_skill_makes_more_mistakes_the_metrics_see(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    from chaoskit.metrics import trajectory_metrics

    def means(skill: str) -> dict[str, float]:
        made = generate(models=[f"m={skill}"], architectures=["react"], horizons=[20], tasks=8, fault_rate=0.2)
        path = tmp_path / f"{skill}.jsonl"
        path.write_text("".join(json.dumps(g.otlp) + "\n" for g in made))
        found = trajectories(Trace.load(str(path)), read_steps(str(path)))
        ms = [trajectory_metrics(t) for t in found]
        return {n: statistics.fmean(getattr(m, n) or 0.0 for m in ms) for n in ("cdi", "hallucination", "svr")}

    low, high = means("0.1"), means("1.0")
    assert low["cdi"] > high["cdi"] and low["hallucination"] > high["hallucination"] == 0.0
    assert low["svr"] > high["svr"] == 0.0  # a check claimed right after a failed call: nothing backs it


def test_hidden_failures_are_labelled_in_the_ground_truth() -> None:
    made = generate(models=["sloppy=0"], architectures=["react"], horizons=[30], tasks=6, fault_rate=0.4, seed=2)
    for g in made:
        t = g.trajectory
        assert t["hid_failure"] == (bool(t["failures"]) and t["final_answer"].startswith("All"))
        if t["failures"] and not t["hid_failure"]:
            assert "Failed: " in t["final_answer"]
    assert any(g.trajectory["failures"] for g in made)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--horizons", "2"], "--horizons: each is a whole number of steps from 3 to 500"),
        (["--horizons", "10,x"], "expected whole numbers separated by commas"),
        (["--architectures", "react,tree-of-thought"], "unknown tree-of-thought; allowed: react, reflexion"),
        (["--models", "a=1.5"], "the skill of 'a' must be a number from 0 to 1"),
        (["--models", "a,a"], "a model is named twice"),
        (["--models", "=0.5"], "a model needs a name"),
        (["--tasks", "0"], "--tasks: a whole number from 1 to 10000"),
        (["--fault-rate", "1.5"], "--fault-rate: a probability from 0 to 1"),
        (["--format", "csv"], "invalid choice: 'csv'"),
    ],
)
def test_bad_flags_are_clear_errors(tmp_path: Path, args: list[str], message: str) -> None:
    done = _cli("--out", str(tmp_path / "x.json"), *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "x.json").exists()


def test_an_unwritable_out_is_a_clear_error(tmp_path: Path) -> None:
    done = _cli("--out", str(tmp_path / "missing" / "x.json"), "--tasks", "1", cwd=tmp_path)
    assert done.returncode == 2 and "cannot write" in done.stderr and "missing" in done.stderr


def test_parse_model_draws_a_skill_from_the_seed_and_name() -> None:
    a, b = parse_model("alpha", 1), parse_model("alpha", 1)
    assert a == b and 0.55 <= a.skill <= 0.95
    assert parse_model("beta=0.25").skill == 0.25
