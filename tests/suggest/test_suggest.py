"""``chaoskit suggest``: discovery from every kind of agent, classification with reasons, cases, and bad input."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaoskit import chaos
from chaoskit.cli._main import main
from chaoskit.scenarios._scenario import load_scenario
from chaoskit.suggest import FAULTS, SuggestError, discover, suggest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    """A throwaway importable module, for agents that exist only in a test."""
    mod = types.ModuleType("suggest_test_agent")
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def _by_name(s: Any) -> dict[str, Any]:
    return {c.name: c for c in s.classes}


# -- discovery ---------------------------------------------------------------------------------------------


def test_a_factory_agent_is_built_once_and_its_tools_found_in_its_env() -> None:
    s = suggest("examples.shop.agents:careful")
    assert [c.name for c in s.classes] == [
        "search_products",
        "check_inventory",
        "list_orders",
        "order_status",
        "validate_coupon",
        "place_order",
        "start_return",
        "issue_refund",
        "apply_coupon",
    ]
    refund = _by_name(s)["issue_refund"]
    assert (refund.kind.value, refund.kind.basis) == ("irreversible", "declared")
    assert refund.idempotency.value == "idempotency_key"
    assert s.agent == "examples.shop.agents:careful"


def test_a_langgraph_graph_its_marks_and_a_plain_tool_list_are_read_without_running_anything() -> None:
    graph = _by_name(suggest("examples.suggest.graph:graph"))
    assert graph["charge_invoice"].kind.basis == "declared"  # instrument_graph(irreversible=[...])
    assert "instrument_graph" in graph["charge_invoice"].kind.why
    plain = _by_name(suggest("examples.suggest.graph:tools"))
    # the same tool with no mark: its name decides, and the reason says to mark it
    assert (plain["charge_invoice"].kind.value, plain["charge_invoice"].kind.basis) == ("irreversible", "name")
    assert "mark it" in plain["charge_invoice"].kind.why
    assert suggest("examples.suggest.graph:graph").agent is None  # a graph is no factory: nothing to call


def test_a_callback_handler_marks_the_plain_tools_of_an_uninstrumented_graph() -> None:
    s = _by_name(suggest("examples.helpdesk.agents:careful"))
    assert s["escalate_ticket"].kind.value == "irreversible"
    assert "ChaosCallbackHandler" in s["escalate_ticket"].kind.why
    assert s["update_ticket"].kind.basis == "name"  # not in the handler's list
    # a callback handler cannot replace a result: no empty / partial / drift case would ever fire
    cases = suggest("examples.helpdesk.agents:careful").cases
    assert cases and not {k.fault for k in cases} & {"empty", "partial", "schema_drift"}
    assert {k.fault for k in suggest("examples.travel.agents:careful").cases} >= {"empty", "partial"}


def test_a_module_level_chaos_tool_list_and_function_are_found(module: types.ModuleType) -> None:
    @chaos(irreversible=True, idempotency_arg="key")
    def wire_money(account: str, amount: float, key: str | None = None) -> dict[str, Any]:
        """Wire money to an account."""
        return {"ok": True}

    @chaos
    def list_accounts(owner: str) -> list[dict[str, Any]]:
        """The owner's accounts."""
        return []

    module.__dict__.update(tools=[wire_money, list_accounts])
    s = _by_name(suggest(f"{module.__name__}:tools"))
    assert s["wire_money"].idempotency.value == "key"
    assert (s["list_accounts"].collection.value, s["list_accounts"].collection.basis) == (True, "schema")
    assert "list[dict[str, Any]]" in s["list_accounts"].collection.why


def test_an_openapi_file_by_agent_or_by_option_gives_the_same_tools() -> None:
    path = ROOT / "examples" / "suggest" / "legacy-openapi.yaml"
    a = suggest(str(path))
    b = suggest(None, openapi=path)
    assert [c.to_dict() for c in a.classes] == [c.to_dict() for c in b.classes]
    ops = _by_name(a)
    assert ops["refund_charge"].idempotency.value == "Idempotency-Key"
    assert ops["list_invoices"].collection.why == "its result schema holds the array 'invoices', which can be empty"
    assert ops["find_customer"].collection.value is False  # an object without arrays, whatever its name says


def test_every_decision_carries_a_reason() -> None:
    for ref in ("examples.scheduling.agents:careful", "examples.travel.agents:careful"):
        for c in suggest(ref).classes:
            for d in (c.kind, c.idempotency, c.collection, c.structured):
                assert d.why and d.basis, (ref, c.name)


# -- the cases -----------------------------------------------------------------------------------------------


def test_cases_follow_the_classification_and_narrow_with_faults_and_tools() -> None:
    s = suggest("examples.shop.agents:careful")
    faults = {(k.tool, k.fault) for k in s.cases}
    assert ("issue_refund", "after_write") in faults  # an irreversible write gets the 500 after the write
    assert ("search_products", "after_write") not in faults
    assert ("search_products", "empty") in faults and ("order_status", "empty") not in faults
    assert ("order_status", "schema_drift") in faults and ("search_products", "partial") in faults
    assert sum(k.fault == "auth_expired" for k in s.cases) == 1
    narrow = suggest("examples.shop.agents:careful", faults=["after_write"], tools=["issue_refund"])
    assert [(k.tool, k.fault) for k in narrow.cases] == [("issue_refund", "after_write")]
    assert narrow.skipped["place_order"] == "left out by --tools"


def test_tasks_come_from_the_agents_scenarios_or_from_task() -> None:
    s = suggest("examples.scheduling.agents:careful")
    origin = s.tasks["book_meeting"].origin
    assert origin.startswith("examples/scheduling/scenarios/")
    source = load_scenario(ROOT / origin.split(" ")[0])
    assert source.task == s.tasks["book_meeting"].text
    assert "book_meeting" in source.success.min_attempts or any("book_meeting" in f.tool_names() for f in source.faults)
    assert "sign_in" in s.skipped and "sign_in" not in s.tasks
    given = suggest("examples.scheduling.agents:careful", task="List Ana's meetings on 2026-12-08.")
    assert {t.text for t in given.tasks.values()} == {"List Ana's meetings on 2026-12-08."}


def test_written_files_are_commented_tagged_and_load(tmp_path: Path) -> None:
    s = suggest("examples.shop.agents:careful", tools=["issue_refund"])
    paths = s.write(tmp_path)
    # the one 401 goes to a tool --tools keeps (the first write with a task), so it is not lost to the filter
    assert {p.name for p in paths} == {
        "issue-refund-timeout.yaml",
        "issue-refund-after-write.yaml",
        "issue-refund-rate-limit.yaml",
        "issue-refund-auth-expired.yaml",
    }
    text = (tmp_path / "issue-refund-after-write.yaml").read_text()
    assert text.startswith("# Generated by `chaoskit suggest`. What: issue_refund writes, then answers HTTP 500.")
    assert "# Why: the write went through" in text
    sc = load_scenario(tmp_path / "issue-refund-after-write.yaml")
    assert sc.tags == ["suggested", "tool:issue_refund", "fault:http", "kind:irreversible"]
    assert sc.agent == "examples.shop.agents:careful" and sc.success.min_attempts == {"issue_refund": 1}
    # a narrower second run leaves the first run's other files: it says so, and never deletes them
    again = suggest("examples.shop.agents:careful", tools=["issue_refund"], faults=["timeout"])
    again.write(tmp_path)
    assert [p.name for p in again.stale] == [
        "issue-refund-after-write.yaml",
        "issue-refund-auth-expired.yaml",
        "issue-refund-rate-limit.yaml",
    ]
    assert (tmp_path / "issue-refund-after-write.yaml").exists()
    data = json.loads((tmp_path / "suggest.json").read_text())
    assert data["kind"] == "chaoskit-suggest" and len(data["cases"]) == 1
    assert data["tools"][0]["kind"]["why"]


def test_cli_dry_run_prints_decisions_findings_and_cases_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "battery"
    assert main(["suggest", "--agent", "examples.shop.agents:careful", "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "issue_refund: irreversible; idempotency key: idempotency_key" in text
    assert "kind       declared irreversible with @chaos(irreversible=True)" in text
    assert "Fix in the tool: 2 contract finding(s)" in text and "start_return: no_idempotency_key" in text
    assert "issue-refund-after-write.yaml" in text
    assert not out.exists()


def test_cli_writes_the_battery_and_says_how_to_run_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "battery"
    assert main(["suggest", "--agent", "examples.travel.agents:careful", "--out", str(out)]) == 0
    assert f"run them with: chaoskit run {out}" in capsys.readouterr().out
    assert all(yaml.safe_load(p.read_text())["task"] for p in out.glob("*.yaml"))


# -- bad input -----------------------------------------------------------------------------------------------


def _cli_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["suggest", *args]) == 2
    return capsys.readouterr().err


def test_an_agent_with_no_tools_is_a_clear_error(module: types.ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    class Bare:
        def invoke(self, task: str) -> str:
            return task

    module.__dict__.update(factory=Bare)
    err = _cli_error(["--agent", f"{module.__name__}:factory", "--dry-run"], capsys)
    assert f"--agent {module.__name__}:factory has no tools that suggest can see" in err
    assert "LangGraph graph" in err and "--openapi" in err
    with pytest.raises(SuggestError, match="has no tools"):
        discover([])


def test_unreadable_openapi_files_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no such file" in _cli_error(["--agent", str(tmp_path / "missing.yaml"), "--dry-run"], capsys)
    bad = tmp_path / "bad.yaml"
    bad.write_text("openapi: 3.0.3\npaths: [1, 2\n")
    assert "cannot parse the OpenAPI file" in _cli_error(["--openapi", str(bad), "--dry-run"], capsys)
    bad.write_text("openapi: 3.0.3\ninfo: {title: x}\n")
    assert "not an OpenAPI file" in _cli_error(["--openapi", str(bad), "--dry-run"], capsys)
    bad.write_text(
        "openapi: 3.0.3\npaths:\n  /x/{id}:\n    get:\n      parameters:\n        - {$ref: '#/components/nope'}\n"
    )
    err = _cli_error(["--openapi", str(bad), "--dry-run"], capsys)
    assert "paths./x/{id}.get.parameters[0]" in err and "names nothing in the file" in err
    bad.write_bytes(b"\xff\xfe not utf-8")
    assert "cannot read the OpenAPI file" in _cli_error(["--openapi", str(bad), "--dry-run"], capsys)


def test_a_tool_whose_schema_cannot_be_read_is_named(
    module: types.ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, ConfigDict

    class Clock:
        pass

    class Args(BaseModel):
        # a type pydantic can check (isinstance) but cannot turn into JSON schema
        model_config = ConfigDict(arbitrary_types_allowed=True)
        when: Clock

    lookup = StructuredTool.from_function(
        lambda when: "", name="lookup", description="Look a time up.", args_schema=Args
    )
    module.__dict__.update(tools=[lookup])
    err = _cli_error(["--agent", f"{module.__name__}:tools", "--dry-run"], capsys)
    assert "tool 'lookup': its argument schema cannot be read" in err


def test_bad_options_name_what_exists(capsys: pytest.CaptureFixture[str]) -> None:
    err = _cli_error(["--agent", "examples.shop.agents:careful", "--faults", "timeout,latency", "--dry-run"], capsys)
    assert "unknown fault kind(s) latency" in err and ", ".join(FAULTS) in err
    err = _cli_error(["--agent", "examples.shop.agents:careful", "--tools", "refund", "--dry-run"], capsys)
    assert "no tool refund" in err and "issue_refund" in err
    assert "--out DIR is required" in _cli_error(["--agent", "examples.shop.agents:careful"], capsys)
    assert "cannot import" in _cli_error(["--agent", "no_such_module_xyz:f", "--dry-run"], capsys)
    err = _cli_error(["--agent", "python examples/mcp/agent.py", "--dry-run"], capsys)
    assert "is a command line" in err and "--mcp COMMAND" in err


# -- an MCP server command -----------------------------------------------------------------------------------


def test_an_mcp_server_is_listed_with_its_annotations_and_its_cases_run_behind_the_proxy(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from chaoskit.runner._battery import run_battery

    server = f"{sys.executable} examples/mcp/server.py"
    s = suggest(None, mcp=server, task="Refund order A-1001 in full.", tools=["refund_order"], faults=["after_write"])
    ops = _by_name(s)
    assert ops["lookup_order"].kind.why == "declared a read (readOnlyHint: true)"
    assert ops["refund_order"].kind.why == "declared irreversible by the MCP server (destructiveHint: true)"
    assert ops["refund_order"].idempotency.value == "idempotency_key"
    (path,) = s.write(tmp_path)
    assert load_scenario(path).mcp is not None
    result = run_battery([tmp_path], agent=f"{sys.executable} examples/mcp/agent.py")
    assert [e.passed for e in result.episodes] == [True]
    assert result.episodes[0].attempts["faults_met"] == [["refund_order", "http"]]


def test_an_mcp_command_that_is_no_server_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mcp")
    err = _cli_error(["--mcp", f"{sys.executable} -c pass", "--dry-run"], capsys)
    assert "cannot list the server's tools" in err and "MCP server speaking stdio" in err
