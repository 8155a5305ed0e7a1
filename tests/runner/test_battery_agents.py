"""Several agents per scenario: the grid, cells, gate, baseline, merge, JUnit, replay, --agents and battery files."""

from __future__ import annotations

import json
import os
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _battery_world import FETCH, PLAIN, SAVE, W, write

from chaoskit.cli._main import main
from chaoskit.report._json import load_results
from chaoskit.report._merge import merge_results
from chaoskit.runner._battery import run_battery
from chaoskit.runner._gate import load_baseline, make_baseline
from chaoskit.runner._results import agent_label
from chaoskit.runner._summary import summarize

CAREFUL, NAIVE, GIVE_UP = f"{W}:careful", f"{W}:naive", f"{W}:give_up"


@pytest.fixture
def battery(tmp_path: Path) -> Path:
    d = tmp_path / "scenarios"
    write(d, "save.yaml", SAVE)
    write(d, "fetch.yaml", FETCH)
    return d


def test_agent_label() -> None:
    assert agent_label("examples.travel.agents:careful") == "careful"
    assert agent_label("python agent.py {task}") == "python agent.py {task}"


def test_every_scenario_runs_against_each_agent(battery: Path) -> None:
    r = run_battery([battery], agents=[CAREFUL, NAIVE], repeat=2)
    keys = [(e.scenario, e.agent_label, e.repetition) for e in r.episodes]
    # grid order: scenario, then agent, then repetition
    assert keys == [
        ("fetch-timeout", "careful", 0),
        ("fetch-timeout", "careful", 1),
        ("fetch-timeout", "naive", 0),
        ("fetch-timeout", "naive", 1),
        ("save-after-500", "careful", 0),
        ("save-after-500", "careful", 1),
        ("save-after-500", "naive", 0),
        ("save-after-500", "naive", 1),
    ]
    assert len({e.key for e in r.episodes}) == 8
    # both agents meet the same faults: the same episode seeds
    seeds = {(e.scenario, e.repetition): set() for e in r.episodes}  # type: dict[tuple[str, int], set[int]]
    for e in r.episodes:
        seeds[(e.scenario, e.repetition)].add(e.seed)
    assert all(len(s) == 1 for s in seeds.values())
    cells = {(c.scenario, agent_label(c.agent)): c for c in r.summary.cells}
    assert len(cells) == 4
    assert cells[("save-after-500", "careful")].passes == 2
    assert cells[("save-after-500", "naive")].passes == 0
    assert "no_duplicate_writes" in cells[("save-after-500", "naive")].failed_checks
    d = r.to_dict()
    assert {c["agent"] for c in d["summary"]["cells"]} == {CAREFUL, NAIVE}
    # the gate's absolute rule still applies, and names the agent
    assert not r.ok and len(r.verdict.duplicate_writes) == 2
    assert all("[naive]" in x for x in r.verdict.duplicate_writes)


def test_agent_overrides_agents_and_the_scenario_default(battery: Path) -> None:
    r = run_battery([battery], agent=GIVE_UP, agents=[CAREFUL, NAIVE])
    assert {e.agent for e in r.episodes} == {GIVE_UP}
    r = run_battery([battery])
    assert {e.agent for e in r.episodes} == {CAREFUL}


def test_metamorphic_reference_is_the_same_agent(battery: Path) -> None:
    r = run_battery([battery / "save.yaml"], agents=[CAREFUL, NAIVE], perturbations=[0.0, 1.0])
    perturbed = [e for e in r.episodes if e.epsilon > 0]
    assert len(perturbed) == 2
    for e in perturbed:
        chk = next(c for c in e.checks if c["name"] == "metamorphic_end_state")
        # each agent reaches its own end state again (naive refunds twice both times): same as its own reference
        assert chk["passed"], (e.agent, chk)


def test_replay_names_the_agent_and_reproduces_the_episode(
    battery: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = run_battery([battery / "save.yaml"], agents=[CAREFUL, NAIVE])
    naive_ep = next(e for e in r.episodes if e.agent == NAIVE)
    careful_ep = next(e for e in r.episodes if e.agent == CAREFUL)
    argv = shlex.split(naive_ep.replay)
    assert argv[argv.index("--agent") + 1] == NAIVE
    # the scenario's own agent needs no --agent
    assert "--agent" not in shlex.split(careful_ep.replay)
    out = tmp_path / "replay.json"
    assert main([*argv[1:], "--json", str(out), "-q"]) == 1
    (again,) = load_results(out)["episodes"]
    assert (again["agent"], again["seed"], again["passed"]) == (NAIVE, naive_ep.seed, False)


def test_shards_of_several_agents_merge_to_the_whole(battery: Path, tmp_path: Path) -> None:
    common = ["run", str(battery), "--agents", f"{CAREFUL},{NAIVE}", "--repeat", "2", "-q"]
    assert main([*common, "--json", str(tmp_path / "one.json")]) == 1
    for i in (1, 2, 3):
        main([*common, "--shard", f"{i}/3", "--json", str(tmp_path / f"s{i}.json")])
    one = load_results(tmp_path / "one.json")
    merged = merge_results([load_results(tmp_path / f"s{i}.json") for i in (1, 2, 3)])
    key = [(e.scenario, e.agent, e.repetition, e.passed) for e in merged.episodes]
    assert key == [(e["scenario"], e["agent"], e["repetition"], e["passed"]) for e in one["episodes"]]
    assert merged.summary.matrix == one["summary"]["matrix"]
    # shards of different agent lists are not one battery
    other = ["run", str(battery), "--agents", CAREFUL, "--repeat", "2", "-q", "--json", str(tmp_path / "c.json")]
    main(other)
    r = run_cli(["merge", str(tmp_path / "one.json"), str(tmp_path / "c.json")])
    assert r.code == 2
    assert_clear(r.err, names=["different agents"])


def test_junit_names_the_agent_when_there_are_several(battery: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.xml"
    main(["run", str(battery / "save.yaml"), "--agents", f"{CAREFUL},{NAIVE}", "--junit", str(out), "-q"])
    names = [c.get("name") for c in ET.parse(out).getroot().iter("testcase")]
    assert names == ["save-after-500 [careful, rep 0]", "save-after-500 [naive, rep 0]"]
    main(["run", str(battery / "save.yaml"), "--junit", str(out), "-q"])
    assert [c.get("name") for c in ET.parse(out).getroot().iter("testcase")] == ["save-after-500 [rep 0]"]


def test_baseline_is_per_agent_and_old_baselines_still_read(battery: Path) -> None:
    r = run_battery([battery / "save.yaml"], agents=[CAREFUL, GIVE_UP])
    base = make_baseline(r.summary)
    assert set(base["attempts"]["save-after-500"]) == {CAREFUL, GIVE_UP}
    careful_attempts = base["attempts"]["save-after-500"][CAREFUL]["eps=0,lam=0"]
    # careful needs more attempts than give_up: against give_up's figures only careful's cell rose
    base["attempts"]["save-after-500"][CAREFUL] = base["attempts"]["save-after-500"][GIVE_UP]
    _, v = summarize(r.episodes, r.config, baseline=base)
    assert len(v.regressions) == 1 and "[careful]" in v.regressions[0]
    # a baseline written before agents: one figure per scenario cell, for any agent
    old: dict[str, Any] = {"kind": "chaoskit-baseline", "attempts": {"save-after-500": {"eps=0,lam=0": 1.0}}}
    _, v = summarize(r.episodes, r.config, baseline=old)
    assert len(v.regressions) == 2
    old["attempts"]["save-after-500"]["eps=0,lam=0"] = careful_attempts
    assert summarize(r.episodes, r.config, baseline=old)[1].regressions == []


def test_results_file_without_agents_in_cells_reads_as_old_baseline(battery: Path, tmp_path: Path) -> None:
    r = run_battery([battery / "save.yaml"])
    data = r.to_dict()
    for c in data["summary"]["cells"]:
        del c["agent"]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(data))
    base = load_baseline(p)
    assert base is not None and base["attempts"] == {
        "save-after-500": {"eps=0,lam=0": r.summary.cells[0].mean_attempts}
    }


def test_agents_option_and_its_errors(battery: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(["run", str(battery), "--agents", f"{CAREFUL},{NAIVE}", "--json", "/dev/null"])
    assert r.code == 1, r.err
    for bad, names in (
        ([f"{CAREFUL},,{NAIVE}"], ["--agents", "separated by commas"]),
        ([f"{W}:nobody"], ["nobody", W]),
    ):
        r = run_cli(["run", str(battery), "--agents", *bad, "-q"])
        assert r.code == 2
        assert_clear(r.err, names=names)
    r = run_cli(["run", str(battery), "--agents", CAREFUL, "--agent", NAIVE, "-q"])
    assert r.code == 2
    assert_clear(r.err, names=["--agent", "--agents", "not both"])


BATTERY_FILE = f"""\
battery:
  - scenarios: scenarios/save.yaml
    agents: [{CAREFUL}, {NAIVE}]
  - scenarios: [scenarios/fetch.yaml]
    agents: [{CAREFUL}]
"""


def test_battery_file_and_directory_with_battery_yaml(battery: Path, tmp_path: Path) -> None:
    write(tmp_path, "battery.yaml", BATTERY_FILE)
    for target in (tmp_path, tmp_path / "battery.yaml"):
        r = run_cli(["run", str(target), "--json", str(tmp_path / "r.json"), "-q"])
        assert r.code == 1, r.err  # naive repeats the write
        data = load_results(tmp_path / "r.json")
        assert [(e["scenario"], agent_label(e["agent"])) for e in data["episodes"]] == [
            ("save-after-500", "careful"),
            ("save-after-500", "naive"),
            ("fetch-timeout", "careful"),
        ]
        assert data["config"]["battery"] == str(tmp_path / "battery.yaml")
    # --agents overrides the file's agents
    r = run_cli(["run", str(tmp_path), "--agents", CAREFUL, "--json", str(tmp_path / "r.json"), "-q"])
    assert r.code == 0, r.out + r.err
    assert {e["agent"] for e in load_results(tmp_path / "r.json")["episodes"]} == {CAREFUL}


@pytest.mark.parametrize(
    ("text", "line", "names"),
    [
        ("battery: []\n", 1, ["battery", "'battery:' list"]),
        ("battery:\n  - scenario: x.yaml\n", 2, ["battery[0]", "{scenarios: PATHS"]),
        ("battery:\n  - scenarios: scenarios\n    agent: [a:b]\n", 3, ["battery[0].agent", "did you mean 'agents'"]),
        ("battery:\n  - scenarios: scenarios\n    agents: []\n", 3, ["battery[0].agents", "a list of module:factory"]),
        ("battery:\n  - scenarios: missing.yaml\n", None, ["missing.yaml", "file not found"]),
        ("battery:\n  - scenarios: scenarios\nexpected: e.yaml\n", 3, ["expected", "did you mean 'expect'"]),
    ],
)
def test_bad_battery_file(battery: Path, tmp_path: Path, text: str, line: int | None, names: list[str]) -> None:
    p = write(tmp_path, "battery.yaml", text)
    r = run_cli(["run", str(p), "-q"])
    assert r.code == 2, r.out + r.err
    assert_clear(r.err, names=[*([f"{p}:{line}"] if line else []), *names])


def test_html_report_is_written(battery: Path, tmp_path: Path) -> None:
    out = tmp_path / "report" / "r.html"
    r = run_cli(["run", str(battery / "save.yaml"), "--agents", f"{CAREFUL},{NAIVE}", "--html", str(out), "-q"])
    assert r.code == 1
    assert f"HTML report: {out}" in r.out
    page = out.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "save-after-500" in page


def test_plain_scenario_default_agent_still_runs_alone(tmp_path: Path) -> None:
    p = write(tmp_path / "scenarios", "plain.yaml", PLAIN)
    r = run_battery([p])
    assert [e.agent for e in r.episodes] == [CAREFUL] and r.ok


def test_results_files_check_the_new_episode_fields(battery: Path, tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    main(["run", str(battery / "save.yaml"), "--json", str(p), "-q"])
    data = json.loads(p.read_text())
    # a results file written before these fields still loads
    for e in data["episodes"]:
        del e["tags"], e["domain"], e["faults"]
    p.write_text(json.dumps(data))
    assert load_results(p)["episodes"]
    data["episodes"][0]["tags"] = "write"
    p.write_text(json.dumps(data))
    r = run_cli(["merge", str(p), "-q"])
    assert r.code == 2
    assert_clear(r.err, names=["episodes[0].tags", "a list of strings"])


def test_python_in_an_agent_command_is_the_batterys_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a PATH whose `python` is another interpreter (here one that always fails): `python agent.py` in a battery
    # means the interpreter chaoskit runs on, as `python` in a scenario's command: does
    other = tmp_path / "bin"
    other.mkdir()
    for name in ("python", "python3"):
        fake = other / name
        fake.write_text("#!/bin/sh\necho 'not the battery python' >&2\nexit 3\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{other}:{os.environ.get('PATH', '')}")
    agent = tmp_path / "agent.py"
    seen = tmp_path / "interpreter.txt"
    agent.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.executable)\nprint('hello')\n")
    scenario = tmp_path / "hello.yaml"
    scenario.write_text('name: hello\ntask: "say hello"\nsuccess:\n  output_contains: ["hello"]\n')
    for cmd in (f"python {agent}", f"python3 {agent}"):
        result = run_battery([scenario], agent=cmd)
        (ep,) = result.episodes
        assert ep.passed, (ep.outcome, ep.error, ep.failed_checks())
        assert seen.read_text() == sys.executable
        seen.unlink()
