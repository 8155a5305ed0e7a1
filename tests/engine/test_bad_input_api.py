"""Bad-input corpus for the Python API and the environment variables an agent process reads.

Each case asserts the documented exception type (or warning), a message that names the argument or variable
and says what is allowed, and no traceback (``assert_clear``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear

import chaoskit
from chaoskit import ConfigError, Plan, PlanError, ToolSpec, chaos, telemetry

ROOT = Path(__file__).resolve().parents[2]


def _lookup(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "shipped"}


def _stream(order_id: str) -> Iterator[str]:
    yield order_id


def _lc_tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup(order_id: str) -> str:
        """Look up an order."""
        return order_id

    return lookup


# (id, call, exception type, strings the message must name, strings saying what is allowed)
API_CASES: list[tuple[str, Callable[[], Any], type[Exception], tuple[str, ...], tuple[str, ...]]] = [
    (
        "max_attr_chars-text",
        lambda: chaoskit.configure(max_attr_chars="abc"),
        ConfigError,
        ("max_attr_chars", "'abc'"),
        ("whole number", ">= 64"),
    ),
    (
        "max_attr_chars-small",
        lambda: chaoskit.configure(max_attr_chars=10),
        ConfigError,
        ("max_attr_chars", "10"),
        (">= 64",),
    ),
    (
        "max_attr_chars-bool",
        lambda: chaoskit.configure(max_attr_chars=True),
        ConfigError,
        ("max_attr_chars", "bool"),
        ("whole number",),
    ),
    (
        "max_output_chars-float",
        lambda: chaoskit.configure(max_output_chars=512.5),
        ConfigError,
        ("max_output_chars", "512.5"),
        ("whole number",),
    ),
    (
        "record_results-text",
        lambda: chaoskit.configure(record_results="yes"),
        ConfigError,
        ("record_results", "'yes'"),
        ("True or False",),
    ),
    (
        "secret_keys-bare-string",
        lambda: chaoskit.configure(secret_keys="token"),
        ConfigError,
        ("secret_keys", "bare string", "'token'"),
        ("list of argument names",),
    ),
    (
        "secret_keys-bytes",
        lambda: chaoskit.configure(secret_keys=b"token"),
        ConfigError,
        ("secret_keys",),
        ("list of argument names",),
    ),
    (
        "secret_keys-number-inside",
        lambda: chaoskit.configure(secret_keys=["token", 3]),
        ConfigError,
        ("secret_keys", "3"),
        ("non-empty string",),
    ),
    (
        "secret_keys-mapping",
        lambda: chaoskit.configure(secret_keys={"token": True}),
        ConfigError,
        ("secret_keys", "dict"),
        ("list of argument names",),
    ),
    (
        "secret_keys-int",
        lambda: chaoskit.configure(secret_keys=42),
        ConfigError,
        ("secret_keys", "int"),
        ("list of argument names",),
    ),
    ("on_attempt-int", lambda: chaoskit.configure(on_attempt=42), ConfigError, ("on_attempt", "int"), ("callable",)),
    (
        "on_attempt-item",
        lambda: chaoskit.configure(on_attempt=[print, "audit.log"]),
        ConfigError,
        ("on_attempt", "item 1", "str"),
        ("callable",),
    ),
    (
        "configure-typo",
        lambda: chaoskit.configure(max_attr_char=100),
        ConfigError,
        ("max_attr_char",),
        ("max_attr_chars", "record_results"),
    ),
    (
        "chaos-plan-dict-bad-type",
        lambda: chaos(plan={"faults": [{"type": "explode", "tool": "lookup"}]}),
        PlanError,
        ("chaos(plan)", "faults[0]", "'explode'"),
        ("allowed", "timeout"),
    ),
    (
        "chaos-plan-dict-bad-probability",
        lambda: chaos(plan={"faults": [{"type": "error", "tool": "lookup", "probability": 1.5}]}),
        PlanError,
        ("chaos(plan)", "faults[0].probability"),
        ("from 0 to 1",),
    ),
    (
        "chaos-plan-positional-dict",
        lambda: chaos({"faults": [{"type": "latency", "tool": "lookup"}], "sed": 3}),
        PlanError,
        ("chaos(plan)", "sed"),
        ("seed",),
    ),
    (
        "chaos-plan-path",
        lambda: chaos(plan="plans/flaky.yaml"),
        ConfigError,
        ("chaos(plan)", "str"),
        ("Plan.from_yaml", "dict"),
    ),
    ("chaos-plan-int", lambda: chaos(plan=42), ConfigError, ("chaos(plan)", "int"), ("chaoskit.Plan",)),
    ("chaos-plan-twice", lambda: chaos(Plan(), plan=Plan()), ConfigError, ("chaos()", "plan"), ("once",)),
    ("chaos-not-a-function", lambda: chaos(123), ConfigError, ("chaos()", "int"), ("function", "Plan")),
    (
        "chaos-irreversible-text",
        lambda: chaos(irreversible="yes"),
        ConfigError,
        ("irreversible", "'yes'"),
        ("True or False",),
    ),
    ("chaos-idempotent-int", lambda: chaos(idempotent=1), ConfigError, ("idempotent", "int"), ("True or False",)),
    (
        "chaos-error_result-int",
        lambda: chaos(error_result=42),
        ConfigError,
        ("error_result", "int"),
        ("predicate", "key name", "False"),
    ),
    (
        "chaos-error_result-empty",
        lambda: chaos(error_result=""),
        ConfigError,
        ("error_result", "empty key"),
        ("predicate",),
    ),
    ("chaos-name-empty", lambda: chaos(name=""), ConfigError, ("chaos(name=...)",), ("non-empty string",)),
    ("chaos-name-int", lambda: chaos(name=7)(_lookup), ConfigError, ("chaos(name=...)", "7"), ("non-empty string",)),
    ("chaos-description-int", lambda: chaos(description=3), ConfigError, ("description", "int"), ("string",)),
    (
        "chaos-idempotency_arg-missing",
        lambda: chaos(idempotency_arg="key")(_lookup),
        ConfigError,
        ("idempotency_arg", "'key'", "_lookup"),
        ("order_id",),
    ),
    ("chaos-generator", lambda: chaos(_stream), ConfigError, ("_stream", "generator"), ("list(",)),
    (
        "episode-plan-dict-bad",
        lambda: chaoskit.episode(plan={"faults": [{"type": "http", "status": 700}]}),
        PlanError,
        ("episode(plan)", "faults[0]", "status"),
        ("400",),
    ),
    (
        "episode-plan-path",
        lambda: chaoskit.episode("refund", plan="plans/flaky.yaml"),
        ConfigError,
        ("episode(plan)", "str"),
        ("Plan.from_yaml",),
    ),
    (
        "episode-plan-list",
        lambda: chaoskit.episode("refund", plan=[{"type": "error"}]),
        ConfigError,
        ("episode(plan)", "list"),
        ("chaoskit.Plan", "dict"),
    ),
    ("episode-name-int", lambda: chaoskit.episode(5), ConfigError, ("episode(name=...)", "int"), ("string",)),
    ("toolspec-name-empty", lambda: ToolSpec(name=""), ConfigError, ("name",), ("non-empty string",)),
    (
        "toolspec-plan-tuple",
        lambda: ToolSpec(name="lookup", plan=("error",)),
        ConfigError,  # type: ignore[arg-type]
        ("plan", "tuple"),
        ("chaoskit.Plan",),
    ),
    (
        "toolspec-idempotency_arg",
        lambda: ToolSpec(name="lookup", idempotency_arg=""),
        ConfigError,
        ("idempotency_arg",),
        ("name of an argument",),
    ),
    # the LangChain entry points take the same options and check them the same way, where they are given
    (
        "middleware-irreversible-string",
        lambda: __import__("chaoskit_langchain").ChaosMiddleware(irreversible="issue_refund"),
        ConfigError,
        ("irreversible", "'issue_refund'"),
        ("list of tool names",),
    ),
    (
        "callbacks-plan-dict-bad",
        lambda: __import__("chaoskit_langchain").ChaosCallbackHandler(plan={"faults": 3}),
        PlanError,
        ("plan", "faults"),
        ("list",),
    ),
    (
        "callbacks-error_result",
        lambda: __import__("chaoskit_langchain").ChaosCallbackHandler(error_result=3.0),
        ConfigError,
        ("error_result", "float"),
        ("predicate",),
    ),
    (
        "chaos_tools-idempotent-string",
        lambda: __import__("chaoskit_langchain").chaos_tools([_lc_tool()], idempotent="lookup"),
        ConfigError,
        ("idempotent", "'lookup'"),
        ("list of tool names",),
    ),
    (
        "chaos_tool-not-a-tool",
        lambda: __import__("chaoskit_langchain").chaos_tool(_lookup),
        ConfigError,
        ("chaos_tool()", "function"),
        ("BaseTool",),
    ),
    (
        "chaos_tool-plan-path",
        lambda: __import__("chaoskit_langchain").chaos_tool(_lc_tool(), "flaky.yaml"),
        ConfigError,
        ("chaos_tool(plan)", "str"),
        ("Plan.from_yaml",),
    ),
]


@pytest.mark.parametrize(
    ("call", "exc_type", "names", "allowed"), [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES]
)
def test_python_api_misuse_is_a_clear_chaoskit_error(
    call: Callable[[], Any],
    exc_type: type[Exception],
    names: tuple[str, ...],
    allowed: tuple[str, ...],
) -> None:
    with pytest.raises(exc_type) as raised:
        call()
    assert isinstance(raised.value, chaoskit.ChaoskitError)
    assert_clear(str(raised.value), names=names, allowed=allowed)


def test_configure_checks_every_argument_before_changing_any() -> None:
    with pytest.raises(ConfigError):
        chaoskit.configure(record_results=True, secret_keys="token")
    # nothing changed: redaction of "token" is still on, results still off
    assert chaoskit.engine._config.CONFIG.is_secret("access_token") is True
    assert chaoskit.engine._config.CONFIG.record_results is False


def test_configure_on_attempt_takes_one_callable() -> None:
    seen: list[str] = []
    chaoskit.configure(on_attempt=lambda info: seen.append(f"{info.tool}:{info.outcome}"))
    chaos(_lookup)("4832")
    assert seen == ["_lookup:ok"]


def test_a_plan_dict_is_accepted_where_a_plan_is() -> None:
    lookup = chaos(
        plan={"faults": [{"type": "http", "tool": "lookup_order", "status": 503, "on_call": 1}]}, name="lookup_order"
    )(_lookup)
    with pytest.raises(chaoskit.ToolHTTPError):
        lookup("4832")
    with chaoskit.episode("dict-plan", plan={"faults": [{"type": "error", "tool": "track", "on_call": 2}]}) as ep:
        track = chaos(name="track")(_lookup)
        track("1Z999")
        with pytest.raises(ConnectionResetError):
            track("1Z999")
    assert [(a.outcome, a.fault_type) for a in ep.attempts] == [("ok", None), ("error", "error")]


# -- environment variables -----------------------------------------------------------------------------------

PLAN_CASES: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    ("missing-file", "plans/does-not-exist.yaml", ("CHAOSKIT_PLAN", "does-not-exist.yaml"), ()),
    (
        "inline-bad-type",
        '{"faults": [{"type": "explode", "tool": "lookup"}]}',
        ("CHAOSKIT_PLAN", "faults[0]"),
        ("timeout",),
    ),
    ("bad-file", "@file", ("CHAOSKIT_PLAN", "flaky.yaml", ":3", "probability"), ("from 0 to 1",)),
]


@pytest.mark.parametrize(("value", "names", "allowed"), [c[1:] for c in PLAN_CASES], ids=[c[0] for c in PLAN_CASES])
def test_a_malformed_chaoskit_plan_is_a_plan_error_naming_the_variable(
    value: str,
    names: tuple[str, ...],
    allowed: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if value == "@file":
        path = tmp_path / "flaky.yaml"
        path.write_text("seed: 1\nfaults:\n  - {type: error, tool: lookup, probability: 3}\n")
        value = str(path)
    monkeypatch.setenv("CHAOSKIT_PLAN", value)
    with pytest.raises(PlanError) as raised:
        chaos(_lookup)("4832")
    assert_clear(str(raised.value), names=names, allowed=allowed)


def _agent_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent("""
        import chaoskit
        from chaoskit import chaos

        @chaos
        def lookup(order_id):
            return {"order_id": order_id, "status": "shipped"}

        for n in range(3):
            with chaoskit.episode("support"):
                lookup(f"48{n}")
        chaoskit.telemetry.flush()
        print("agent answered")
    """)
    full = {**os.environ, **env}
    full.pop("CHAOSKIT_PLAN", None)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=full, timeout=120, cwd=ROOT
    )


TRACES_CASES = [
    ("directory", lambda tmp: str(tmp), ("CHAOSKIT_TRACES_FILE", "IsADirectoryError")),
    ("unwritable", lambda tmp: "/proc/chaoskit-no/traces.jsonl", ("CHAOSKIT_TRACES_FILE", "traces.jsonl")),
]


@pytest.mark.parametrize(("make_path", "names"), [c[1:] for c in TRACES_CASES], ids=[c[0] for c in TRACES_CASES])
def test_a_traces_file_that_cannot_be_written_is_warned_about_once(
    make_path: Callable[[Path], str],
    names: tuple[str, ...],
    tmp_path: Path,
) -> None:
    done = _agent_process({"CHAOSKIT_TRACES_FILE": make_path(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agent answered"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert_clear(lines[0], names=names, allowed=("writable directory", "the agent goes on"))


@pytest.mark.parametrize(
    "value",
    [
        "not-a-traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ],
    ids=["garbage", "no-flags", "zero-trace-id"],
)
def test_an_unparseable_traceparent_is_warned_about_once_and_ignored(value: str) -> None:
    done = _agent_process({"TRACEPARENT": value})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agent answered"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert_clear(lines[0], names=("TRACEPARENT", value), allowed=("00-<32 hex trace id>", "ignored"))


def test_write_jsonl_to_a_directory_warns_once_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    sink = telemetry.write_jsonl(ROOT)
    try:
        with caplog.at_level(logging.WARNING, logger="chaoskit"):
            for n in range(3):
                chaos(_lookup)(f"48{n}")
                telemetry.flush()
    finally:
        telemetry.remove_processor(sink)
    records = [r for r in caplog.records if r.name == "chaoskit"]
    assert len(records) == 1 and records[0].exc_info is None
    assert_clear(records[0].getMessage(), names=(str(ROOT), "IsADirectoryError"), allowed=("the agent goes on",))


def test_a_failing_exporter_is_one_line_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(telemetry.SpanProcessor):  # type: ignore[misc]
        def on_end(self, span: Any) -> None:
            raise OSError(28, "No space left on device")

    sink = telemetry.add_processor(Broken())
    try:
        with caplog.at_level(logging.WARNING, logger="chaoskit"):
            for n in range(3):
                chaos(_lookup)(f"48{n}")
    finally:
        telemetry.remove_processor(sink)
    records = [r for r in caplog.records if r.name == "chaoskit"]
    assert len(records) == 1 and records[0].exc_info is None
    assert_clear(records[0].getMessage(), names=("Broken", "on_end", "No space left on device"), allowed=("ignored",))
