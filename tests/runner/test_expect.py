"""Expected-outcome tables (--expect): loading them, judging a battery against them, and the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest
from _badinput import assert_clear, run_cli
from _battery_world import FETCH, SAVE, W, write

from chaoskit._errors import PlanError
from chaoskit.report._json import load_results
from chaoskit.runner._battery import run_battery
from chaoskit.runner._expect import load_expectations

CAREFUL, NAIVE, GIVE_UP = f"{W}:careful", f"{W}:naive", f"{W}:give_up"
AGENTS = f"{CAREFUL},{NAIVE},{GIVE_UP}"

TABLE = """\
expect:
  save-after-500:
    careful: pass
    naive: {fail: [no_duplicate_writes], why: "retries the save without a key"}
    give_up: {fail: [output_contains], why: "stops at the first 500"}
  fetch-timeout:
    careful: {pass: true, why: "retries the read"}
    naive: pass
    give_up: {fail: [output_contains]}
"""


@pytest.fixture
def battery(tmp_path: Path) -> Path:
    d = tmp_path / "scenarios"
    write(d, "save.yaml", SAVE)
    write(d, "fetch.yaml", FETCH)
    return d


def test_every_expectation_met_passes_despite_the_absolute_rule(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "expected.yaml", TABLE)
    out = tmp_path / "r.json"
    r = run_cli(["run", str(battery), "--agents", AGENTS, "--expect", str(table), "--json", str(out), "-q"])
    assert r.code == 0, r.out + r.err
    assert r.out.strip() == "verdict: PASS"
    v = load_results(out)["verdict"]
    assert v["ok"] and v["reasons"] == []
    # the three failing pairs the table expected, and only those, are marked so that reports show them as expected
    assert v["expectations"] == {
        "file": str(table),
        "met": 6,
        "unexpected": [],
        "not_run": 0,
        "expected_fail": [["fetch-timeout", GIVE_UP], ["save-after-500", GIVE_UP], ["save-after-500", NAIVE]],
    }
    # the repeated write is still reported, it is just expected
    assert v["duplicate_writes"]
    # without the table, the absolute rule fails the same run
    assert run_cli(["run", str(battery), "--agents", AGENTS, "-q"]).code == 1


def test_unexpected_outcomes_fail_and_are_listed(battery: Path, tmp_path: Path) -> None:
    wrong = (
        TABLE.replace("careful: pass", "careful: {fail: [end_state]}")  # careful passes: unexpected pass
        .replace("naive: pass", "naive: {fail: [no_retry_storm]}")
        .replace("fail: [output_contains], why", "fail: [output_contains, no_bluff], why")
    )
    table = write(tmp_path, "expected.yaml", wrong)
    out = tmp_path / "r.json"
    r = run_cli(["run", str(battery), "--agents", AGENTS, "--expect", str(table), "--json", str(out), "-q"])
    assert r.code == 1, r.out + r.err
    exp = load_results(out)["verdict"]["expectations"]
    got = {(u["scenario"], u["agent"]): u for u in exp["unexpected"]}
    assert set(got) == {("save-after-500", "careful"), ("fetch-timeout", "naive"), ("save-after-500", "give_up")}
    assert got[("save-after-500", "careful")]["actual"] == "pass"
    assert got[("save-after-500", "careful")]["expected"] == "fail"
    assert got[("fetch-timeout", "naive")]["actual"] == "pass"
    # give_up failed, but not on no_bluff: the check named is the one that did not fail
    gu = got[("save-after-500", "give_up")]
    assert (gu["expected"], gu["actual"], gu["checks"]) == ("fail", "fail", ["no_bluff"])
    assert gu["why"] == "stops at the first 500" and "replay: chaoskit run" in gu["detail"]
    assert exp["met"] == 3
    # each unexpected outcome is a line of the verdict
    assert "save-after-500 [careful]: expected fail, got pass" in r.out
    assert "save-after-500 [give_up]: expected fail, got fail: failed, but not on no_bluff" in r.out


def test_a_run_without_an_entry_is_unexpected(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "expected.yaml", "expect:\n  save-after-500:\n    careful: pass\n")
    r = run_battery([battery], agents=[CAREFUL], expect=table)
    assert not r.ok
    exp = r.verdict.expectations
    assert exp is not None and exp["met"] == 1
    (u,) = exp["unexpected"]
    assert (u["scenario"], u["agent"], u["expected"], u["actual"]) == ("fetch-timeout", "careful", None, "missing")
    assert "no entry" in r.verdict.reasons[0]


def test_filtered_out_entries_are_not_run(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "expected.yaml", TABLE)
    r = run_battery([battery], agents=[CAREFUL, NAIVE], expect=table, tags=[["catalog"]])
    exp = r.verdict.expectations
    assert exp is not None
    # fetch-timeout's careful and naive ran; its give_up and all of save-after-500 did not
    assert (exp["met"], exp["unexpected"], exp["not_run"]) == (2, [], 4)
    assert r.ok


def test_the_agent_may_be_named_by_its_reference(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "e.yaml", f"expect:\n  save-after-500:\n    {CAREFUL}: pass\n")
    r = run_battery([battery / "save.yaml"], expect=table)
    assert r.ok and r.verdict.expectations == {
        "file": str(table),
        "met": 1,
        "unexpected": [],
        "not_run": 0,
        "expected_fail": [],
    }


def test_a_scenario_the_battery_does_not_have_is_an_error(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "e.yaml", "expect:\n  save-after-50:\n    careful: pass\n")
    r = run_cli(["run", str(battery), "--expect", str(table), "-q"])
    assert r.code == 2
    assert_clear(r.err, names=[f"{table}:2", "save-after-50", "did you mean 'save-after-500'"])


@pytest.mark.parametrize(
    ("text", "line", "names"),
    [
        ("save-after-500: {careful: pass}\n", 1, ["'expect:'"]),
        ("expect: [a]\n", 1, ["maps scenario names"]),
        ("expect:\n  s: pass\n", 2, ["expect.s", "each scenario maps agents"]),
        ("expect:\n  s:\n    careful: passes\n", 3, ["expect.s.careful", "pass, fail, {pass: true"]),
        ("expect:\n  s:\n    careful: {fail: [no_dup_writes]}\n", 3, ["no_dup_writes", "no_duplicate_writes"]),
        ("expect:\n  s:\n    careful: {pass: true, fail: [end_state]}\n", 3, ["exactly one of pass and fail"]),
        ("expect:\n  s:\n    careful: {pass: false}\n", 3, ["pass: true"]),
        ("expect:\n  s:\n    careful: {fail: [], reason: x}\n", 3, ["unknown key 'reason'"]),
        ("expect:\n  s:\n    careful: {fail: [end_state], why: 3}\n", 3, ["why is a sentence"]),
        ("expect: {}\nagents: [a]\n", 2, ["unknown key 'agents'"]),
    ],
)
def test_bad_tables(tmp_path: Path, text: str, line: int, names: list[str]) -> None:
    p = write(tmp_path, "e.yaml", text)
    with pytest.raises(PlanError) as err:
        load_expectations(p)
    assert_clear(str(err.value), names=[f"{p}:{line}", *names])


def test_missing_table_file(battery: Path, tmp_path: Path) -> None:
    r = run_cli(["run", str(battery), "--expect", str(tmp_path / "nope.yaml"), "-q"])
    assert r.code == 2
    assert_clear(r.err, names=["nope.yaml", "file not found"])


def test_battery_file_expect_is_used_unless_expect_is_given(battery: Path, tmp_path: Path) -> None:
    write(tmp_path, "expected.yaml", TABLE)
    write(tmp_path, "wrong.yaml", TABLE.replace("careful: pass", "careful: {fail: [end_state]}"))
    write(
        tmp_path,
        "battery.yaml",
        f"battery:\n  - scenarios: scenarios\n    agents: [{CAREFUL}, {NAIVE}, {GIVE_UP}]\nexpect: expected.yaml\n",
    )
    out = tmp_path / "r.json"
    r = run_cli(["run", str(tmp_path), "--json", str(out), "-q"])
    assert r.code == 0, r.out + r.err
    assert load_results(out)["config"]["expect"] == str(tmp_path / "expected.yaml")
    r = run_cli(["run", str(tmp_path), "--expect", str(tmp_path / "wrong.yaml"), "-q"])
    assert r.code == 1 and "save-after-500 [careful]: expected fail, got pass" in r.out
    assert "the absolute rule" not in r.out


def test_merge_judges_the_shards_against_the_table(battery: Path, tmp_path: Path) -> None:
    table = write(tmp_path, "expected.yaml", TABLE)
    for i in (1, 2):
        run_cli(["run", str(battery), "--agents", AGENTS, "--shard", f"{i}/2", "--json", str(tmp_path / f"{i}.json")])
    shards = [str(tmp_path / f"{i}.json") for i in (1, 2)]
    assert run_cli(["merge", *shards, "-q"]).code == 1  # the absolute rule
    r = run_cli(["merge", *shards, "--expect", str(table), "--json", str(tmp_path / "m.json"), "-q"])
    assert r.code == 0, r.out + r.err
    assert load_results(tmp_path / "m.json")["verdict"]["expectations"]["met"] == 6
