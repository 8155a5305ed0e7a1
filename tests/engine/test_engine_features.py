"""The engine features of the hot-path work, each pinned by a test that can fail: bounded argument description,
tracing off, the adapter registry, ``ArgBinder`` against ``inspect.Signature.bind``, the one reset, and a
capture read as a ``Trace`` by either helper."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chaoskit
from chaoskit import ConfigError, Plan, chaos, checks, score, telemetry, testing
from chaoskit.adapters import ArgBinder, _registry, register_adapter, spec_of
from chaoskit.testing import attempt_attributes, capture_spans

# --- 5. describing an argument costs what the cap allows, whatever its size ---------------------------------------

ROWS_TOUCHED: list[int] = []


class Row(dict[str, Any]):
    """A customer row that counts how often its fields are read: the work describing an argument does."""

    def items(self) -> Any:
        ROWS_TOUCHED.append(1)
        return super().items()


def _customers(n: int) -> list[Row]:
    return [
        Row(id=f"cus_{i:06d}", email=f"customer{i}@example.com", plan="pro", password=f"hunter2-{i}") for i in range(n)
    ]


# not declared irreversible: its arguments are described and hashed at a cost bounded by the cap (an
# irreversible tool's oversized arguments are hashed whole: test_an_irreversible_write_s_hash_covers_...)
@chaos
def import_customers(table: str, rows: list[Any], api_key: str) -> dict[str, Any]:
    """Bulk-import customer rows into the CRM."""
    return {"table": table, "imported": len(rows)}


def _import(rows: list[Any]) -> dict[str, Any]:
    ROWS_TOUCHED.clear()
    with capture_spans() as cap, chaoskit.episode("crm-import"):
        import_customers(table="customers", rows=rows, api_key="sk_live_51HxQ2e")
    (attrs,) = attempt_attributes(cap, "import_customers")
    return {**attrs, "touched": len(ROWS_TOUCHED)}


def test_a_200000_row_argument_is_described_at_the_cost_of_a_capped_one() -> None:
    small, large = _import(_customers(10)), _import(_customers(200_000))
    described = _import(_customers(20_000))
    # every row of a small argument is described; a large one costs what the cap allows (tens of rows, as for
    # a 10-row argument), and no more for 200,000 rows than for 20,000
    assert small["touched"] >= 10
    assert large["touched"] == described["touched"] <= 100
    text = large["chaoskit.args"]
    assert len(text) <= 4096
    kept = re.findall(r'"id":"cus_\d{6}"', text)
    marker = re.search(r"…\[\+(\d+) items\]", text)
    assert marker is not None and len(kept) + int(marker.group(1)) == 200_000
    assert '"id":"cus_000000"' in text and "…[+" not in small["chaoskit.args"]
    # secrets are redacted in the clipped form too, at the top level and inside the rows
    for attrs in (small, large):
        assert "sk_live" not in attrs["chaoskit.args"] and "hunter2" not in attrs["chaoskit.args"]
        assert (
            '"api_key":"[REDACTED]"' in attrs["chaoskit.args"] and '"password":"[REDACTED]"' in attrs["chaoskit.args"]
        )


def test_the_args_hash_is_stable_and_the_documented_one_for_small_arguments() -> None:
    # two calls with the same large argument hash alike (a retry of the same import is recognised)
    assert _import(_customers(200_000))["chaoskit.args.hash"] == _import(_customers(200_000))["chaoskit.args.hash"]
    assert _import(_customers(200_000))["chaoskit.args.hash"] != _import(_customers(199_000))["chaoskit.args.hash"]

    # small arguments: sha256(canonical_json(redact(args)))[:16], the idempotency key left out
    @chaos(irreversible=True, idempotency_arg="key")
    def issue_refund(order_id: str, amount: float, api_key: str, tags: tuple[str, ...], key: str) -> str:
        return "ok"

    with capture_spans() as cap, chaoskit.episode("refund"):
        issue_refund("4832", 59.9, "sk_live_51HxQ2e", ("damaged", "priority"), key="rf-4832-1")
    (attrs,) = attempt_attributes(cap, "issue_refund")
    redacted = {"order_id": "4832", "amount": 59.9, "api_key": "[REDACTED]", "tags": ["damaged", "priority"]}
    canonical = json.dumps(redacted, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert attrs["chaoskit.args.hash"] == hashlib.sha256(canonical.encode()).hexdigest()[:16]


class CountedLine(dict[str, Any]):
    """An order line that counts every walk over its keys, values or items."""

    def __iter__(self) -> Any:
        LINES_READ.append(1)
        return super().__iter__()

    def items(self) -> Any:
        LINES_READ.append(1)
        return super().items()

    def values(self) -> Any:
        LINES_READ.append(1)
        return super().values()


LINES_READ: list[int] = []


@chaos
def bulk_upsert_order_lines(warehouse: str, lines: list[Any]) -> dict[str, Any]:
    """Upsert order lines into the warehouse system."""
    return {"warehouse": warehouse, "upserted": len(lines)}


def _upsert(n: int) -> tuple[dict[str, Any], int]:
    lines = [CountedLine(sku=f"SKU-{i:06d}", qty=i % 7 + 1, unit_price=12.5) for i in range(n)]
    LINES_READ.clear()
    with capture_spans() as cap, chaoskit.episode("warehouse-sync"):
        bulk_upsert_order_lines("eu-west-1", lines)
    (attrs,) = attempt_attributes(cap, "bulk_upsert_order_lines")
    return attrs, len(LINES_READ)


def test_a_200000_line_argument_is_described_by_reading_about_as_many_lines_as_a_10_line_one() -> None:
    (small, read_small), (large, read_large), (mid, read_mid) = _upsert(10), _upsert(200_000), _upsert(20_000)
    # the clean rows are walked once, not clipped row by row: a huge list reads a few more lines than a 10-row
    # one (its first ones), never the hundreds that fit the cap
    assert read_large == read_mid <= 2 * read_small
    assert small["chaoskit.args"].count('"sku":') == 10 and "…[+" not in small["chaoskit.args"]
    kept = re.findall(r'"sku":"SKU-(\d{6})"', large["chaoskit.args"])
    marker = re.search(r"…\[\+(\d+) items\]", large["chaoskit.args"])
    assert marker is not None and len(kept) + int(marker.group(1)) == 200_000
    assert kept == [f"{i:06d}" for i in range(len(kept))] and '"warehouse":"eu-west-1"' in large["chaoskit.args"]
    assert _upsert(200_000)[0]["chaoskit.args.hash"] == large["chaoskit.args.hash"] != mid["chaoskit.args.hash"]


@chaos
def sync_inventory(levels: dict[str, int], storefront: dict[str, str]) -> str:
    """Push stock levels to the storefront."""
    return f"synced {len(levels)} SKUs"


def test_a_dict_larger_than_the_cap_is_described_by_its_smallest_keys_whatever_their_order() -> None:
    skus = [f"SKU-{(i * 7919) % 100_000:06d}" for i in range(100_000)]  # not in sorted order
    levels = {sku: i % 40 for i, sku in enumerate(skus)}
    storefront = {"client_secret": "cs_live_9f8e7d", "account": "acme-eu"}
    with capture_spans() as cap, chaoskit.episode("inventory"):
        sync_inventory(levels, storefront)
        sync_inventory(dict(levels), dict(storefront))
    first, again = attempt_attributes(cap, "sync_inventory")
    text = first["chaoskit.args"]
    assert len(text) <= 4096 and "cs_live" not in text and '"client_secret":"[REDACTED]"' in text
    assert '"account":"acme-eu"' in text
    kept = re.findall(r'"(SKU-\d{6})":', text)
    # the smallest keys stand for the rest, so the same mapping built in another order is described alike
    assert 0 < len(kept) <= 16 and kept == sorted(skus)[: len(kept)]
    assert f'"…":"+{100_000 - len(kept)} keys"' in text
    assert again["chaoskit.args.hash"] == first["chaoskit.args.hash"]
    shuffled = dict(reversed(list(levels.items())))
    with capture_spans() as cap, chaoskit.episode("inventory"):
        sync_inventory(shuffled, storefront)
    (reordered,) = attempt_attributes(cap, "sync_inventory")
    assert reordered["chaoskit.args.hash"] == first["chaoskit.args.hash"]


@chaos
def verify_rsa_signature(modulus: int, exponent: int, message: str) -> bool:
    """Verify a signature against an RSA public key."""
    return True


def test_an_int_past_the_text_conversion_limit_is_described_by_its_size_and_the_span_is_kept() -> None:
    with capture_spans() as cap, chaoskit.episode("verify"):
        verify_rsa_signature(3**12_000, 65537, "invoice #4471 approved")
    (attrs,) = attempt_attributes(cap, "verify_rsa_signature")
    assert attrs["chaoskit.args"] == (
        '{"exponent":65537,"message":"invoice #4471 approved","modulus":"<int of 19020 bits>"}'
    )
    assert len(attrs["chaoskit.args.hash"]) == 16 and attrs["chaoskit.outcome"] == "ok"


@chaos
def call_partner_api(path: str, headers: Any) -> int:
    """GET a partner API endpoint."""
    return 200


def test_a_read_only_mapping_argument_is_hashed_as_the_documented_redacted_json() -> None:
    headers = types.MappingProxyType({"Accept": "application/json", "X-Request-Id": "req-4832"})
    with capture_spans() as cap, chaoskit.episode("partner"):
        call_partner_api("/v2/orders/4832", headers)
    (attrs,) = attempt_attributes(cap, "call_partner_api")
    redacted = {"path": "/v2/orders/4832", "headers": dict(headers)}
    canonical = json.dumps(redacted, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert attrs["chaoskit.args"] == canonical
    assert attrs["chaoskit.args.hash"] == hashlib.sha256(canonical.encode()).hexdigest()[:16]


# --- 6. tracing off -------------------------------------------------------------------------------------------------

FLAKY_SEARCH = {"seed": 3, "faults": [{"type": "error", "tool": "search_kb", "on_call": 1, "error": "ECONNRESET"}]}


@chaos
def search_kb(query: str) -> list[str]:
    """Search the help-center articles."""
    return ["How to reset your password", "Two-factor authentication"]


def _kb_agent() -> str:
    for _ in range(2):
        try:
            hits = search_kb(query="reset password")
            return f"See: {hits[0]}"
        except Exception:
            continue
    return "The help center is unavailable right now."


def test_configure_trace_false_exports_nothing_but_faults_fire_and_attempts_are_listed() -> None:
    chaoskit.configure(trace=False)
    with capture_spans() as cap, chaoskit.episode("kb", plan=FLAKY_SEARCH) as ep:
        ep.finish(_kb_agent())
    assert cap.spans == ()
    assert ep.output == "See: How to reset your password"
    assert [(a.attempt, a.outcome, a.fault_type, a.injected, a.executed) for a in ep.attempts] == [
        (1, "error", "error", True, False),
        (2, "ok", None, False, True),
    ]
    assert ep.attempts[0].error_message == "ECONNRESET" and ep.trace_id is None


def test_chaoskit_trace_0_in_the_environment_turns_tracing_off(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    script = textwrap.dedent(f"""
        import json, chaoskit
        from chaoskit import chaos, telemetry

        @chaos
        def search_kb(query: str) -> list[str]:
            return ["How to reset your password"]

        plan = {json.dumps(FLAKY_SEARCH)!r}
        with telemetry.capture() as cap, chaoskit.episode("kb", plan=json.loads(plan)) as ep:
            for _ in range(2):
                try:
                    ep.finish("See: " + search_kb(query="reset password")[0])
                    break
                except ConnectionResetError:
                    pass
        telemetry.flush()
        print(json.dumps({{"spans": len(cap.spans), "output": ep.output,
                          "attempts": [[a.outcome, a.fault_type, a.injected] for a in ep.attempts]}}))
    """)
    env = {**os.environ, "CHAOSKIT_TRACE": "0", "CHAOSKIT_TRACES_FILE": str(traces)}
    env.pop("CHAOSKIT_PLAN", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {
        "spans": 0,
        "output": "See: How to reset your password",
        "attempts": [["error", "error", True], ["ok", None, False]],
    }
    assert not traces.exists() or traces.read_text() == ""


# --- 7. the adapter registry ----------------------------------------------------------------------------------------


class AcmeTool:
    """A third-party framework's tool object."""

    def __init__(self, name: str, run: Callable[..., Any]) -> None:
        self.name = name
        self.run = run


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    adapters: dict[str, Any] = {}
    monkeypatch.setattr(_registry, "_adapters", adapters)
    monkeypatch.setattr(_registry, "_loaded", False)
    return adapters


def _acme_adapter() -> Any:
    def wrap(tool: AcmeTool, **options: Any) -> AcmeTool:
        return AcmeTool(
            options["name"] or tool.name,
            chaos(name=options["name"] or tool.name, irreversible=options["irreversible"], plan=options["plan"])(
                tool.run
            ),
        )

    return (lambda obj: isinstance(obj, AcmeTool)), wrap


def test_a_third_party_adapter_registered_in_process_is_used_by_chaos(registry: dict[str, Any]) -> None:
    register_adapter("acme", _acme_adapter)
    sent: list[str] = []
    tool = AcmeTool("send_email", lambda to, subject: sent.append(to) or "queued")
    wrapped = chaos(irreversible=True)(tool)
    assert isinstance(wrapped, AcmeTool) and wrapped is not tool
    spec = spec_of(wrapped.run)
    assert spec is not None and (spec.name, spec.irreversible) == ("send_email", True)
    with capture_spans() as cap, chaoskit.episode("notify"):
        assert wrapped.run("ana@example.com", subject="Your refund for order 4832") == "queued"
    (attrs,) = attempt_attributes(cap, "send_email")
    assert sent == ["ana@example.com"] and attrs["chaoskit.tool.irreversible"] is True


def test_a_third_party_adapter_registered_as_an_entry_point_is_used_by_chaos(
    registry: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from importlib.metadata import EntryPoint

    (tmp_path / "acme_chaoskit.py").write_text(
        textwrap.dedent("""
        from test_engine_features import _acme_adapter as chaoskit_adapter
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("acme", "acme_chaoskit:chaoskit_adapter", _registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(_registry, "entry_points", lambda group: [ep] if group == _registry.ENTRY_POINT_GROUP else [])
    wrapped = chaos(AcmeTool("lookup_order", lambda order_id: {"order_id": order_id}))
    assert isinstance(wrapped, AcmeTool) and spec_of(wrapped.run) is not None
    assert "acme" in registry


def test_a_langchain_tool_without_the_adapter_installed_names_the_extra(
    registry: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = pytest.importorskip("langchain_core.tools")
    monkeypatch.setattr(_registry, "entry_points", lambda group: [])  # chaoskit-langchain not installed

    @tools.tool
    def lookup_order(order_id: str) -> str:
        """Look an order up by its id."""
        return "shipped"

    with pytest.raises(ConfigError, match=re.escape("pip install chaoskit[langchain]")) as err:
        chaos(irreversible=True)(lookup_order)
    assert "StructuredTool is a langchain tool" in str(err.value)


# --- 8. ArgBinder's fast path binds as inspect.Signature.bind does ------------------------------------------------


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    """A signature of every shape a tool can have; half of them all plain parameters (the fast path)."""
    names = iter(f"p{i}" for i in range(20))
    plain = draw(st.booleans())
    params: list[inspect.Parameter] = []
    defaulted = False
    kinds = (
        (inspect.Parameter.POSITIONAL_OR_KEYWORD,)
        if plain
        else (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    for kind in kinds:
        for _ in range(draw(st.integers(0, 4 if plain else 3))):
            # positional parameters: once one has a default, the rest must have one
            defaulted = defaulted or draw(st.booleans())
            params.append(
                inspect.Parameter(next(names), kind, default=len(params) if defaulted else inspect.Parameter.empty)
            )
    if plain:
        return inspect.Signature(params)
    if draw(st.booleans()):
        params.append(inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL))
    for _ in range(draw(st.integers(0, 2))):
        params.append(
            inspect.Parameter(
                next(names),
                inspect.Parameter.KEYWORD_ONLY,
                default=draw(st.sampled_from([inspect.Parameter.empty, "x"])),
            )
        )
    if draw(st.booleans()):
        params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


@st.composite
def calls(draw: st.DrawFn) -> tuple[inspect.Signature, tuple[Any, ...], dict[str, Any]]:
    """A signature and a call of it: mostly its own parameter names as keywords, in any order, and some that
    do not fit (too many positionals, an unknown or a repeated name)."""
    sig = draw(signatures())
    names = [*sig.parameters, "extra", "args"]
    args = tuple(f"a{i}" for i in range(draw(st.integers(0, len(sig.parameters) + 2))))
    keys = draw(st.lists(st.sampled_from(names), max_size=5, unique=True))
    return sig, args, {k: f"k_{k}" for k in keys}


def _function(sig: inspect.Signature) -> Callable[..., Any]:
    def tool(*args: Any, **kwargs: Any) -> None:
        return None

    tool.__signature__ = sig  # type: ignore[attr-defined]  # inspect.signature reads it, as for any wrapper
    return tool


def _expected(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), **kwargs}  # what ArgBinder records for a call that does not fit
    bound.apply_defaults()
    out = dict(bound.arguments)
    for name, param in sig.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            out.update(out.pop(name, {}))
    return list(out.items())


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=calls())
def test_argbinder_binds_as_signature_bind_does(
    call: tuple[inspect.Signature, tuple[Any, ...], dict[str, Any]],
) -> None:
    sig, args, kwargs = call
    got = ArgBinder(_function(sig), static=True).bind(None, args, kwargs)
    want = _expected(sig, args, kwargs)
    assert (list(got.items()) if isinstance(want, list) else dict(got)) == want
    # a method: the receiver is bound first and left out of what the tool was asked
    posonly = any(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in sig.parameters.values())
    kind = inspect.Parameter.POSITIONAL_ONLY if posonly else inspect.Parameter.POSITIONAL_OR_KEYWORD
    method = inspect.Signature([inspect.Parameter("self", kind), *sig.parameters.values()])
    receiver = object()
    got = ArgBinder(_function(method), static=False).bind(receiver, args, kwargs)
    want = _expected(method, (receiver, *args), kwargs)
    if isinstance(want, list):
        assert list(got.items()) == [(k, v) for k, v in want if k != "self"]
    else:
        assert dict(got) == {"args": list(args), **kwargs}


# --- 9. the one reset -----------------------------------------------------------------------------------------------

GATEWAY_DOWN = Plan(seed=5, faults=[{"type": "http", "tool": "charge_card", "on_call": 1, "status": 503}])


@chaos(GATEWAY_DOWN, irreversible=True, idempotency_arg="key")
def charge_card(customer: str, amount: float, key: str) -> str:
    """Charge the customer's card on file."""
    return f"charged {amount:.2f} to {customer}"


def _charge() -> tuple[int, str]:
    with capture_spans() as cap:
        try:
            outcome = charge_card("cus_000042", 19.99, key="ch-42")
        except chaoskit.ToolHTTPError as exc:
            outcome = f"HTTP {exc.status}"
    (attrs,) = attempt_attributes(cap, "charge_card")
    return attrs["chaoskit.attempt"], outcome


@pytest.mark.parametrize(
    "reset", [chaoskit.reset, testing.reset, GATEWAY_DOWN.reset], ids=["chaoskit.reset", "testing.reset", "plan.reset"]
)
def test_each_reset_restarts_the_call_counters_at_call_1(reset: Callable[[], None]) -> None:
    assert [_charge(), _charge()] == [(1, "HTTP 503"), (2, "charged 19.99 to cus_000042")]
    reset()
    assert _charge() == (1, "HTTP 503")


def test_testing_reset_also_drops_the_span_sinks_and_chaoskit_reset_keeps_them(tmp_path: Path) -> None:
    kept, dropped = tmp_path / "kept.jsonl", tmp_path / "dropped.jsonl"

    def spans_in(path: Path) -> int:
        telemetry.flush()
        return path.read_text().count('"execute_tool charge_card"') if path.exists() else 0

    telemetry.write_jsonl(kept)
    chaoskit.configure(max_attr_chars=512)
    chaoskit.reset()
    _charge()
    assert spans_in(kept) == 1
    telemetry.write_jsonl(dropped)
    testing.reset()
    _charge()
    assert spans_in(kept) == 1 and spans_in(dropped) == 0


# --- 10. a capture read as a Trace, by either helper ----------------------------------------------------------------

REFUNDS: list[str] = []


@chaos(name="issue_refund", irreversible=True)
def refund(order_id: str, amount: float) -> dict[str, Any]:
    REFUNDS.append(order_id)
    return {"order_id": order_id, "refunded": amount}


def test_both_captures_read_as_traces_with_the_same_verdicts() -> None:
    plan = Plan(
        seed=9, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}]
    )
    with (
        testing.capture_spans() as ours,
        telemetry.capture() as theirs,
        chaoskit.episode("support-refund", plan=plan) as ep,
    ):
        for _ in range(2):
            try:
                refund("4832", 59.90)
                break
            except chaoskit.ToolHTTPError:
                continue
        ep.finish("Your refund of 59.90 EUR for order 4832 has been issued.")
    a, b = ours.trace(), theirs.trace()
    assert isinstance(a, chaoskit.Trace) and isinstance(b, chaoskit.Trace)

    def verdicts(trace: chaoskit.Trace) -> list[tuple[Any, ...]]:
        return [(r.name, r.passed, r.severity, r.message, r.evidence) for r in checks.run_checks(trace)]

    assert verdicts(a) == verdicts(b)
    assert ("no_duplicate_writes", False, "fail") in [v[:3] for v in verdicts(a)]  # the verdicts say something
    assert score(a).value == score(b).value


# --- irreversible writes: the hash covers the whole (redacted) arguments ---------------------------------


@chaos(irreversible=True)
def upload_price_list(supplier: str, rows: list[dict[str, Any]], api_key: str) -> str:
    """Replace a supplier's price list (a write that cannot be undone)."""
    return f"replaced {len(rows)} prices for {supplier}"


def _price_rows(n: int, changed: int | None = None) -> list[dict[str, Any]]:
    return [{"sku": f"SKU-{i:06d}", "price": 12.5 if i != changed else 13.0} for i in range(n)]


def test_an_irreversible_write_s_hash_covers_what_lies_past_the_cap() -> None:
    from chaoskit.testing import capture_spans as capture

    with capture() as cap, chaoskit.episode("price-sync", task="Upload the two price lists"):
        upload_price_list("acme", _price_rows(200_000), api_key="sk_live_1")
        upload_price_list("acme", _price_rows(200_000, changed=150_000), api_key="sk_live_1")
    trace = cap.trace()
    first, second = trace.episodes[0].attempts
    # two different payloads that agree on the first rows: two writes, not one repeated
    assert first.args_hash != second.args_hash
    assert checks.no_duplicate_writes(trace).severity == "pass"
    assert "sk_live" not in str(first.args)


def test_an_irreversible_write_repeated_with_a_reordered_mapping_is_a_duplicate() -> None:
    from chaoskit.testing import capture_spans as capture

    @chaos(irreversible=True)
    def set_stock_levels(levels: dict[str, int]) -> str:
        return f"set {len(levels)} levels"

    levels = {f"SKU-{(i * 7919) % 5000:06d}": i % 40 for i in range(5000)}
    with capture() as cap, chaoskit.episode("stock"):
        set_stock_levels(levels)
        set_stock_levels(dict(sorted(levels.items())))  # the same levels, sent again
    result = checks.no_duplicate_writes(cap.trace())
    assert result.severity == "fail" and "repeated an irreversible write" in result.message
