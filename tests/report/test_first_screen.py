"""The first screen a user reads: the README's first command fits one screen and ends with the verdict and why;
expected failures read as expected in the terminal and in HTML; ``-v`` keeps the full report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cli import main

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ("careful", "naive", "give_up", "bluffer", "obeys_injection")
EMPTY_AGENDA = ROOT / "examples" / "scheduling" / "scenarios" / "agenda-empty.yaml"


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The README's first command, as a user runs it (a process of its own, output to a pipe)."""
    out = tmp_path_factory.mktemp("first-screen")
    html, results = out / "report.html", out / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", "examples/", "--html", str(html), "--json", str(results)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    return {"done": done, "html": html, "lines": done.stdout.rstrip("\n").splitlines()}


def test_the_readme_command_fits_one_screen_and_ends_with_the_verdict_and_why(readme_run: dict[str, Any]) -> None:
    done, lines = readme_run["done"], readme_run["lines"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(lines) + len(done.stderr.splitlines()) <= 40, done.stdout
    assert lines[-1].startswith("verdict: PASS: ") and "expected outcomes met" in lines[-1]
    assert "failing episodes were expected by the table" in lines[-1]
    # the HTML report's path is on the screen, before the verdict
    assert f"HTML report: {readme_run['html']}" in lines[:-1]
    # what moved behind -v is not on the first screen
    text = done.stdout
    assert "results per scenario and agent" not in text and "readiness per tool" not in text
    assert "failing episodes (" not in text and "by agent" not in text


def test_one_line_per_agent_and_failing_checks_grouped_with_a_replay_each(readme_run: dict[str, Any]) -> None:
    lines = readme_run["lines"]
    for agent in AGENTS:
        rows = [ln for ln in lines if ln.split()[:1] == [agent]]
        assert len(rows) == 1, (agent, lines)
    head = next(ln for ln in lines if ln.startswith("failing checks ("))
    assert "of them expected by the table" in head
    checks = lines[lines.index(head) + 1 :]
    checks = checks[: next(i for i, ln in enumerate(checks) if not ln.startswith("  "))]
    names = [ln.split()[0] for ln in checks]
    assert len(names) == len(set(names)) and {"no_duplicate_writes", "no_bluff", "reports_failure"} <= set(names)
    for ln in checks:
        assert "expected)" in ln and "replay: chaoskit run " in ln and "--episode-seed" in ln


def test_the_html_report_shows_expected_failures_as_expected(readme_run: dict[str, Any]) -> None:
    page = readme_run["html"].read_text(encoding="utf-8")
    assert 'id="verdict-why"' in page and "expected outcomes met" in page
    verdict = page[page.index('<section id="verdict"') : page.index("</section>", page.index('id="verdict"'))]
    # the PASS has no reasons list under it: the naive agent's repeated writes sit in the expected failures
    assert "verdict: PASS" in verdict and "<h3>Why</h3>" not in verdict
    assert "<h3>Repeated irreversible writes" not in verdict
    expected = verdict[verdict.index('<div class="expected-failures"') :]
    assert (
        "not reasons for the verdict" in expected
        and "Repeated irreversible writes, all expected by the table (" in expected
    )
    assert "FAIL (expected)" in page and 'class="badge expected"' in page


def test_verbose_keeps_the_full_report(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "run",
            str(EMPTY_AGENDA),
            "--agents",
            "examples.scheduling.agents:careful,examples.scheduling.agents:naive",
            "-v",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "results per scenario and agent" in out and "failing episodes (1; first 1), fix in the agent:" in out
    # a readiness row with nothing to say is left out: every row shown names a fault or a finding
    if "readiness per tool" in out:
        table = out.split("readiness per tool", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
        assert table and all(row.count(" - ") < 3 for row in table), table


def test_a_pass_on_the_absolute_rules_alone_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(EMPTY_AGENDA), "--agent", "examples.scheduling.agents:naive"])
    out = capsys.readouterr().out.rstrip().splitlines()
    assert rc == 0
    assert out[-1] == (
        "verdict: PASS on the absolute rules only: 0 % of episodes passed (1 of 1 failed); "
        "add --fail-under or --expect to gate on them"
    )
    # the same run gated on the score fails
    assert main(["run", str(EMPTY_AGENDA), "--agent", "examples.scheduling.agents:naive", "--fail-under", "95"]) == 1
    assert capsys.readouterr().out.rstrip().splitlines()[-2] == "verdict: FAIL"


def test_a_clean_run_says_every_episode_passed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EMPTY_AGENDA), "--agent", "examples.scheduling.agents:careful"]) == 0
    assert capsys.readouterr().out.rstrip().splitlines()[-1] == "verdict: PASS: all 1 episode passed"
