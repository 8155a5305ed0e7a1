"""``chaoskit suggest`` on the agents and API files that issue 17's review found it misreading: tools lost in
discovery, vacuous cases, names read the wrong way, idempotency keys missed or imagined, OpenAPI forms it did not
read, a battery for an API that could not run, and factories and folders it handled badly.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit import chaos
from chaoskit.cli._main import main
from chaoskit.scenarios._scenario import load_scenario
from chaoskit.suggest import Param, SuggestError, ToolInfo, classify, declared_findings, register_describer, suggest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    """A throwaway importable module, for factories that exist only in a test."""
    mod = types.ModuleType("suggest_review_agent")
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def _by_name(s: Any) -> dict[str, Any]:
    return {c.name: c for c in s.classes}


def _findings(*tools: ToolInfo) -> set[tuple[str, str]]:
    return {(f.tool, f.kind) for f in declared_findings([classify(t) for t in tools])}


# -- discovery -------------------------------------------------------------------------------------------------


def test_every_chaos_method_of_a_plain_class_is_found_when_the_agent_keeps_no_bound_method() -> None:
    # each getattr makes a new bound method; a freed one's address was reused and the next tool counted as seen
    s = suggest("examples.suggest.pitfalls:store_agent", task="Refund order A-1 in full.")
    assert sorted(c.name for c in s.classes) == [
        "cancel_order",
        "get_order",
        "list_orders",
        "refund_order",
        "search_products",
    ]
    assert ("refund_order", "no_idempotency_key") in {(f.tool, f.kind) for f in s.findings}
    assert any(k.tool == "refund_order" and k.fault == "after_write" for k in s.cases)


def test_an_agent_holding_a_client_whose_attributes_raise_is_read_without_error() -> None:
    s = suggest("examples.suggest.pitfalls:lazy_agent", task="Read order A-1")
    assert [c.name for c in s.classes] == ["read_order"]


def test_a_callback_handler_marks_every_plain_tool_of_its_agent_before_any_call() -> None:
    pytest.importorskip("langchain_core")
    # the handler builds its specs at a tool's first call: nothing is built when suggest reads the agent
    s = suggest("examples.suggest.tickets:fabricator", task="Which tickets does Ana have?")
    by = _by_name(s)
    assert by["search_tickets"].tool.replaces_result is False
    assert by["search_tickets"].collection.value is True
    faults = {(k.tool, k.fault) for k in s.cases}
    assert ("search_tickets", "timeout") in faults
    assert not {f for t, f in faults if t == "search_tickets"} & {"empty", "partial", "schema_drift"}


def test_a_factory_that_exits_or_parses_the_command_line_is_a_clear_error(
    module: types.ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    def exits() -> None:
        sys.exit(0)

    def parses() -> Any:
        parser = argparse.ArgumentParser()
        parser.add_argument("--model", required=True)
        return parser.parse_args()

    module.__dict__.update(exits=exits, parses=parses)
    for name in ("exits", "parses"):
        # before, `exits` ended suggest with status 0 and no output: a CI job would have passed
        assert main(["suggest", "--agent", f"{module.__name__}:{name}", "--dry-run"]) == 2
        assert "the factory exited (SystemExit" in capsys.readouterr().err


def test_a_factory_that_blocks_is_stopped(module: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import chaoskit.suggest._discover as discover_module

    def waits_for_a_server() -> None:
        time.sleep(30)

    module.__dict__.update(make=waits_for_a_server)
    monkeypatch.setattr(discover_module, "FACTORY_TIMEOUT_S", 0.2)
    with pytest.raises(SuggestError, match=r"did not return within 0\.2 s"):
        suggest(f"{module.__name__}:make")


def test_deep_or_large_data_in_an_agent_is_not_walked_item_by_item(module: types.ModuleType) -> None:
    @chaos(description="Read one order.")
    def get_order(order_id: str) -> dict[str, Any]:
        return {}

    deep: list[Any] = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    looked: list[int] = []

    def counting(obj: Any) -> None:
        looked.append(1)

    register_describer("zz-counting", counting)

    class Agent:
        def __init__(self) -> None:
            self.cache = {"rows": [{"id": i, "tags": [i]} for i in range(50_000)]}
            self.deep = deep
            self.tools = [get_order]

    module.__dict__.update(make=Agent)
    s = suggest(f"{module.__name__}:make", task="Read order 1")
    assert [c.name for c in s.classes] == ["get_order"]
    # before: every row, and every level of the nested list (which ended in a RecursionError blamed on a describer)
    assert len(looked) < 5_000


# -- vacuous cases ---------------------------------------------------------------------------------------------


def test_a_write_irreversible_only_by_its_name_gets_no_after_write_case_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no_duplicate_writes sees only marked tools: a 500-after-write case on transfer_funds could never fail
    s = suggest("examples.suggest.pitfalls:bank_agent", task="Move $10 from A to B.")
    transfer = _by_name(s)["transfer_funds"]
    assert transfer.kind.value == "irreversible" and "mark it" in transfer.kind.why
    mine = [k for k in s.cases if k.tool == "transfer_funds"]
    assert mine and "after_write" not in {k.fault for k in mine}
    assert all("no_duplicate_writes" not in k.checks for k in mine)
    assert "mark it irreversible first" in s.gaps["transfer_funds / after_write"]
    main(["suggest", "--agent", "examples.suggest.pitfalls:bank_agent", "--task", "Move $10", "--dry-run"])
    assert "(no case transfer_funds / after_write: mark it irreversible first" in capsys.readouterr().out


def test_the_401_goes_to_a_tool_that_tools_keeps() -> None:
    s = suggest("examples.suggest.billing:careful", faults=["auth_expired"], tools=["find_customer"])
    assert [(k.tool, k.fault) for k in s.cases] == [("find_customer", "auth_expired")]


# -- classification by words ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "description", "kind"),
    [
        ("refund_policy", "Returns the store's refund policy text.", "read"),
        ("purchase_history", "Past purchases of a customer.", "read"),
        ("email_templates", "Available e-mail templates.", "read"),
        ("transfer_limits", "Daily transfer limits for an account.", "read"),
        ("customer_charges", "Returns charges for a customer.", "read"),
        ("get_session", "Current session info.", "read"),
        ("session_summary", "Summary of the chat session.", "read"),
        ("order_status", None, "read"),
        ("process_payment", "Processes a card payment.", "irreversible"),
        ("make_payment", "Pay an invoice.", "irreversible"),
        ("post_message", "Post a message to a Slack channel.", "irreversible"),
        ("drop_table", "Drops a database table.", "irreversible"),
        ("terminate_instance", "Terminate a cloud VM.", "irreversible"),
        ("revoke_api_key", "Revoke an API key.", "irreversible"),
        ("create_charge", "Create a charge on a card.", "irreversible"),
        ("order_pizza", "Order a pizza for delivery.", "irreversible"),
        ("reply_to_ticket", "Reply to a support ticket (emails the customer).", "irreversible"),
        ("update_ticket", "Change a ticket's fields.", "write"),
        ("sign_in", "Sign in again.", "write"),
    ],
)
def test_the_first_word_decides_and_a_read_noun_beats_an_effect_word(
    name: str, description: str | None, kind: str
) -> None:
    c = classify(ToolInfo(name, description, result="dict", source="@chaos"))
    assert c.kind.value == kind, c.kind.why


def test_reading_a_session_is_no_sign_in_and_gets_its_cases() -> None:
    from chaoskit.suggest._classify import is_auth

    assert [is_auth(ToolInfo(n)) for n in ("sign_in", "login", "refresh_token", "get_session", "session_summary")] == [
        True,
        True,
        True,
        False,
        False,
    ]


# -- idempotency keys --------------------------------------------------------------------------------------------


def test_idempotency_keys_under_an_x_prefix_and_denied_in_words() -> None:
    payout = ToolInfo(
        "create_payout", params=(Param("X-Idempotency-Key", "string", True, location="header"),), http="POST /payouts"
    )
    assert classify(payout).idempotency.value == "X-Idempotency-Key"
    denied = ToolInfo(
        "create_transfer",
        "Transfer funds. Note that this endpoint does not honour an Idempotency-Key.",
        params=(Param("amount", "number", True, location="body"),),
        http="POST /transfers",
    )
    honoured = ToolInfo("create_refund", "Refund a charge (honours Idempotency-Key)", http="POST /refunds")
    assert classify(denied).idempotency.value is None and classify(honoured).idempotency.value == "Idempotency-Key"
    assert ("create_transfer", "no_idempotency_key") in _findings(denied)
    assert ("create_payout", "no_idempotency_key") not in _findings(payout)


def test_the_id_of_the_request_a_tool_approves_is_no_idempotency_key() -> None:
    approve = ToolInfo("approve_request", "Approve an expense request.", (Param("request_id", "str", True),))
    charge = ToolInfo("charge_card", "Charge a card.", (Param("card", "str", True), Param("request_id", "str")))
    assert ("approve_request", "no_idempotency_key") in _findings(approve)
    assert classify(charge).idempotency.value == "request_id"


def test_a_delete_or_cancel_needs_no_key_whether_http_or_python() -> None:
    by_http = ToolInfo("delete_order", params=(Param("id", "string", True, "path"),), http="DELETE /orders/{id}")
    by_name = ToolInfo("cancel_order", params=(Param("order_id", "str", True),), irreversible=True)
    assert not {k for _, k in _findings(by_http, by_name)} & {"no_idempotency_key"}
    assert "already gone" in classify(by_name).idempotency.why


# -- OpenAPI -------------------------------------------------------------------------------------------------------

PAYMENTS = """\
openapi: 3.1.0
info: {title: Payments, version: "1"}
paths:
  /v1/customers/{id}:
    get:
      operationId: get_customer
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {content: {application/json: {schema: {type: [object, "null"], properties: {id: {type: string}}}}}}
  /v1/accounts/{id}:
    get:
      operationId: get_account
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          content:
            application/json:
              schema: {oneOf: [{$ref: "#/components/schemas/Account"}, {type: "null"}]}
  /v1/nodes/{id}:
    get:
      operationId: get_node
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}}
        "404": {description: no such node}
  /v1/customers:
    get:
      operationId: list_customers
      responses:
        "200": {content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Customer"}}}}}
  /v1/search:
    post:
      operationId: search_customers
      summary: Full-text search over customers
      requestBody: {content: {application/json: {schema: {type: object, properties: {q: {type: string}}}}}}
      responses:
        "200": {content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Customer"}}}}}
  /v1/refunds:
    post:
      operationId: create_refund
      summary: Refund a charge
      parameters: [{$ref: "#/components/parameters/IdemAlias"}]
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [customer_id, amount], properties: {customer_id: {type: string},
                     amount: {type: number}}}
      responses:
        "201": {description: created}
  /v1/transfers:
    post:
      operationId: create_transfer
      summary: Move money between accounts
      parameters: [{$ref: "#/components/parameters/Idem"}]
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [amount], properties: {amount: {type: number}}}
      responses:
        "201": {description: created}
components:
  parameters:
    Idem: {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
    IdemAlias: {$ref: "#/components/parameters/Idem"}
  schemas:
    Customer: {type: object, properties: {id: {type: string}, name: {type: string}}}
    Account: {type: object, properties: {id: {type: string}}}
    Node: {type: object, properties: {id: {type: string}, kids: {type: array, items: {type: string}}}}
"""


def test_openapi_forms_the_reader_missed(tmp_path: Path) -> None:
    path = tmp_path / "payments.yaml"
    path.write_text(PAYMENTS, encoding="utf-8")
    s = suggest(str(path))  # a $ref to a $ref (IdemAlias) was refused
    by = _by_name(s)
    found = {(f.tool, f.kind) for f in s.findings}
    # 3.1's type: [object, "null"] and a oneOf with null say "not found"
    assert ("get_customer", "cannot_say_not_found") not in found
    assert ("get_account", "cannot_say_not_found") not in found
    # a record looked up by id is no collection, even with an array field
    assert by["get_node"].collection.value is False
    # an array of $ref records is structured: it gets a partial case
    assert by["list_customers"].structured.value is True
    # POST /search: the proxy marks it a write, but it only reads: no key finding, and how to say so
    assert ("search_customers", "no_idempotency_key") not in found
    assert "x-chaoskit-irreversible: false" in by["search_customers"].kind.why
    assert by["create_refund"].idempotency.value == "Idempotency-Key"
    # /v1 is in every path: it once made every read "verify" every write
    assert ("create_transfer", "unverifiable_write") in found
    assert "v1" not in next(f.evidence for f in s.findings if f.tool == "create_transfer")


def test_an_amount_shared_by_a_read_and_a_write_does_not_verify_the_write() -> None:
    transfer = ToolInfo("transfer_funds", params=(Param("account_id", "str", True), Param("amount", "float", True)))
    quote = ToolInfo("get_fx_quote", params=(Param("currency", "str", True), Param("amount", "float", True)))
    assert ("transfer_funds", "unverifiable_write") in _findings(transfer, quote)


def test_a_large_openapi_json_spec_is_read(tmp_path: Path) -> None:
    # 2,500 operations, more than 100,000 values: the YAML reader's limit for plans, not for public API specs
    paths = {
        f"/res{i}/{{id}}": {
            "get": {
                "operationId": f"get_res{i}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "expand", "in": "query", "schema": {"type": "string"}, "description": "fields"},
                    {"name": "locale", "in": "query", "schema": {"type": "string"}, "description": "language"},
                ],
                "responses": {
                    "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                    "404": {"description": "no such thing"},
                },
            }
        }
        for i in range(2500)
    }
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "big", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Thing": {"type": "object", "properties": {"id": {"type": "string"}}}}},
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    s = suggest(str(path), task="Read thing 1")
    assert len(s.classes) == 2500


def test_a_battery_for_an_openapi_api_names_the_api_so_it_runs_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = ROOT / "examples" / "http" / "openapi.yaml"
    command = "python examples/http/api.py --port 0 --ready-file {ready_file}"
    s = suggest(str(spec), task="Refund order A-1001 in full.", tools=["create_refund"], http_command=command)
    written = s.write(tmp_path)
    sc = load_scenario(tmp_path / "create-refund-after-write.yaml")
    assert written and sc.http is not None
    text = (tmp_path / "create-refund-after-write.yaml").read_text()
    assert '"--ready-file", "{ready_file}"' in text and f"openapi: {json.dumps(str(spec))}" in text
    # without it, every case would fail with no proxy and no fault: suggest says so
    main(["suggest", "--agent", str(spec), "--task", "Refund order A-1001.", "--dry-run"])
    assert "no http: block" in capsys.readouterr().err


# -- the output folder -------------------------------------------------------------------------------------------


def test_a_hand_written_scenario_of_the_same_name_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "get-balance-timeout.yaml"
    mine.write_text("# my own timeout scenario\nname: mine\ntask: t\n", encoding="utf-8")
    code = main(
        ["suggest", "--agent", "examples.suggest.pitfalls:bank_agent", "--task", "Move $10", "--out", str(tmp_path)]
    )
    assert code == 2 and "get-balance-timeout.yaml" in capsys.readouterr().err
    assert mine.read_text().startswith("# my own timeout scenario")
    assert not (tmp_path / "transfer-funds-timeout.yaml").exists()  # nothing half-written
