"""Tool-contract findings: each fires where the tool is at fault and stays silent where it is not.

Declaration findings come from ``chaoskit suggest``'s classification; trace findings from real agent runs (the
billing example's scripted agents) recorded as spans. An error chaoskit injected is never evidence against a tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit import ToolHTTPError, chaos
from chaoskit.grading._contracts import ContractFinding, trace_findings, uninformative
from chaoskit.report._html import render_html
from chaoskit.report._text import render_text
from chaoskit.runner._battery import run_battery
from chaoskit.suggest import Param, ToolInfo, classify, declared_findings
from chaoskit.testing import ChaosEpisode, plan_from
from examples.suggest.billing import BillingEnv, careful

ROOT = Path(__file__).resolve().parents[2]


def _kinds(*tools: ToolInfo) -> list[tuple[str, str]]:
    return [(f.tool, f.kind) for f in declared_findings([classify(t) for t in tools])]


# -- declarations ------------------------------------------------------------------------------------------

REFUND_WITH_KEY = ToolInfo(
    "issue_refund",
    params=(Param("order_id", "str", True), Param("amount", "float", True), Param("idempotency_key", "str")),
    irreversible=True,
    source="@chaos",
)
REFUND_NO_KEY = ToolInfo(
    "issue_refund", params=(Param("order_id", "str", True), Param("amount", "float", True)), irreversible=True
)
ORDER_LOOKUP = ToolInfo("order_status", params=(Param("order_id", "str", True),))


def test_a_refund_that_takes_an_idempotency_key_gives_no_finding() -> None:
    assert _kinds(REFUND_WITH_KEY, ORDER_LOOKUP) == []


def test_a_refund_without_an_idempotency_key_is_a_finding_naming_its_parameters() -> None:
    findings = declared_findings([classify(REFUND_NO_KEY), classify(ORDER_LOOKUP)])
    assert [(f.tool, f.kind) for f in findings] == [("issue_refund", "no_idempotency_key")]
    assert "order_id, amount" in findings[0].evidence
    assert "retried safely" in findings[0].why and "idempotency" in findings[0].fix


def test_a_key_under_another_common_name_or_a_declared_idempotent_write_gives_no_key_finding() -> None:
    by_request_id = ToolInfo("charge_card", params=(Param("card", "str", True), Param("request_id", "str")))
    declared = ToolInfo("hold_seat", params=(Param("flight_id", "str", True),), irreversible=True, idempotent=True)
    put = ToolInfo("put_profile", params=(Param("id", "string", True, location="path"),), http="PUT /profiles/{id}")
    lookup = ToolInfo("get_card", params=(Param("card", "str", True),))
    assert ("charge_card", "no_idempotency_key") not in _kinds(by_request_id, lookup)
    assert _kinds(declared, ToolInfo("search_flights")) == []
    assert ("put_profile", "no_idempotency_key") not in _kinds(put, lookup)


def test_a_write_is_unverifiable_only_when_no_read_shares_its_resource_or_an_identifier() -> None:
    send = ToolInfo("send_email", params=(Param("to", "str", True), Param("body", "str", True)), irreversible=True)
    docs = ToolInfo("search_docs", params=(Param("query", "str", True),))
    assert ("send_email", "unverifiable_write") in _kinds(send, docs)
    sent = ToolInfo("list_sent_emails", params=(Param("to", "str", True),))
    assert ("send_email", "unverifiable_write") not in _kinds(send, docs, sent)
    # the refund is read back through the order it belongs to (a shared order_id), as the shop's agents do
    assert ("issue_refund", "unverifiable_write") not in _kinds(REFUND_WITH_KEY, ORDER_LOOKUP)
    # a sign-in has nothing to read back
    assert _kinds(ToolInfo("sign_in"), docs) == []


def test_an_openapi_lookup_without_a_404_is_a_finding_and_with_one_it_is_not(tmp_path: Path) -> None:
    from chaoskit.suggest._openapi_tools import read_openapi

    tools = {t.name: t for t in read_openapi(ROOT / "examples" / "suggest" / "legacy-openapi.yaml")}
    found = _kinds(*tools.values())
    assert ("get_invoice", "cannot_say_not_found") in found  # GET /invoices/{id}: 200 only
    assert ("find_customer", "cannot_say_not_found") not in found  # documents its 404
    assert ("list_invoices", "cannot_say_not_found") not in found  # a list can say "none" by being empty
    assert ("charge_invoice", "no_idempotency_key") in found
    assert ("refund_charge", "no_idempotency_key") not in found  # takes an Idempotency-Key header


# -- which error messages carry no information -------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("", "RuntimeError"),
        ("Error", "RuntimeError"),
        ("error", None),
        ("500", "ToolHTTPError"),
        ("HTTP 500: Internal Server Error", "ToolHTTPError"),
        ("404 Not Found", None),
        ("Something went wrong", "Exception"),
        ("RuntimeError: Error", "RuntimeError"),
        ("Bad Request", "ValueError"),
    ],
)
def test_messages_that_say_nothing_are_uninformative(message: str, error_type: str | None) -> None:
    assert uninformative(message, error_type)


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("order 42 not found", "LookupError"),
        ("invoice INV-9 not found", "LookupError"),
        ("HTTP 409: the room is taken from 09:00 to 10:00", "ToolHTTPError"),
        ("no customer account 'zoe@example.com'; accounts are e-mail addresses", "LookupError"),
        ("payment service unavailable, retry in 2 s", "ToolHTTPError"),
        ("amount must be a number", "ValueError"),
    ],
)
def test_messages_that_name_what_failed_are_informative(message: str, error_type: str) -> None:
    assert not uninformative(message, error_type)


# -- from traces: real runs of the billing example ---------------------------------------------------------


def _run(factory: Any, task: str, plan: Any = None) -> list[ContractFinding]:
    agent = factory()
    with ChaosEpisode("billing", plan=plan) as case:
        case.finish(agent.invoke(task))
    return trace_findings(case.trace.attempts)


def test_a_bare_error_from_the_tool_is_a_trace_finding_with_its_span() -> None:
    found = _run(careful, "Pay the open invoices of zoe@example.com.")
    msg = [f for f in found if f.kind == "uninformative_error"]
    assert [f.tool for f in msg] == ["find_customer"]
    assert "'Error'" in msg[0].evidence and msg[0].span_id and msg[0].span_id in msg[0].evidence


def test_a_429_without_retry_after_is_a_finding_and_an_informative_not_found_is_none() -> None:
    found = _run(careful, "Pay the open invoices of ana@example.com.")
    assert [(f.tool, f.kind) for f in found] == [("list_invoices", "rate_limit_without_retry_after")]
    env = BillingEnv()
    with ChaosEpisode("lookup") as case:
        with pytest.raises(LookupError):
            env.get_invoice("INV-9")
        case.finish("invoice INV-9 not found")
    assert trace_findings(case.trace.attempts) == []


def test_errors_chaoskit_injected_are_never_evidence_against_the_tool() -> None:
    @chaos(name="lookup_order")
    def lookup_order(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id}

    plan = plan_from(
        {"type": "error", "tool": "lookup_order", "on_call": 1, "error": "Error"},
        {"type": "rate_limit", "tool": "lookup_order", "on_call": 2, "retry_after": 0.01},
        {"type": "http", "tool": "lookup_order", "on_call": 3, "status": 500},
    )
    with ChaosEpisode("injected", plan=plan) as case:
        for _ in range(4):
            try:
                lookup_order("42")
            except Exception:
                pass
        case.finish("order 42 found")
    assert len(case.trace.attempts) == 4
    assert trace_findings(case.trace.attempts) == []


def test_a_real_429_with_retry_after_gives_no_finding() -> None:
    @chaos(name="quota_api")
    def quota_api() -> None:
        raise ToolHTTPError(429, "HTTP 429: quota exceeded for project p-7", retry_after=2.0)

    with ChaosEpisode("quota") as case:
        with pytest.raises(ToolHTTPError):
            quota_api()
        case.finish("the quota is exceeded")
    assert trace_findings(case.trace.attempts) == []


# -- in a battery: apart from the agents' verdicts ----------------------------------------------------------


def test_a_run_reports_contract_findings_and_readiness_apart_from_the_agents(tmp_path: Path) -> None:
    # the findings of the run's traces alone (contracts=False: without the tools' declarations, tested below)
    result = run_battery(
        [ROOT / "examples" / "suggest" / "scenarios"],
        agents=["examples.suggest.billing:careful", "examples.suggest.billing:naive"],
        contracts=False,
    )
    contracts = {(f["tool"], f["kind"]) for f in result.summary.contracts}
    assert contracts == {("find_customer", "uninformative_error"), ("list_invoices", "rate_limit_without_retry_after")}
    rows = {(r["tool"], r["agent"]): r for r in result.summary.readiness}
    assert rows[("find_customer", "careful")]["findings"] == ["uninformative_error"]
    assert rows[("charge_invoice", "careful")]["findings"] == []
    # the agents' own verdicts are untouched by the tool's flaws: careful passes, naive fails on the checks
    assert all(e.passed for e in result.episodes if e.agent_label == "careful")
    assert any(not e.passed for e in result.episodes if e.agent_label == "naive")
    text = render_text(result, color=False, width=160, verbose=True)
    assert "fix in the agent" in text and "fix in the tool: 2 tool-contract finding(s)" in text
    assert text.index("fix in the tool") < text.index("verdict:")
    data = json.loads(json.dumps(result.to_dict()))
    assert {f["kind"] for f in data["summary"]["contracts"]} == {
        "uninformative_error",
        "rate_limit_without_retry_after",
    }
    assert all({"why", "fix", "evidence"} <= set(f) for f in data["summary"]["contracts"])
    page = render_html(data)
    assert 'id="readiness"' in page and "rate_limit_without_retry_after" in page


def test_a_clean_domain_gives_no_contract_finding() -> None:
    # the shop's tools fail informatively: its traces give no finding (its declared writes do: no idempotency key)
    result = run_battery(
        [ROOT / "examples" / "shop" / "scenarios"], agents=["examples.shop.agents:careful"], contracts=False
    )
    assert result.summary.contracts == []
    declared = run_battery([ROOT / "examples" / "shop" / "scenarios"], agents=["examples.shop.agents:careful"])
    assert {(f["tool"], f["kind"], f["origin"]) for f in declared.summary.contracts} == {
        ("apply_coupon", "no_idempotency_key", "declaration"),
        ("start_return", "no_idempotency_key", "declaration"),
    }
    assert any(r["survived"] for r in result.summary.readiness)


def test_declaration_findings_join_a_runs_readiness_table() -> None:
    from chaoskit.runner._summary import apply_contracts
    from chaoskit.suggest import declared_for

    result = run_battery([ROOT / "examples" / "suggest" / "scenarios"], agents=["examples.suggest.billing:careful"])
    declared = declared_for(sorted({e.agent for e in result.episodes}))
    assert [(f["tool"], f["kind"], f["origin"]) for f in declared] == [
        ("charge_invoice", "no_idempotency_key", "declaration")
    ]
    apply_contracts(result.summary, result.episodes, declared)
    kinds = {(f["tool"], f["kind"]) for f in result.summary.contracts}
    assert ("charge_invoice", "no_idempotency_key") in kinds and len(kinds) == 3
    rows = {r["tool"]: r for r in result.summary.readiness}
    assert rows["charge_invoice"]["findings"] == ["no_idempotency_key"]
    # a command-line agent has no tools to read here: it adds nothing rather than failing the run
    assert declared_for(["python examples/mcp/agent.py", "no_such_module_xyz:f"]) == []


def test_odd_or_newer_results_files_are_read_without_crashing() -> None:
    from chaoskit.runner._summary import apply_contracts

    result = run_battery([ROOT / "examples" / "suggest" / "scenarios"], agents=["examples.suggest.billing:careful"])
    e = result.episodes[0]
    e.attempts["contract_findings"] = ["junk", {"tool": "lookup"}, {"tool": "lookup", "kind": "from_the_future"}]
    e.attempts["faults_met"] = [["lookup"], "x", ["lookup", "timeout"]]
    apply_contracts(result.summary, result.episodes)
    future = [f for f in result.summary.contracts if f["kind"] == "from_the_future"]
    assert future and "does not know" in future[0]["why"]
    assert render_text(result, color=False, width=120)
    page = render_html({"summary": {"readiness": [1, {"tool": "t", "survived": {"a": "x"}}], "contracts": ["y"]}})
    assert 'id="readiness"' in page
