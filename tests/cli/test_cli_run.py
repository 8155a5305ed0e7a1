"""``chaoskit run`` end to end: exit codes, errors, baselines, and command-line agents."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from chaoskit.cli._main import main
from chaoskit.traces._trace import Trace

ROOT = Path(__file__).resolve().parents[2]
BATTERY = ROOT / "examples" / "scenarios"
REFUND = BATTERY / "refund-after-500.yaml"
CLI_AGENT = ROOT / "examples" / "plain" / "cli_agent.py"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def cli_agent(mode: str = "normal", policy: str = "careful") -> str:
    return (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(CLI_AGENT))} --mode {mode} --policy {policy} --task {{task}}"
    )


def test_careful_battery_is_green(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(BATTERY / "refund-*.yaml"), "--repeat", "2", "--intensity", "0,0.1", "--seed", "1", "-v"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verdict: PASS" in out and "reliability surface" in out


def test_naive_agent_fails_the_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = main(["run", str(REFUND), "--agent", "examples.plain.agents:naive", "--junit", str(tmp_path / "j.xml")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "verdict: FAIL" in out and "absolute rule" in out
    assert "replay: chaoskit run" in out and "--episode-seed" in out
    assert (tmp_path / "j.xml").exists()


def test_bad_scenario_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: t\nagent: examples.plain.agents:careful\nsuccess: {checks: [no_bluf]}\n")
    rc = main(["run", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "bad.yaml:4: success.checks: unknown check 'no_bluf'" in err


def test_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", str(REFUND), "--intensity", "0,2"])
    with pytest.raises(SystemExit):
        main(["run", str(REFUND), "--shard", "3/2"])
    rc = main(["run", str(REFUND), "--repeat", "2", "--k", "3"])
    assert rc == 2 and "--k must be" in capsys.readouterr().err


def test_fail_under_and_baseline_update(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    rc = main(["run", str(REFUND), "--repeat", "2", "--baseline", str(base), "--update-baseline", "-q"])
    assert rc == 0 and base.exists()
    data = json.loads(base.read_text())
    assert data["kind"] == "chaoskit-baseline"
    assert main(["run", str(REFUND), "--repeat", "2", "--baseline", str(base), "-q"]) == 0
    # pretend the last green run needed fewer attempts: now they "rose"
    data["attempts"]["refund-not-repeated-after-500"]["examples.plain.agents:careful"]["eps=0,lam=0"] = 1.0
    base.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["run", str(REFUND), "--repeat", "2", "--baseline", str(base), "--update-baseline"]) == 1
    captured = capsys.readouterr()
    assert "rose against the baseline" in captured.out
    assert "not updated" in captured.err
    old = json.loads(base.read_text())["attempts"]["refund-not-repeated-after-500"]["examples.plain.agents:careful"]
    assert old["eps=0,lam=0"] == 1.0
    capsys.readouterr()
    assert main(["run", str(REFUND), "--agent", "examples.plain.agents:naive", "--fail-under", "100", "-q"]) == 1
    assert "below --fail-under 100" in capsys.readouterr().out
    # a threshold no score can meet is a typo, not a gate
    assert main(["run", str(REFUND), "--fail-under", "101", "-q"]) == 2
    assert "--fail-under must be a score from 0 to 100" in capsys.readouterr().err


def test_command_line_agent_joins_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json, spans = tmp_path / "r.json", tmp_path / "spans.jsonl"
    rc = main(["run", str(REFUND), "--agent", cli_agent(), "--json", str(out_json), "--traces", str(spans), "-q"])
    assert rc == 0, capsys.readouterr()
    e = json.loads(out_json.read_text())["episodes"][0]
    assert e["outcome"] == "completed" and e["passed"]
    assert e["output"].startswith("Refund of $25.00 issued")
    assert e["attempts"]["by_tool"]["issue_refund"] == 2
    trace = Trace.from_otlp_json(spans)
    assert len(trace.episodes) == 1
    # TRACEPARENT: the child's spans carry the runner's trace id
    assert trace.episodes[0].trace_id == e["trace_id"]
    assert {a.trace_id for a in trace.attempts} == {e["trace_id"]}


def test_command_line_agent_naive_is_graded(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    rc = main(["run", str(REFUND), "--agent", cli_agent(policy="naive"), "--json", str(out_json), "-q"])
    assert rc == 1
    e = json.loads(out_json.read_text())["episodes"][0]
    assert e["attempts"]["duplicate_writes"] == 1


def test_crashing_command_line_agent(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    rc = main(["run", str(REFUND), "--agent", cli_agent("crash"), "--json", str(out_json), "-q"])
    assert rc == 1  # a crash fails the episode, and a battery where nothing completed fails the gate
    e = json.loads(out_json.read_text())["episodes"][0]
    assert e["outcome"] == "crashed" and not e["passed"]
    assert "exit status 1" in e["error"] and "simulated crash" in e["error"]
    assert e["attempts"]["by_tool"] == {"lookup_order": 1}
    reasons = json.loads(out_json.read_text())["verdict"]["reasons"]
    assert any(r.startswith("no episode completed: all 1 ended as crashed") for r in reasons)


def test_hanging_command_line_agent_times_out(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    rc = main(
        [
            "run",
            str(REFUND),
            "--agent",
            cli_agent("hang"),
            "--timeout",
            "1.5",
            "--json",
            str(out_json),
            "--fail-under",
            "90",
            "-q",
        ]
    )
    assert rc == 1
    e = json.loads(out_json.read_text())["episodes"][0]
    assert e["outcome"] == "timeout" and not e["passed"]
    assert "killed" in e["error"]


def test_missing_command_is_an_episode_outcome(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    main(["run", str(REFUND), "--agent", "no-such-agent-binary --task {task}", "--json", str(out_json), "-q"])
    e = json.loads(out_json.read_text())["episodes"][0]
    assert e["outcome"] == "crashed" and "cannot start" in e["error"]


def _not_an_agent() -> None:
    return None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "0"], "--timeout must be a number of seconds > 0"),
        (["--agent", " "], "--agent is empty"),
        (["--attempt-tolerance", "-0.5"], "--attempt-tolerance must be a fraction >= 0"),
        (["--max-failures", "-1"], "--max-failures must be >= 0"),
        (["--update-baseline"], "--update-baseline needs --baseline FILE"),
        (["--baseline", "no/such/baseline.json"], "--baseline no/such/baseline.json: file not found"),
        (["--agent", "tests.cli.test_cli_run:_not_an_agent"], "the factory returned NoneType, which is not callable"),
        (["--json", "/proc/chaoskit-cannot-write/r.json"], "--json /proc/chaoskit-cannot-write/r.json: cannot write"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["run", str(REFUND), "-q", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_check_parameter_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(REFUND.read_text().replace("checks: [", "checks: [{no_retry_storm: {limit: 2}}, "))
    assert main(["run", str(bad), "-q"]) == 2
    assert "has no parameter 'limit'; allowed: n" in capsys.readouterr().err


def test_a_command_module_that_fails_to_import_is_a_loud_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import chaoskit.cli._main as cli

    # a broken install must say so, not quietly drop the subcommand and answer "invalid choice"
    monkeypatch.setattr(cli, "_COMMAND_MODULES", (*cli._COMMAND_MODULES, "chaoskit._cli_missing"))
    rc = cli.main(["run", str(REFUND)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(
        "chaoskit: error: cannot load the command module chaoskit._cli_missing "
        "(ModuleNotFoundError: No module named 'chaoskit._cli_missing'); reinstall chaoskit"
    )


TYPO = """\
name: refund-typo
task: "Refund order 4832 for the damaged item"
faults:
  - {type: http, tool: issue_refnd, on_call: 1, status: 500, after_write: true}
success:
  output_contains: ["refund"]
"""


def test_command_line_agent_tools_are_checked_from_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "typo.yaml"
    p.write_text(TYPO, encoding="utf-8")
    rc = main(["run", str(p), "--agent", cli_agent(), "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(
        f"chaoskit: error: {p}:4: faults[0].tool: names tool 'issue_refnd', which never "
        "appeared in the trace of any of its episodes (did you mean 'issue_refund'?); "
        "known tools: issue_refund, lookup_order"
    ), err


def test_command_line_agent_that_crashed_before_the_tool_is_graded_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "typo.yaml"
    p.write_text(TYPO, encoding="utf-8")
    rc = main(["run", str(p), "--agent", cli_agent("crash"), "-q"])
    out = capsys.readouterr().out
    assert rc == 1 and "no episode completed" in out
