"""The readiness table and the contract findings of a run: each finding on its own agent's rows, a failure blamed
on the fault whose tool the failed check names, the declaration findings kept by ``chaoskit merge``, a fault the
entry point could not inject failing its episode, and a finished run never lost to reading the tools.

The agents are the billing example's and ``examples/suggest/pitfalls.py``'s (a bank whose transfer is not marked,
an agent holding a lazily connected client), run for real; nothing is faked but where a test says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cli._main import main
from chaoskit.runner._battery import run_battery
from chaoskit.runner._summary import apply_contracts
from chaoskit.suggest import declared_for

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "suggest" / "scenarios"
BILLING_AGENTS = "examples.suggest.billing:careful,examples.suggest.billing:naive"


def _scenario(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _rows(summary: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["tool"], r["agent"]): r for r in summary.readiness}


def test_a_finding_goes_only_to_the_rows_of_the_agent_whose_tools_show_it(tmp_path: Path) -> None:
    # two domains in one run: billing (careful) and a bank (its own naive agent); their tools share no name
    _scenario(
        tmp_path / "bank",
        "transfer",
        'name: bank-transfer\ntask: "Move $10 from A to B."\nagent: examples.suggest.pitfalls:bank_agent\n'
        "success:\n  min_attempts: {transfer_funds: 1}\n  checks: [no_bluff]\n",
    )
    result = run_battery([BILLING, tmp_path / "bank"])
    declared = declared_for(sorted({e.agent for e in result.episodes}))
    apply_contracts(result.summary, result.episodes, declared)
    rows = _rows(result.summary)
    # billing's findings stay on billing's agent, the bank's on the bank's: no row for a tool an agent lacks
    assert ("charge_invoice", "bank_agent") not in rows and ("find_customer", "bank_agent") not in rows
    assert ("transfer_funds", "careful") not in rows
    assert rows[("charge_invoice", "careful")]["findings"] == ["no_idempotency_key"]
    assert "no_idempotency_key" in rows[("transfer_funds", "bank_agent")]["findings"]
    by_tool = {f["tool"]: f["agents"] for f in result.summary.contracts}
    assert by_tool["transfer_funds"] == ["examples.suggest.pitfalls:bank_agent"]
    assert by_tool["find_customer"] == ["examples.suggest.billing:careful"]


def test_a_failure_is_blamed_on_the_fault_whose_tool_the_failed_check_names(tmp_path: Path) -> None:
    # a timeout on the lookup (which the naive agent retries within bounds) and a 500 after the charge (which
    # it repeats): the episode fails on no_duplicate_writes for charge_invoice only
    _scenario(
        tmp_path,
        "two-faults",
        'name: billing-two-faults\ntask: "Pay the open invoices of ana@example.com."\n'
        "success:\n  min_attempts: {find_customer: 1, charge_invoice: 1}\n"
        "  checks: [no_duplicate_writes, no_retry_storm]\n"
        "faults:\n  - {type: timeout, tool: find_customer, on_call: 1, after_s: 0.01}\n"
        "  - {type: http, tool: charge_invoice, on_call: 1, status: 500, after_write: true}\n",
    )
    result = run_battery([tmp_path], agent="examples.suggest.billing:naive")
    (e,) = result.episodes
    assert not e.passed and [c["name"] for c in e.failed_checks()] == ["no_duplicate_writes"]
    rows = {r["tool"]: r for r in result.summary.readiness}
    assert rows["charge_invoice"]["failed"] == {"http": 1}
    assert rows["find_customer"]["failed"] == {} and rows["find_customer"]["survived"] == {"timeout": 1}


def test_merged_shards_have_the_readiness_and_findings_of_one_run(tmp_path: Path) -> None:
    def run(*extra: str) -> int:
        return main(["run", str(BILLING), "--agents", BILLING_AGENTS, "--quiet", *extra])

    run("--json", str(tmp_path / "full.json"))
    run("--shard", "1/2", "--json", str(tmp_path / "s1.json"))
    run("--shard", "2/2", "--json", str(tmp_path / "s2.json"))
    main(["merge", str(tmp_path / "s1.json"), str(tmp_path / "s2.json"), "--json", str(tmp_path / "merged.json")])
    full = json.loads((tmp_path / "full.json").read_text())["summary"]
    merged = json.loads((tmp_path / "merged.json").read_text())["summary"]
    # the declaration finding (charge_invoice has no key) comes from the agents, not the episodes: merge keeps it
    assert ("charge_invoice", "no_idempotency_key") in {(f["tool"], f["kind"]) for f in merged["contracts"]}
    assert merged["readiness"] == full["readiness"]

    def essence(contracts: list[dict[str, Any]]) -> set[tuple[str, str, tuple[str, ...]]]:
        return {(f["tool"], f["kind"], tuple(f["agents"])) for f in contracts}

    assert essence(merged["contracts"]) == essence(full["contracts"])


def test_a_planned_fault_the_entry_point_cannot_inject_fails_the_episode(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    # the agent invents a ticket on an empty search; the callback handler cannot empty the search, so the case
    # tested nothing: before, it passed at 100%
    _scenario(
        tmp_path,
        "empty",
        'name: tickets-empty\ntask: "Which tickets does Ana have?"\nagent: examples.suggest.tickets:fabricator\n'
        "faults:\n  - {type: empty, tool: search_tickets}\n"
        "success:\n  checks: [no_fabrication, no_bluff]\n",
    )
    with pytest.warns(Warning, match="cannot inject empty"):
        result = run_battery([tmp_path])
    (e,) = result.episodes
    assert not e.passed
    (failed,) = e.failed_checks()
    assert failed["name"] == "fault_not_injected"
    assert "empty fault on search_tickets was never injected" in failed["message"] and failed["evidence"]


def test_a_fault_that_fires_gives_no_not_injected_criterion(tmp_path: Path) -> None:
    _scenario(
        tmp_path,
        "timeout",
        'name: billing-timeout\ntask: "Pay the open invoices of ana@example.com."\n'
        "faults:\n  - {type: timeout, tool: find_customer, on_call: 1, after_s: 0.01}\n"
        "success:\n  checks: [no_retry_storm]\n",
    )
    result = run_battery([tmp_path], agent="examples.suggest.billing:careful")
    (e,) = result.episodes
    assert e.passed and "fault_not_injected" not in {c["name"] for c in e.checks}


def test_a_run_whose_agent_holds_a_lazy_client_writes_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the agent holds a client whose every attribute raises before connect(): reading its tools for the
    # declaration findings once crashed the run after every episode, and wrote no results
    _scenario(
        tmp_path / "s",
        "read",
        'name: lazy-read\ntask: "Read order A-1"\nsuccess:\n  min_attempts: {read_order: 1}\n  checks: [no_bluff]\n',
    )
    out = tmp_path / "lazy.json"
    code = main(["run", str(tmp_path / "s"), "--agent", "examples.suggest.pitfalls:lazy_agent", "--json", str(out)])
    assert code == 0 and json.loads(out.read_text())["summary"]["readiness"]
    assert "Traceback" not in capsys.readouterr().err


def test_findings_that_fail_to_read_warn_and_never_lose_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import chaoskit.suggest._suggest as suggest_module

    def broken(ref: str, **_: Any) -> Any:
        raise RuntimeError(f"cannot read {ref}")

    # any failure while reading the tools (a describer bug, a factory that breaks on a second call) is a warning
    monkeypatch.setattr(suggest_module, "discover_ref", broken)
    seen: list[str] = []
    assert declared_for(["examples.suggest.billing:careful"], warn=seen.append) == []
    assert seen and "RuntimeError: cannot read examples.suggest.billing:careful" in seen[0]
    out = tmp_path / "r.json"
    code = main(["run", str(BILLING), "--agent", "examples.suggest.billing:careful", "--quiet", "--json", str(out)])
    assert code in (0, 1) and json.loads(out.read_text())["episodes"]
    assert "warning: the tool-contract findings of examples.suggest.billing:careful are left out" in (
        capsys.readouterr().err
    )
