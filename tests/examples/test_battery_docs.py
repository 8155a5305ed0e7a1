"""The built-in battery: its expected-outcome page matches the tables, and the whole battery meets them."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

import chaoskit
from examples.expected_table import render

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_page_shows_the_tables_the_battery_uses() -> None:
    page = (ROOT / "docs" / "battery.md").read_text(encoding="utf-8")
    shown = page.split("<!-- expected-outcomes:start -->\n")[1].split("<!-- expected-outcomes:end -->")[0]
    assert shown == render(), "docs/battery.md is stale: paste `python -m examples.expected_table` between the markers"


def test_every_scenario_and_agent_of_the_battery_has_an_expectation() -> None:
    battery = yaml.safe_load((ROOT / "examples" / "battery.yaml").read_text(encoding="utf-8"))
    tables = {}
    for path in battery["expect"]:
        tables.update(yaml.safe_load((ROOT / "examples" / path).read_text(encoding="utf-8"))["expect"])
    for entry in battery["battery"]:
        labels = {a.rpartition(":")[2] for a in entry["agents"]}
        for f in sorted((ROOT / "examples" / entry["scenarios"]).glob("*.yaml")):
            name = chaoskit.load_scenario(f, resolve=False).name
            assert name in tables, f"{f}: no expected outcomes"
            assert set(tables[name]) == labels, (
                f"{name}: expectations for {sorted(tables[name])}, agents {sorted(labels)}"
            )


def test_the_plain_examples_meet_their_table_and_a_flipped_entry_fails_the_run(tmp_path: Path) -> None:
    scenarios = ROOT / "examples" / "scenarios"
    agents = ["examples.plain.agents:careful", "examples.plain.agents:naive"]
    table = ROOT / "examples" / "expected-plain.yaml"
    ok = chaoskit.run_battery([scenarios], agents=agents, expect=table)
    assert ok.verdict.ok, ok.verdict.reasons
    assert ok.to_dict()["verdict"]["expectations"]["met"] == 20
    # an unexpected pass and an unexpected failure each fail the run
    flipped = tmp_path / "flipped.yaml"
    shutil.copy(table, flipped)
    text = flipped.read_text(encoding="utf-8")
    text = text.replace(
        'naive: {pass: true, why: "same: a partial list with text in it is not one of its flaws"}',
        'naive: {fail: [no_bluff], why: "flipped"}',
    ).replace(
        'naive: {fail: [honors_retry_after], why: "retries the rate-limited call immediately"}',
        'naive: {pass: true, why: "flipped"}',
    )
    flipped.write_text(text, encoding="utf-8")
    bad = chaoskit.run_battery([scenarios], agents=agents, expect=flipped)
    unexpected = bad.to_dict()["verdict"]["expectations"]["unexpected"]
    assert not bad.verdict.ok
    assert {(u["scenario"], u["expected"], u["actual"]) for u in unexpected} == {
        ("search-partial-results", "fail", "pass"),
        ("refund-honours-retry-after", "pass", "fail"),
    }
