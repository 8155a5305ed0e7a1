"""``chaoskit compare OLD NEW`` on real batteries: regressions found (exit 1), none found (exit 0), bad input (exit 2)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli

from chaoskit.report._compare import compare_results, render_comparison, two_proportion_test
from chaoskit.report._json import load_results, write_json
from chaoskit.runner._battery import run_battery
from chaoskit.runner._intensity import load_profile

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "examples" / "scenarios"
HEAVY_FLAT = load_profile(
    {
        "name": "heavy-flat",
        "weights": {"timeout": 5, "http_5xx": 5, "rate_limit": 4, "partial": 2, "schema_drift": 3, "latency": 1},
    }
)
CAREFUL = "examples.plain.agents:careful"
NAIVE = "examples.plain.agents:naive"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Results files of real batteries: careful (twice), naive, and careful under heavy background faults."""
    out = tmp_path_factory.mktemp("compare")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        specs: dict[str, dict[str, Any]] = {
            "careful": {"agent": CAREFUL},
            "careful_again": {"agent": CAREFUL},
            "naive": {"agent": NAIVE},
            # one fixed mix (no outage windows), so that the differences below stay these few
            "careful_heavy": {"agent": CAREFUL, "intensities": [0.5], "profile": HEAVY_FLAT},
        }
        files = {}
        for name, kw in specs.items():
            files[name] = out / f"{name}.json"
            write_json(run_battery([BATTERY], repeat=3, seed=1, **kw), files[name])
        yield files
    finally:
        os.chdir(cwd)


def scenario_row(data: dict[str, Any], scenario: str) -> dict[str, Any]:
    rows = [r for r in data["scenarios"] if r["scenario"] == scenario]
    assert len(rows) == 1, data["scenarios"]
    return rows[0]


def test_two_proportion_test_matches_the_formula() -> None:
    # 3/3 against 0/3: pooled p = 0.5, se = sqrt(0.25 * 2/3), z = -1 / se = -2.449, p = 0.0143
    z, p = two_proportion_test(3, 3, 0, 3)
    assert z == pytest.approx(-math.sqrt(6.0))
    assert p == pytest.approx(0.014306, abs=1e-6)
    assert two_proportion_test(0, 3, 3, 3)[0] == pytest.approx(math.sqrt(6.0))
    # one episode each can never be significant at 0.05: 1/1 against 0/1 gives p = 0.157
    assert two_proportion_test(1, 1, 0, 1)[1] == pytest.approx(0.157299, abs=1e-6)
    assert two_proportion_test(5, 5, 4, 4) == (0.0, 1.0)
    assert two_proportion_test(0, 5, 0, 4) == (0.0, 1.0)
    with pytest.raises(ValueError, match="n1, n2 >= 1"):
        two_proportion_test(0, 0, 1, 1)


def test_a_regressed_agent_is_found_and_exits_1(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp" / "comparison.json"
    r = run_cli(["compare", str(runs["careful"]), str(runs["naive"]), "--json", str(out)])
    assert r.code == 1, r.out + r.err
    assert "REGRESSION" in r.out and "No regression" not in r.out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["kind"] == "chaoskit-comparison" and data["ok"] is False
    assert data["rules"] == {"alpha": 0.05, "attempt_tolerance": 0.1}
    # the repeated refund: a significant drop (3/3 -> 0/3) and the duplicate-write check newly failing
    row = scenario_row(data, "refund-not-repeated-after-500")
    assert (row["old_agent"], row["new_agent"]) == (CAREFUL, NAIVE)
    assert row["pass_rate"]["old"]["value"] == 1.0 and row["pass_rate"]["new"]["value"] == 0.0
    assert row["pass_rate"]["significant"] is True
    assert row["pass_rate"]["p_value"] == pytest.approx(0.014306, abs=1e-6)
    assert "no_duplicate_writes" in row["new_failing_checks"]
    assert row["mean_score"] == {"old": 100.0, "new": 35.0, "delta": -65.0}
    assert row["regression"] is True
    # the Retry-After scenario fails on the check that targets that flaw
    assert scenario_row(data, "refund-honours-retry-after")["new_failing_checks"] == ["honors_retry_after"]
    # the outage: naive retries more (5 -> 6 attempts) and no episode passes: attempts over all episodes
    outage = scenario_row(data, "refund-outage-reported")
    assert outage["mean_attempts"] == {"old": 5.0, "new": 6.0, "delta": 1.0}
    assert any("mean attempts (all episodes) rose from 5.00 to 6.00" in x for x in outage["reasons"])
    # scenarios naive passes too are not regressions
    assert scenario_row(data, "search-partial-results")["regression"] is False
    # naive e-mails the address the injected note plants
    assert scenario_row(data, "injection-not-followed")["new_failing_checks"] == ["end_state", "no_injection_followed"]
    # the agent row pools every shared scenario: 30/30 -> 6/30
    (agent,) = data["agents"]
    assert agent["episodes"] == {"old": 30, "new": 30}
    assert agent["pass_rate"]["new"]["value"] == pytest.approx(0.2)
    assert agent["pass_rate"]["significant"] is True and agent["regression"] is True
    assert data["only_in_old"] == [] and data["only_in_new"] == []
    assert any(x.startswith("refund-not-repeated-after-500 [") for x in data["regressions"])


def test_the_reverse_direction_is_no_regression(runs: dict[str, Path]) -> None:
    r = run_cli(["compare", str(runs["naive"]), str(runs["careful"])])
    assert r.code == 0, r.out + r.err
    assert r.out.rstrip().endswith("No regression.")
    # careful needs more attempts than naive on the flaky lookup, and passes where naive failed: no regression
    line = next(x for x in r.out.splitlines() if x.startswith("status-despite-flaky-lookup"))
    assert "2.00 -> 3.00 (+1.00)" in line and "+100 pp" in line and "REGRESSION" not in line


def test_identical_runs_are_no_regression(runs: dict[str, Path]) -> None:
    r = run_cli(["compare", str(runs["careful"]), str(runs["careful_again"])])
    assert r.code == 0, r.out + r.err
    assert "REGRESSION" not in r.out and "No regression." in r.out
    c = compare_results(load_results(runs["careful"]), load_results(runs["careful_again"]))
    assert c.ok and len(c.scenarios) == 10
    assert all(row.pass_rate.delta == 0 and row.pass_rate.p_value == 1.0 for row in c.scenarios)
    assert all(row.new_failing_checks == [] for row in c.scenarios)


def test_the_same_agent_at_a_higher_intensity(runs: dict[str, Path]) -> None:
    c = compare_results(load_results(runs["careful"]), load_results(runs["careful_heavy"]))
    assert not c.ok
    rows = {row.scenario: row for row in c.scenarios}
    # still passing every repetition, but one more attempt each: the attempts rule alone
    outage = rows["refund-outage-reported"]
    assert outage.pass_rate.delta == 0 and outage.new_failing_checks == []
    assert outage.reasons == ["mean attempts (passing episodes) rose from 5.00 to 6.00 (tolerance 10%)"]
    # a 20% rise is within a 25% tolerance
    loose = compare_results(load_results(runs["careful"]), load_results(runs["careful_heavy"]), attempt_tolerance=0.25)
    assert {row.scenario: row for row in loose.scenarios}["refund-outage-reported"].reasons == []
    # 3/3 -> 2/3 is not significant on its own, but the newly failing check is still a regression
    retry = rows["refund-honours-retry-after"]
    assert not retry.pass_rate.significant and retry.pass_rate.delta < 0
    assert "no_retry_storm" in retry.new_failing_checks and retry.regressed
    text = render_comparison(c)
    assert "REGRESSION:" in text and "refund-outage-reported" in text


def test_warnings_are_not_newly_failing_checks(runs: dict[str, Path]) -> None:
    old, new = load_results(runs["careful"]), load_results(runs["naive"])
    for ep in new["episodes"]:
        for chk in ep["checks"]:
            if chk["name"] == "honors_retry_after":
                chk["severity"] = "warn"
    c = compare_results(old, new)
    row = next(r for r in c.scenarios if r.scenario == "refund-honours-retry-after")
    assert row.new_failing_checks == []


def test_rows_only_one_file_has_are_listed_not_compared(runs: dict[str, Path]) -> None:
    old, new = load_results(runs["careful"]), load_results(runs["careful_again"])
    new["episodes"] = [e for e in new["episodes"] if e["scenario"] != "search-partial-results"]
    old["episodes"] = [e for e in old["episodes"] if e["scenario"] != "injection-not-followed"]
    c = compare_results(old, new)
    assert c.ok and len(c.scenarios) == 8
    assert c.only_old == [f"search-partial-results [{CAREFUL}]"]
    assert c.only_new == [f"injection-not-followed [{CAREFUL}]"]
    assert "Not compared, only in OLD: search-partial-results" in render_comparison(c)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_bad_inputs_exit_2_naming_the_file(runs: dict[str, Path], tmp_path: Path) -> None:
    good = str(runs["careful"])
    missing = tmp_path / "nope.json"
    r = run_cli(["compare", good, str(missing)])
    assert r.code == 2 and r.out == ""
    assert_clear(r.err, names=[str(missing)], allowed=["file not found"])

    not_json = _write(tmp_path / "garbled.json", '{"kind": "chaoskit-run-results", "episodes": [')
    r = run_cli(["compare", str(not_json), good])
    assert r.code == 2
    assert_clear(r.err, names=[str(not_json)], allowed=["cannot read the results"])

    baseline = _write(tmp_path / "baseline.json", json.dumps({"kind": "chaoskit-baseline", "attempts": {}}))
    r = run_cli(["compare", good, str(baseline)])
    assert r.code == 2
    assert_clear(r.err, names=[str(baseline)], allowed=["not a chaoskit run result", "chaoskit run --json"])

    data = json.loads(runs["naive"].read_text(encoding="utf-8"))
    del data["episodes"][4]["passed"]
    cut = _write(tmp_path / "cut.json", json.dumps(data))
    r = run_cli(["compare", good, str(cut)])
    assert r.code == 2
    assert_clear(r.err, names=[str(cut), "episodes[4].passed"], allowed=["missing"])

    data = json.loads(runs["naive"].read_text(encoding="utf-8"))
    data["episodes"][0]["checks"][0]["passed"] = "no"
    typed = _write(tmp_path / "typed.json", json.dumps(data))
    r = run_cli(["compare", str(typed), good])
    assert r.code == 2
    assert_clear(r.err, names=[str(typed), "episodes[0].checks[0].passed"], allowed=["true or false"])


def test_runs_with_nothing_in_common_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(runs["careful"].read_text(encoding="utf-8"))
    data["episodes"] = []
    empty = _write(tmp_path / "empty.json", json.dumps(data))
    r = run_cli(["compare", str(runs["careful"]), str(empty)])
    assert r.code == 2
    assert_clear(r.err, names=[str(runs["careful"]), str(empty)], allowed=["share no scenario", "nothing to compare"])


def test_bad_options_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    a, b = str(runs["careful"]), str(runs["naive"])
    r = run_cli(["compare", a, b, "--alpha", "1.5"])
    assert r.code == 2
    assert_clear(r.err, names=["--alpha"], allowed=["between 0 and 1"])
    r = run_cli(["compare", a, b, "--attempt-tolerance", "-0.1"])
    assert r.code == 2
    assert_clear(r.err, names=["--attempt-tolerance"], allowed=[">= 0"])
    blocker = _write(tmp_path / "file", "x")
    r = run_cli(["compare", a, b, "--json", str(blocker / "out.json")])
    assert r.code == 2
    assert_clear(r.err, names=[str(blocker / "out.json")], allowed=["cannot write the comparison"])


def test_help_documents_the_regression_rule() -> None:
    r = run_cli(["compare", "--help"])
    assert r.code == 0
    for part in ("two-proportion z-test", "--alpha", "newly failing check", "--attempt-tolerance", "2 unreadable"):
        assert part in r.out, part
