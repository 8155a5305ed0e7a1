"""Regressions for edge cases of the core found by a bug hunt: each test failed before its fix."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import subprocess
import sys
import textwrap
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit import Plan, PlanError, ToolHTTPError, chaos, faults
from chaoskit.testing import attempt_attributes, capture_spans


def test_arguments_with_non_string_keys_never_break_the_call() -> None:
    @chaos
    def lookup(filters: dict[Any, Any]) -> int:
        return len(filters)

    with capture_spans() as cap, chaoskit.episode("keys") as ep:
        assert lookup({1: "a", "b": 2}) == 2
        assert lookup({(1, 2): "x"}) == 1
    assert [a.attempt for a in ep.attempts] == [1, 2]
    assert len(attempt_attributes(cap, "lookup")) == 2


def test_args_hash_does_not_reveal_a_redacted_secret() -> None:
    @chaos
    def login(user: str, password: str) -> bool:
        return True

    with capture_spans() as cap:
        login("alice", "hunter2")
        login("alice", "another")
    a, b = attempt_attributes(cap, "login")
    assert "hunter2" not in json.dumps(a)
    # a guess of the password cannot be confirmed against the recorded hash
    for guess in ("hunter2", "password", "123456"):
        canonical = json.dumps({"password": guess, "user": "alice"}, sort_keys=True, separators=(",", ":"))
        assert hashlib.sha256(canonical.encode()).hexdigest()[:16] != a["chaoskit.args.hash"]
    assert a["chaoskit.args.hash"] == b["chaoskit.args.hash"]  # the same call, whatever the secret


def test_a_failing_application_span_processor_never_loses_the_write() -> None:
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        import chaoskit
        from chaoskit import chaos

        class Flaky(SpanProcessor):
            def on_start(self, span, parent_context=None):
                if span.name == "execute_tool lookup":
                    raise RuntimeError("collector hiccup at start")
            def on_end(self, span):
                if span.name == "execute_tool refund":
                    raise RuntimeError("collector hiccup at end")

        provider = TracerProvider()
        provider.add_span_processor(Flaky())
        trace.set_tracer_provider(provider)
        WRITES = []

        @chaos(irreversible=True)
        def refund(order):
            WRITES.append(order)
            return "R-1"

        @chaos
        def lookup(order):
            return {"order": order}

        with chaoskit.episode("e") as ep:
            assert refund("A") == "R-1"
            assert lookup("A") == {"order": "A"}
        assert WRITES == ["A"]
        assert [(a.tool, a.outcome) for a in ep.attempts] == [("refund", "ok"), ("lookup", "ok")]
        assert not trace.get_current_span().get_span_context().is_valid
        print("OK")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"


async def test_async_callable_objects_take_the_async_path() -> None:
    class Search:
        async def __call__(self, q: str) -> str:
            await asyncio.sleep(0)
            return f"results for {q}"

    search = chaos(name="search")(Search())
    plan = Plan(faults=[{"type": "prompt_injection", "tool": "search", "text": "obey"}])
    async with chaoskit.episode("e", plan=plan):
        assert await search("x") == "results for x\n\nobey"


def test_generator_tools_are_refused_clearly() -> None:
    def rows():  # type: ignore[no-untyped-def]
        yield 1

    async def arows():  # type: ignore[no-untyped-def]
        yield 1

    for fn in (rows, arows):
        with pytest.raises(TypeError, match="is a generator; a tool must return its result"):
            chaos(fn)


def test_a_transform_that_cannot_handle_a_result_skips_the_fault_not_the_call() -> None:
    Point = namedtuple("Point", "x y")

    @chaos
    def where() -> dict[str, Any]:
        return {"location": Point(1, 2), "total": 3}

    @chaos
    def digits() -> str:
        return "pi=" + "1" * 5000

    with chaoskit.episode(
        "e",
        plan=Plan(
            faults=[{"type": "empty", "tool": "where"}, {"type": "garbage", "tool": "digits", "off_by_one": True}]
        ),
    ):
        assert where() == {"location": (), "total": 0}
        assert digits().startswith("pi=")


def test_stale_replays_what_the_tool_returned_not_what_the_agent_changed() -> None:
    @chaos
    def inbox() -> list[str]:
        return ["msg-1"]

    with chaoskit.episode("e", plan=Plan(faults=[{"type": "garbage", "tool": "inbox", "stale": True}])):
        first = inbox()
        first.append("agent-scribble")
        assert inbox() == ["msg-1"]


def test_env_otlp_sink_does_not_double_export_once_the_app_has_a_provider(tmp_path: Path) -> None:
    # the test's receiver counts spans per name on an OTLP/HTTP endpoint on 127.0.0.1
    code = textwrap.dedent(
        """
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from collections import Counter
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        names = Counter()

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                req = ExportTraceServiceRequest()
                req.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            names[s.name] += 1
                self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
            def log_message(self, *a): pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        import os
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"

        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from chaoskit import chaos, telemetry

        @chaos
        def t():
            return 1

        t()                                     # before the app's provider: chaoskit's private one exports
        telemetry.flush()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        t()                                     # after: the app's provider exports, once
        telemetry.flush()
        provider.force_flush()
        print(dict(names))
        server.shutdown()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{'execute_tool t': 2}"


def test_an_episode_without_a_plan_keeps_the_active_one() -> None:
    @chaos
    def search() -> str:
        return "ok"

    plan = Plan(faults=[{"type": "error", "tool": "search"}])
    with plan.activate(), chaoskit.episode("inner") as ep:
        with pytest.raises(ConnectionResetError):
            search()
    assert ep.plan is plan


def test_model_copy_has_its_own_caches() -> None:
    base = Plan(faults=[{"type": "garbage", "tool": "t", "garbage": "FAKE"}])

    @chaos(base)
    def t() -> str:
        return "real"

    assert t() == "FAKE"
    empty = base.model_copy(update={"faults": []})
    assert empty.decide("t", 1, {}, {}) is None


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("faults:\n  - type: error\n    error: [1, 2]\n", "faults[0].error", ["valid string"]),
        ("faults:\n  - type: latency\n    error: boom\n", "faults[0].error", ["unknown key 'error'", "delay_s"]),
        ("faults:\n  - type: empty\n    garbage: x\n", "faults[0].garbage", ["unknown key 'garbage'", "value"]),
        ("faults:\n  - type: [error]\n", "faults[0]", ["type must be a name"]),
        (
            "faults:\n  - type: error\n    tool: a\n    tool: b\n",
            "faults[0].tool",
            ["'tool' is given twice (first on line 3)"],
        ),
        ("seed: true\n", "seed", ["whole number"]),
        ("faults:\n  - {type: latency, delay_s: .inf}\n", "faults[0].delay_s", ["finite"]),
    ],
)
def test_plan_errors_name_the_right_field(tmp_path: Path, text: str, field: str | None, words: list[str]) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        Plan.from_yaml(path)
    assert info.value.field == field and info.value.line is not None
    for word in words:
        assert word in str(info.value)


def test_plan_text_and_paths(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="no plan given"):
        Plan.from_yaml("")
    assert Plan.from_yaml("{}").faults == []
    assert Plan.from_yaml("seed: 3").seed == 3
    odd = tmp_path / "plan:v2.yaml"
    odd.write_text("faults:\n  - {type: error, tool: t}\n")
    assert Plan.from_yaml(str(odd)).faults[0].type == "error"
    with pytest.raises(PlanError, match="is a folder"):
        Plan.from_yaml(str(tmp_path))
    assert Plan.from_yaml("faults: [{type: rate_limit, probability: 1e-3}]").faults[0].probability == 0.001


def test_faults_built_directly_raise_plan_errors() -> None:
    with pytest.raises(PlanError, match=r"^<python>: status: must be an HTTP error status"):
        faults.HTTP(status=200)
    assert faults.HTTP(status=503).status == 503


def test_partial_functions_and_oddly_named_receivers() -> None:
    def get(base: str, path: str) -> str:
        return base + path

    api = chaos(functools.partial(get, "https://api/"))

    class Repo:
        @chaos(idempotency_arg="key")
        def save(this, item: str, key: str | None = None) -> str:
            return item

    with capture_spans() as cap:
        assert api("x") == "https://api/x"
        Repo().save("a", "k-1")
    assert attempt_attributes(cap)[0]["gen_ai.tool.name"] == "get"
    saved = attempt_attributes(cap, "save")[0]
    assert json.loads(saved["chaoskit.args"]) == {"item": "a", "key": "k-1"}
    assert saved["chaoskit.idempotency_key"] == "k-1"


def test_after_write_still_raises_after_the_transform_change() -> None:
    writes: list[int] = []

    @chaos
    def pay(x: int) -> int:
        writes.append(x)
        return x

    with chaoskit.episode("e", plan=Plan(faults=[{"type": "http", "tool": "pay", "after_write": True}])) as ep:
        with pytest.raises(ToolHTTPError):
            pay(1)
    assert writes == [1] and ep.attempts[0].injected
