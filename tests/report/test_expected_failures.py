"""Expected failures in the reports: the failures an expected-outcome table predicts read as expected, in the
terminal and in HTML, and never as the verdict's reasons; readiness rows with nothing to say are left out."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cli import main
from chaoskit.report import render_html

ROOT = Path(__file__).resolve().parents[2]
REFUND = ROOT / "examples" / "scenarios" / "refund-after-500.yaml"
NAIVE = "examples.plain.agents:naive"
WHY_A = "retries the refund at once without a key: refunded twice"


def _scenarios(tmp: Path) -> list[str]:
    """Two copies of the refund-after-500 scenario (the naive agent repeats the refund in both), renamed."""
    text = REFUND.read_text(encoding="utf-8")
    paths = []
    for name in ("refund-a", "refund-b"):
        p = tmp / f"{name}.yaml"
        p.write_text(text.replace("name: refund-not-repeated-after-500", f"name: {name}"), encoding="utf-8")
        paths.append(str(p))
    return paths


def _run(tmp: Path, b_expected: bool, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], dict[str, Any]]:
    """Run both copies with the naive agent against a table that expects refund-a to fail on its repeated write,
    and refund-b to fail too (``b_expected``) or to pass; the exit code, the terminal lines and the results."""
    b = f"{{fail: [no_duplicate_writes], why: {json.dumps(WHY_A)}}}" if b_expected else '{pass: true, why: "fixed"}'
    table = tmp / "expected.yaml"
    table.write_text(
        "expect:\n"
        f"  refund-a:\n    naive: {{fail: [no_duplicate_writes, end_state], why: {json.dumps(WHY_A)}}}\n"
        f"  refund-b:\n    naive: {b}\n",
        encoding="utf-8",
    )
    out = tmp / "results.json"
    argv = ["run", *_scenarios(tmp), "--agent", NAIVE, "--expect", str(table), "--json", str(out), "-v"]
    rc = main(argv)
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    return rc, lines, json.loads(out.read_text(encoding="utf-8"))


def _section(page: str, anchor: str) -> str:
    start = page.index(f'<section id="{anchor}"')
    return page[start : page.index("</section>", start)]


def _expected_block(verdict: str) -> str:
    start = verdict.index('<div class="expected-failures"')
    return verdict[start : verdict.index("</div>", start)]


def test_a_pass_with_expected_repeated_writes_lists_them_as_expected_not_under_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, lines, results = _run(tmp_path, True, capsys)
    assert rc == 0 and results["verdict"]["ok"] is True, lines
    writes = results["verdict"]["duplicate_writes"]
    assert len(writes) == 2  # both copies repeated the refund: the gate saw them
    page = render_html(results)
    verdict = _section(page, "verdict")
    assert "verdict: PASS" in verdict
    # no list of repeated writes sits under the PASS as if it were its reasons
    assert "<h3>Repeated irreversible writes" not in verdict and "<h3>Why</h3>" not in verdict
    block = _expected_block(verdict)
    assert "Expected failures (2 episodes): not reasons for the verdict" in block
    assert "Per agent: naive 2." in block
    assert "Repeated irreversible writes, all expected by the table (2)" in block
    assert all(w.split(" rep ")[0] in block for w in writes)
    # the verdict comes first, the expected failures after it
    assert verdict.index("verdict: PASS") < verdict.index('class="expected-failures"')
    # the terminal: the repeated writes never follow the verdict line
    assert lines[-1].startswith("verdict: PASS: ") and "2 failing episodes were expected by the table" in lines[-1]


def test_a_fail_lists_only_the_unexpected_write_under_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, lines, results = _run(tmp_path, False, capsys)
    assert rc == 1 and results["verdict"]["ok"] is False
    a, b = sorted(results["verdict"]["duplicate_writes"])
    assert a.startswith("refund-a ") and b.startswith("refund-b ")
    # terminal: after "verdict: FAIL", refund-b's write (unexpected) is listed and refund-a's (expected) is not
    tail = lines[lines.index("verdict: FAIL") :]
    assert any(ln.strip() == b for ln in tail), tail
    assert not any("refund-a" in ln for ln in tail), tail
    # HTML: the unexpected write under its own heading; the expected one only in the expected block
    verdict = _section(render_html(results), "verdict")
    assert "verdict: FAIL" in verdict
    head = "Repeated irreversible writes the expected-outcome table did not expect (1)"
    assert head in verdict
    listed = verdict[verdict.index(head) : verdict.index('class="expected-failures"')]
    assert "refund-b rep" in listed and "refund-a rep" not in listed
    block = _expected_block(verdict)
    assert "Expected failures (1 episode): not reasons for the verdict" in block
    assert "refund-a rep" in block and "refund-b rep" not in block


def test_without_a_table_the_repeated_writes_are_the_verdicts_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rc, _lines, results = _run(tmp_path, True, capsys)
    # the same run judged by the absolute rules alone (a results file written without --expect)
    plain = copy.deepcopy(results)
    plain["verdict"].pop("expectations")
    reason = "2 episode(s) repeated an irreversible write (absolute rule)"
    plain["verdict"].update(ok=False, reasons=[reason], why=reason)
    verdict = _section(render_html(plain), "verdict")
    assert "<h3>Repeated irreversible writes (2)</h3>" in verdict
    assert "expected-failures" not in verdict and "expected by the table" not in verdict


def test_a_write_that_names_no_expected_episode_is_never_called_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rc, _lines, results = _run(tmp_path, True, capsys)
    odd = copy.deepcopy(results)
    # a write whose replay matches no episode (a changed file): shown as not expected, whatever the table says
    odd["verdict"]["duplicate_writes"].append("refund-c rep 0 eps 0 lam 0: issued twice  (replay: chaoskit run x)")
    verdict = _section(render_html(odd), "verdict")
    head = "Repeated irreversible writes the expected-outcome table did not expect (1)"
    assert head in verdict and "refund-c rep 0" in verdict[verdict.index(head) : verdict.index("expected-failures")]
    assert "refund-c" not in _expected_block(verdict)


def test_readiness_rows_with_nothing_to_say_are_left_out_of_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rc, _lines, results = _run(tmp_path, True, capsys)
    given = copy.deepcopy(results)
    quiet = {"tool": "list_orders", "agent": "naive", "survived": {}, "failed": {}, "findings": []}
    given["summary"]["readiness"].append(quiet)
    assert any(r["survived"] or r["failed"] for r in given["summary"]["readiness"])  # the run has rows to show
    section = _section(render_html(given), "readiness")
    rows = re.findall(r"<tr><th scope='row'>(.*?)</th>", section)
    assert rows and "list_orders" not in rows
    said = sum(bool(r["survived"] or r["failed"] or r["findings"]) for r in given["summary"]["readiness"])
    assert len(rows) == said
    left = len(given["summary"]["readiness"]) - said
    assert f"{left} tool and agent row(s) with nothing to say" in section
