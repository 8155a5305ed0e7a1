"""Reading exported spans: chaoskit's OTLP-JSON Lines writer, single OTLP objects, Jaeger api_v3 and UI JSON,
answers recorded from a real Jaeger, and errors that name the file, the line and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import issue_refund, read_page, search
from _otlp_jaeger import otlp_to_jaeger
from opentelemetry.sdk.trace import ReadableSpan

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, telemetry
from chaoskit.grading.checks import run_checks

#: answers recorded from a real Jaeger v2 (tests/data/jaeger/README.md says how)
JAEGER = Path(__file__).resolve().parents[1] / "data" / "jaeger"


PLAN = Plan(
    seed=2,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 0.5},
        {"type": "garbage", "tool": "search", "on_call": 2, "garbage": {"price": 12.5, "tags": ["a"]}},
        {"type": "prompt_injection", "tool": "read_page", "asks_for": ["send_email"]},
    ],
)


@pytest.fixture
def spans() -> tuple[ReadableSpan, ...]:
    """Two episodes and some attempts outside any episode, with errors, data faults and an injection."""
    tracer = telemetry.get_tracer()
    with telemetry.capture() as cap:
        for name in ("first", "second"):
            with chaoskit.episode(name, plan=PLAN, user="ann") as ep:
                for _ in range(2):
                    try:
                        issue_refund("4832")
                    except chaoskit.ToolHTTPError:
                        pass
                for _ in range(3):
                    try:
                        search("a")
                    except chaoskit.ToolHTTPError:
                        pass
                read_page("u")
                with tracer.start_as_current_span("chat model"):
                    pass
                ep.finish(f"{name}: done")
        search("outside")
        return cap.spans


def _write_jsonl(spans: tuple[ReadableSpan, ...], path: Path, batch: int = 3) -> Path:
    exporter = telemetry.JsonLinesSpanExporter(path)
    for i in range(0, len(spans), batch):
        exporter.export(spans[i : i + batch])
    exporter.shutdown()
    return path


def test_chaoskit_jsonl_file_reads_back_as_the_same_trace(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    expected = Trace.from_spans(spans)
    assert len(expected.episodes) == 3 and len(expected.attempts) == 13
    path = _write_jsonl(spans, tmp_path / "t.jsonl")
    assert len(path.read_text().splitlines()) > 1
    assert Trace.from_otlp_json(path) == expected
    assert Trace.from_otlp_json(str(path)) == expected
    assert Trace.load(path) == expected
    assert Trace.load(path, format="otlp") == expected


def test_the_writer_used_by_chaoskit_traces_file(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    processor = telemetry.write_jsonl(path)
    live_plan = Plan(seed=1, faults=[{"type": "rate_limit", "tool": "search", "on_call": 1}])
    with chaoskit.episode("live", plan=live_plan) as ep:
        with pytest.raises(chaoskit.ToolHTTPError):
            search("a")
        ep.finish("ok")
    telemetry.remove_processor(processor)
    trace = Trace.load(path)
    assert [e.name for e in trace.episodes] == ["live"]
    assert trace.attempts[0].fault_type == "rate_limit"


def test_single_object_api_v3_wrapper_and_text(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    expected = Trace.from_spans(spans)
    doc = telemetry.to_otlp_json(spans)
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(doc, indent=2))
    assert Trace.load(pretty) == expected
    assert Trace.from_otlp_json(doc) == expected
    assert Trace.from_otlp_json(json.dumps(doc)) == expected
    assert Trace.from_otlp_json({"result": doc}) == expected
    api_v3 = tmp_path / "api_v3.json"
    api_v3.write_text(json.dumps({"result": doc}, indent=1))
    assert Trace.load(api_v3) == expected
    # spans split over several resourceSpans objects in a list
    assert Trace.from_otlp_json([telemetry.to_otlp_json(spans[:4]), telemetry.to_otlp_json(spans[4:])]) == expected


def test_jaeger_ui_json_of_the_same_run(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    expected = Trace.from_spans(spans)
    ui = otlp_to_jaeger(telemetry.to_otlp_json(spans))
    assert Trace.from_jaeger_json(ui) == expected
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(ui))
    assert Trace.load(path) == expected
    assert Trace.load(path, format="jaeger") == expected
    one_trace = tmp_path / "one.json"
    one_trace.write_text(json.dumps(ui["data"][0], indent=2))
    assert len(Trace.load(one_trace).episodes) >= 1
    # array attributes survive Jaeger's flattening to JSON text
    injected = next(a for a in Trace.from_jaeger_json(ui).attempts if a.fault_type == "prompt_injection")
    assert injected.fault_params["asks_for"] == ["send_email"]


def test_duplicate_spans_are_read_once(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = _write_jsonl(spans, tmp_path / "dup.jsonl")
    path.write_text(path.read_text() * 2)
    assert Trace.load(path) == Trace.from_spans(spans)


def test_base64_ids_from_protobuf_default_json(spans: tuple[ReadableSpan, ...]) -> None:
    import base64

    doc = telemetry.to_otlp_json(spans)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for key in ("traceId", "spanId"):
                    sp[key] = base64.b64encode(bytes.fromhex(sp[key])).decode()
    assert Trace.from_otlp_json(doc) == Trace.from_spans(spans)


# --- errors ---------------------------------------------------------------------------------------


def test_truncated_jsonl_names_file_line_and_expectation(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = _write_jsonl(spans, tmp_path / "cut.jsonl")
    text = path.read_text()
    path.write_text(text[: len(text) - 40])
    n_lines = len(text.splitlines())
    with pytest.raises(TraceReadError) as info:
        Trace.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line {n_lines}: ")
    assert "expected one complete JSON object per line" in message and "cut short" in message
    assert info.value.line == n_lines and info.value.source == str(path)
    assert isinstance(info.value, chaoskit.ChaoskitError)


def test_truncated_pretty_json(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    text = json.dumps(telemetry.to_otlp_json(spans), indent=2)
    path.write_text(text[: len(text) // 2])
    with pytest.raises(TraceReadError, match=r"cut\.json, line \d+: expected a complete JSON document"):
        Trace.load(path)


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("", "the file is empty; expected OTLP-JSON or Jaeger JSON"),
        ('{"hello": 1}\n', r"line 1: expected OTLP-JSON or Jaeger JSON; found keys 'hello'"),
        ('{"resourceSpans": 3}\n', "line 1: resourceSpans: expected a list of objects, got a number"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "execute_tool x", "attributes": 5}]}]}]}\n',
            r"line 1: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\] \(execute_tool x\): attributes: expected a list "
            r"of \{key, value\} objects, got a number",
        ),
        ("[1, 2]\n", "expected OTLP-JSON or Jaeger JSON, got a JSON number"),
        ('{"error": {"httpCode": 404, "message": "No traces found"}}\n', "answered with an error.*No traces found"),
    ],
)
def test_malformed_files(tmp_path: Path, content: str, pattern: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TraceReadError, match=pattern):
        Trace.load(path)


def test_a_chaoskit_span_with_a_bad_attempt_number(tmp_path: Path) -> None:
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "execute_tool t",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "chaoskit.attempt", "value": {"stringValue": "first"}},
            {"key": "chaoskit.outcome", "value": {"stringValue": "ok"}},
            {"key": "chaoskit.tool.executed", "value": {"boolValue": True}},
            {"key": "chaoskit.tool.irreversible", "value": {"boolValue": False}},
        ],
    }
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": []}\n' + json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    with pytest.raises(
        TraceReadError,
        match=r"line 2: span cdcdcdcdcdcdcdcd \(execute_tool t\): expected chaoskit.attempt to be a whole",
    ):
        Trace.load(path)


def test_missing_file_and_forced_wrong_format(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    with pytest.raises(TraceReadError, match=r"nope\.json: file not found"):
        Trace.load(tmp_path / "nope.json")
    path = _write_jsonl(spans, tmp_path / "t.jsonl")
    with pytest.raises(TraceReadError, match=r"line 1: expected Jaeger UI JSON"):
        Trace.load(path, format="jaeger")
    with pytest.raises(TraceReadError, match="unknown trace format 'zipkin'"):
        Trace.load(path, format="zipkin")


# --- answers recorded from a real Jaeger (tests/data/jaeger) -----------------------------------------------


def test_otlp_to_jaeger_matches_jaegers_own_conversion() -> None:
    given = json.loads((JAEGER / "foreign-otlp.json").read_text())
    expected = json.loads((JAEGER / "ui-get-trace.json").read_text())
    assert otlp_to_jaeger(given) == expected


@pytest.mark.parametrize(
    "name",
    ["v3-find-traces.json", "v3-get-trace.json", "foreign-otlp.json", "ui-get-trace.json", "ui-find-traces.json"],
)
def test_jaeger_samples_read_without_chaoskit_spans(name: str) -> None:
    # none of these holds chaoskit spans: they must read cleanly, as empty traces
    trace = Trace.load(JAEGER / name)
    assert trace.episodes == []


def test_jaeger_sample_formats_are_sniffed() -> None:
    with pytest.raises(TraceReadError, match="expected Jaeger UI JSON"):
        Trace.load(JAEGER / "v3-find-traces.json", format="jaeger")
    with pytest.raises(TraceReadError, match="expected an OTLP-JSON object"):
        Trace.load(JAEGER / "ui-get-trace.json", format="otlp")


def test_chaoskit_spans_inside_a_jaeger_sample_are_found(spans: tuple[ReadableSpan, ...]) -> None:
    (sample,) = json.loads((JAEGER / "ui-get-trace.json").read_text())["data"]
    ours = otlp_to_jaeger(telemetry.to_otlp_json(spans))
    mixed = {"data": [sample, *ours["data"]]}
    assert Trace.from_jaeger_json(mixed) == Trace.from_spans(spans)


def test_a_chaoskit_episode_recorded_from_jaeger_grades_alike_from_its_ui_and_api_v3_answers() -> None:
    """One naive episode (a refund retried after a 500 that came after the write) as a real Jaeger gave it, with
    the ``chaoskit.evaluation`` span ``--write-back`` added under it: both answers grade alike, and it fails."""
    ui, v3 = Trace.load(JAEGER / "ui-chaoskit-episode.json"), Trace.load(JAEGER / "v3-chaoskit-episode.json")
    assert len(ui.episodes) == len(v3.episodes) == 1
    names = ["no_duplicate_writes", "no_bluff", "reports_failure", "no_retry_storm"]
    a, b = run_checks(ui, names), run_checks(v3, names)
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]
    assert [r.name for r in a if not r.passed] == ["no_duplicate_writes", "no_bluff"]  # it also claims success
    assert ui.episodes[0].attempts == v3.episodes[0].attempts
    (doc,) = json.loads((JAEGER / "ui-chaoskit-episode.json").read_text())["data"]
    assert any(sp["operationName"].startswith("chaoskit.evaluation ") for sp in doc["spans"])


def test_cut_string_error_reads_as_one_sentence(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = _write_jsonl(spans, tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    # cut inside a string value, the most common way a killed writer leaves a file
    cut = lines[1][: lines[1].index('"stringValue"') + 20]
    path.write_text(lines[0] + "\n" + cut + "\n")
    with pytest.raises(TraceReadError) as info:
        Trace.load(path)
    assert "Unterminated string starting at column" in str(info.value)
    assert "at at" not in str(info.value)


# --- line numbers, byte-order marks, in-memory spans ----------------------------------------------------------


def test_a_one_line_file_cut_short_is_line_1_not_line_2(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(telemetry.to_otlp_json(spans))[:-25] + "\n")
    with pytest.raises(TraceReadError) as info:
        Trace.load(path)
    assert info.value.line == 1
    assert "where the text ends" in info.value.reason


def test_a_byte_order_mark_is_accepted(spans: tuple[ReadableSpan, ...], tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(telemetry.to_otlp_json(spans), indent=2).encode())
    assert Trace.load(path) == Trace.from_spans(spans)


def test_a_bad_span_in_a_pretty_printed_file_is_named_at_its_own_line(
    spans: tuple[ReadableSpan, ...], tmp_path: Path
) -> None:
    doc = telemetry.to_otlp_json(spans)
    last = [
        sp
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
        if sp["name"].startswith("execute_tool")
    ][-1]
    last["endTimeUnixNano"] = "5"
    path = tmp_path / "pretty.json"
    text = json.dumps(doc, indent=2)
    path.write_text(text)
    expected_line = next(i for i, ln in enumerate(text.splitlines(), 1) if f'"spanId": "{last["spanId"]}"' in ln)
    assert expected_line > 100
    with pytest.raises(TraceReadError) as info:
        Trace.load(path)
    assert info.value.line == expected_line
    assert f"span {last['spanId']} (execute_tool search): the span ends before it starts" in info.value.reason


def test_in_memory_spans_are_checked_like_files() -> None:
    from opentelemetry.sdk.trace import ReadableSpan as Span
    from opentelemetry.trace import SpanContext

    def span(attrs: dict[str, object], start: int | None = 1_000, end: int | None = 2_000) -> Span:
        ctx = SpanContext(trace_id=0xAB, span_id=0xCD, is_remote=False)
        return Span(name="execute_tool search", context=ctx, attributes=attrs, start_time=start, end_time=end)

    ok = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "chaoskit.attempt": 1,
        "chaoskit.outcome": "ok",
        "chaoskit.tool.executed": True,
        "chaoskit.tool.irreversible": False,
    }
    assert [a.tool for a in Trace.from_spans([span(ok)]).attempts] == ["search"]
    with pytest.raises(
        TraceReadError,
        match=r"<spans>: span 00000000000000cd \(execute_tool search\): expected "
        r"chaoskit.attempt to be a whole number >= 1, got 0",
    ):
        Trace.from_spans([span({**ok, "chaoskit.attempt": 0})])
    with pytest.raises(TraceReadError, match="the span has not ended"):
        Trace.from_spans([span(ok, end=None)])
    with pytest.raises(TraceReadError, match="ends before it starts"):
        Trace.from_spans([span(ok, start=3_000)])
    # a span without chaoskit attributes is someone else's, as before
    assert Trace.from_spans([span({"gen_ai.operation.name": "execute_tool"})]).episodes == []
