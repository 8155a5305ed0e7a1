"""Which files a directory run loads, and the --tags filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from _badinput import assert_clear, run_cli
from _battery_world import FETCH, PLAIN, SAVE, write

from chaoskit._errors import ChaoskitError, PlanError
from chaoskit.runner._battery import run_battery
from chaoskit.scenarios._battery_file import filter_tags, parse_tags, select
from chaoskit.scenarios._scenario import load_battery, load_scenarios

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: scenarios in a scenarios/ folder and one elsewhere with a task:, plus other YAML."""
    write(tmp_path / "shop" / "scenarios", "save.yaml", SAVE)
    write(tmp_path / "catalog", "fetch.yaml", FETCH)
    write(tmp_path, "docker-compose.yaml", "services:\n  jaeger:\n    image: jaegertracing/all-in-one\n")
    write(tmp_path / "shop", "plan.yaml", "seed: 1\nfaults:\n  - {type: timeout, tool: fetch}\n")
    write(tmp_path / "profiles", "gentle.yml", "name: gentle\nweights: {timeout: 1}\n  task: indented\n")
    return tmp_path


def test_a_directory_loads_its_scenarios_and_counts_the_rest(project: Path) -> None:
    scenarios, skipped = load_scenarios([project])
    assert sorted(s.name for s in scenarios) == ["fetch-timeout", "save-after-500"]
    assert sorted(p.name for p in skipped) == ["docker-compose.yaml", "gentle.yml", "plan.yaml"]
    r = run_cli(["run", str(project), "-q"])
    assert r.code == 0, r.out + r.err
    assert "skipped 3 YAML files that are not scenarios" in r.err


def test_one_skipped_file_is_said_in_the_singular(tmp_path: Path) -> None:
    write(tmp_path / "scenarios", "save.yaml", SAVE)
    write(tmp_path, "plan.yaml", "seed: 1\nfaults: []\n")
    r = run_cli(["run", str(tmp_path), "-q"])
    assert "skipped 1 YAML file that is not scenarios" in r.err


def test_a_file_in_a_scenarios_folder_that_fails_to_load_is_an_error(project: Path) -> None:
    bad = write(project / "shop" / "scenarios", "notes.yaml", "title: not a scenario\n")
    with pytest.raises(PlanError) as err:
        load_battery([project])
    assert_clear(str(err.value), names=[str(bad), "title"])
    r = run_cli(["run", str(project), "-q"])
    assert r.code == 2 and str(bad) in r.err


def test_a_broken_file_with_a_task_key_is_an_error(project: Path) -> None:
    bad = write(project / "catalog", "broken.yaml", 'name: broken\ntask: "x"\nretries: 3\n')
    r = run_cli(["run", str(project), "-q"])
    assert r.code == 2
    assert_clear(r.err, names=[f"{bad}:3", "retries"])


def test_the_directory_named_scenarios_loads_every_file(tmp_path: Path) -> None:
    d = tmp_path / "scenarios"
    write(d, "save.yaml", SAVE)
    write(d / "more", "plain.yaml", PLAIN)
    assert sorted(s.name for s in load_battery([d])) == ["plain-save", "save-after-500"]
    # the shipped examples still load as they are documented
    assert load_battery([ROOT / "examples" / "scenarios"], resolve=False)


def test_a_large_yaml_file_that_is_not_a_scenario_is_skipped_unparsed(tmp_path: Path) -> None:
    write(tmp_path / "scenarios", "save.yaml", SAVE)
    # larger than any scenario may be (parsing it would be an error), and no top-level task: key
    big = "data:\n" + "".join(f"  - {{id: {i}, task: work}}\n" for i in range(60_000))
    write(tmp_path / "fixtures", "big.yaml", big)
    scenarios, skipped = load_scenarios([tmp_path])
    assert [s.name for s in scenarios] == ["save-after-500"] and [p.name for p in skipped] == ["big.yaml"]


def test_a_directory_without_scenarios_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "plan.yaml", "seed: 1\nfaults: []\n")
    r = run_cli(["run", str(tmp_path), "-q"])
    assert r.code == 2
    assert_clear(r.err, names=[str(tmp_path), "1 YAML file", "scenarios/ folder", "'task:'"])


def test_files_and_globs_named_directly_are_always_loaded(project: Path) -> None:
    with pytest.raises(PlanError):
        load_battery([project / "docker-compose.yaml"])
    assert [s.name for s in load_battery([str(project / "catalog" / "*.yaml")])] == ["fetch-timeout"]


def test_readme_commands_keep_working() -> None:
    naive = run_cli(["run", str(ROOT / "examples" / "scenarios"), "--agent", "examples.plain.agents:naive", "-q"])
    assert naive.code == 1 and "repeated an irreversible write" in naive.out


# --- --tags ----------------------------------------------------------------------------------------------


@pytest.fixture
def tagged(tmp_path: Path) -> Path:
    d = tmp_path / "scenarios"
    write(d, "save.yaml", SAVE)  # domain:shop, fault:http, difficulty:easy, write
    write(d, "fetch.yaml", FETCH)  # domain:catalog, fault:timeout, difficulty:medium
    write(d, "plain.yaml", PLAIN)  # smoke
    return d


def _names(d: Path, *groups: str) -> list[str]:
    return sorted(s.name for s in filter_tags(select([d]).scenarios, parse_tags(list(groups))))


def test_tags_any_within_a_group_and_all_between_groups(tagged: Path) -> None:
    assert _names(tagged, "smoke,write") == ["plain-save", "save-after-500"]
    # a bare word matches the value of a prefixed tag
    assert _names(tagged, "shop") == ["save-after-500"]
    assert _names(tagged, "fault:timeout") == ["fetch-timeout"]
    assert _names(tagged, "shop,catalog", "difficulty:medium") == ["fetch-timeout"]
    assert _names(tagged) == ["fetch-timeout", "plain-save", "save-after-500"]
    # a prefixed tag matches only itself
    assert _names(tagged, "domain:http,smoke") == ["plain-save"]


def test_tags_on_the_command_line(tagged: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = run_cli(["run", str(tagged), "--tags", "catalog,smoke", "--tags", "medium", "--json", str(out), "-q"])
    assert r.code == 0, r.err
    assert '"scenario": "fetch-timeout"' in out.read_text() and "plain-save" not in out.read_text()


def test_an_empty_selection_names_the_tags(tagged: Path) -> None:
    r = run_cli(["run", str(tagged), "--tags", "travel,hard", "-q"])
    assert r.code == 2
    assert_clear(r.err, names=["--tags travel,hard", "selects none of the 3", "domain:catalog", "smoke", "write"])
    with pytest.raises(ChaoskitError, match="names no tag"):
        parse_tags([" , "])
    with pytest.raises(ChaoskitError, match="selects none"):
        run_battery([tagged], tags=[["nothing"]])
