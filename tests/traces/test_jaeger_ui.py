"""``Trace.from_jaeger_json``: Jaeger's UI JSON (``{"data": [...]}`` from ``/api/traces``, or one trace object),
read with Jaeger's own samples, chaoskit's spans as Jaeger's query service converts them, the UI API's empty
answers, and malformed ones; and ``chaoskit check`` on such files (never a pass when nothing can be graded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _helpers import issue_refund, run_spans
from _otlp_jaeger import otlp_to_jaeger
from opentelemetry.sdk.trace import ReadableSpan

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, telemetry

#: answers recorded from a real Jaeger v2 (tests/data/jaeger/README.md says how)
JAEGER = Path(__file__).resolve().parents[1] / "data" / "jaeger"

PLAN = Plan(seed=1, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}])


def _careless() -> str:
    for _ in range(2):
        try:
            issue_refund("4832")
            break
        except chaoskit.ToolHTTPError:
            pass
    return "Refund issued."


@pytest.fixture
def spans() -> tuple[ReadableSpan, ...]:
    return run_spans(PLAN, _careless, name="refund")[1]


@pytest.fixture
def ui(spans: tuple[ReadableSpan, ...]) -> dict[str, Any]:
    return otlp_to_jaeger(telemetry.to_otlp_json(spans))


def _tool_spans(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for trace in doc["data"]:
        for sp in trace["spans"]:
            if sp["operationName"].startswith("execute_tool"):
                yield sp


# --- reading -------------------------------------------------------------------------------------------------


def test_the_ui_json_of_a_run_reads_as_the_run(
    spans: tuple[ReadableSpan, ...], ui: dict[str, Any], tmp_path: Path
) -> None:
    expected = Trace.from_spans(spans)
    path = tmp_path / "jaeger-ui.json"
    path.write_text(json.dumps(ui, indent=2))
    assert Trace.from_jaeger_json(ui) == expected
    assert Trace.from_jaeger_json(path) == expected
    assert Trace.from_jaeger_json(str(path)) == expected
    assert Trace.from_jaeger_json(json.dumps(ui)) == expected
    assert Trace.from_jaeger_json(ui["data"]) == expected  # a list of trace objects
    assert Trace.from_jaeger_json(ui["data"][0]) == expected  # one trace object, as /api/traces/{id}'s data[0]
    (episode,) = expected.episodes
    assert episode.name == "refund" and [a.attempt for a in episode.attempts] == [1, 2]
    assert episode.attempts[0].fault_type == "http" and episode.attempts[0].outcome == "error"


@pytest.mark.parametrize("name", ["ui-get-trace.json", "ui-find-traces.json"])
def test_jaegers_ui_samples_read_as_empty_traces(name: str) -> None:
    trace = Trace.from_jaeger_json(JAEGER / name)
    assert len(trace) == 0 and trace.episodes == []


def test_chaoskit_traces_beside_jaegers_samples(spans: tuple[ReadableSpan, ...], ui: dict[str, Any]) -> None:
    others = json.loads((JAEGER / "ui-find-traces.json").read_text())["data"]
    (single,) = json.loads((JAEGER / "ui-get-trace.json").read_text())["data"]
    mixed = {"data": [*others, single, *ui["data"]], "total": 0, "limit": 0, "offset": 0, "errors": None}
    assert Trace.from_jaeger_json(mixed) == Trace.from_spans(spans)


@pytest.mark.parametrize(
    "answer",
    [
        {"data": [], "total": 0, "limit": 0, "offset": 0, "errors": None},  # /api/traces found nothing
        {"data": None, "total": 0, "limit": 0, "offset": 0, "errors": None},
        {"data": [{"traceID": "83a9efd15c1c98a977e0711cc93ee28b", "spans": [], "processes": {}}]},
    ],
)
def test_the_ui_apis_empty_answers_are_empty_traces(answer: dict[str, Any], tmp_path: Path) -> None:
    assert len(Trace.from_jaeger_json(answer)) == 0
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(answer))
    result = run_cli(["check", str(path)])
    assert result.code == 2  # nothing to grade is never a pass
    assert_clear(result.err, names=["nothing to grade", str(path)])


def test_an_error_answer_of_the_ui_api_is_never_a_pass(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    path.write_text(
        json.dumps({"data": None, "total": 0, "limit": 0, "offset": 0, "errors": [{"code": 500, "msg": "boom"}]})
    )
    result = run_cli(["check", str(path)])
    assert result.code == 2
    assert_clear(result.err, names=["nothing to grade"])


# --- malformed UI JSON ------------------------------------------------------------------------------------


def _cut(doc: dict[str, Any]) -> str:
    return json.dumps(doc)[:-40]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda ui: {"data": {}}, "data: expected a list of trace objects, got a object"),
        (lambda ui: {"data": [1]}, 'data[0]: expected a trace object {"traceID": ..., "spans": [...]}, got a number'),
        (lambda ui: {"data": [{"traceID": "ab", "spans": {}}]}, "data[0].spans: expected a list of span objects"),
        (lambda ui: {"errors": [{"code": 404, "msg": "trace not found"}]}, "expected Jaeger UI JSON"),
        (lambda ui: {"resourceSpans": []}, "expected Jaeger UI JSON"),
    ],
)
def test_malformed_ui_json_names_the_field(make: Any, message: str, ui: dict[str, Any]) -> None:
    with pytest.raises(TraceReadError) as info:
        Trace.from_jaeger_json(make(ui))
    assert message in str(info.value)


def test_a_cut_short_ui_file_names_the_file_and_line(ui: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(_cut(ui))
    with pytest.raises(TraceReadError) as info:
        Trace.from_jaeger_json(path)
    assert info.value.source == str(path) and info.value.line == 1
    assert "expected a complete JSON document" in info.value.reason
    result = run_cli(["check", str(path)])
    assert result.code == 2
    assert_clear(result.err, names=[f"{path}, line 1", "cut short"])


def test_a_tool_span_without_its_start_cannot_be_graded(ui: dict[str, Any]) -> None:
    first = next(_tool_spans(ui))
    del first["startTime"]
    with pytest.raises(TraceReadError) as info:
        Trace.from_jaeger_json(ui)
    assert first["spanID"] in str(info.value) and "startTime" in str(info.value)


def test_a_tool_span_dropped_from_the_ui_json_cannot_be_graded(ui: dict[str, Any]) -> None:
    last = list(_tool_spans(ui))[-1]
    ui["data"][0]["spans"].remove(last)
    with pytest.raises(TraceReadError, match="spans are missing"):
        Trace.from_jaeger_json(ui)


def test_a_ui_file_is_graded_like_the_run(ui: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "jaeger-ui.json"
    path.write_text(json.dumps(ui))
    result = run_cli(["check", str(path), "--json"])
    assert result.code == 1
    (episode,) = json.loads(result.out)["episodes"]
    failed = [c["name"] for c in episode["checks"] if not c["passed"]]
    assert episode["name"] == "refund" and episode["attempts"] == 2 and failed == ["no_duplicate_writes"]
