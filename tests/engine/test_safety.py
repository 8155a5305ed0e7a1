"""Chaos only where asked: pass-through without a plan, CHAOSKIT_DISABLE, CHAOSKIT_PLAN, failing sinks."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

import chaoskit
from chaoskit import ChaosWarning, Plan, PlanError, chaos, telemetry
from chaoskit.testing import attempt_attributes, capture_spans


@chaos
def search(q: str) -> list[str]:
    return [q]


def test_no_plan_is_a_plain_pass_through_that_records_a_span() -> None:
    with capture_spans() as cap:
        assert search("a") == ["a"]
        with chaoskit.episode("no-plan"):
            assert search("b") == ["b"]
    attrs = attempt_attributes(cap)
    assert len(attrs) == 2
    assert all("chaoskit.fault.type" not in a and a["chaoskit.outcome"] == "ok" for a in attrs)


def test_disable_turns_every_fault_off(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = Plan(faults=[{"type": "error", "tool": "*"}])

    @chaos(pinned)
    def pinned_tool() -> int:
        return 1

    monkeypatch.setenv("CHAOSKIT_DISABLE", "1")
    with chaoskit.episode("off", plan=Plan(faults=[{"type": "error"}])):
        assert search("a") == ["a"]
        assert pinned_tool() == 1
    monkeypatch.setenv("CHAOSKIT_DISABLE", "0")
    with pytest.raises(ConnectionResetError):
        pinned_tool()


def test_chaoskit_plan_env_activates_for_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("faults:\n  - {type: error, tool: search, on_call: 1}\n")
    monkeypatch.setenv("CHAOSKIT_PLAN", str(path))
    with pytest.raises(ConnectionResetError):
        search("a")
    assert search("a") == ["a"]
    assert chaoskit.active_plan() is not None


def test_malformed_env_plan_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("faults:\n  - {type: boom}\n")
    monkeypatch.setenv("CHAOSKIT_PLAN", str(path))
    with pytest.raises(PlanError, match=r"bad\.yaml:2: faults\[0\]: unknown fault type 'boom'"):
        search("a")


def test_failing_span_processor_never_breaks_the_tool(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            raise OSError("disk full")

    telemetry.add_processor(Broken())
    assert search("a") == ["a"]
    assert "a span processor failed" in caplog.text


def test_unwritable_jsonl_file_never_breaks_the_tool(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    telemetry.write_jsonl(blocker / "sub" / "spans.jsonl")  # parent is a file: cannot be created
    assert search("a") == ["a"]
    telemetry.flush()
    assert "writing spans to" in caplog.text


def test_plan_naming_a_tool_that_never_exists_warns() -> None:
    plan = Plan(faults=[{"type": "error", "tool": "serch"}])
    with pytest.warns(
        ChaosWarning, match=r"faults\[0\]\.tool names 'serch'.*did you mean 'search'.*Known tools: .*search"
    ):
        with chaoskit.episode("typo", plan=plan):
            search("a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with chaoskit.episode("ok", plan=Plan(faults=[{"type": "error", "tool": "search", "on_call": 9}])):
            search("a")


def test_inline_env_plan_json_and_its_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAOSKIT_PLAN", '{"faults": [{"type": "error", "tool": "search", "on_call": 1}]}')
    with pytest.raises(ConnectionResetError):
        search("a")
    chaoskit.reset()
    monkeypatch.setenv("CHAOSKIT_PLAN", '{"faults": [{"type": "error", "on_call": "x"}]}')
    with pytest.raises(PlanError, match=r"^CHAOSKIT_PLAN:1: faults\[0\]\.on_call: must be a call number"):
        search("a")


def test_reset_keeps_the_names_of_wrapped_tools() -> None:
    chaoskit.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # `search` was wrapped at import, before the reset; the plan names it, and it is not called here
        with chaoskit.episode("not-called", plan=Plan(faults=[{"type": "error", "tool": "search"}])):
            pass
