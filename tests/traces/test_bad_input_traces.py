"""Traces that cannot be graded: every one is exit code 2 from ``chaoskit check`` (never 0, never a traceback) or a
``TraceReadError`` from the Python readers, with a message naming the file, the line, the span or field, and what
is allowed.

The corpus starts from one real episode: a support agent looks up order 4832, refunds it, gets an HTTP 500 that
came *after* the refund went through, and refunds again without an idempotency key. Graded intact, that trace
fails ``no_duplicate_writes`` (exit 1); each case below breaks or tampers with it, or feeds a reader something
that is not a trace at all.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _helpers import issue_refund, search
from _otlp_jaeger import otlp_to_jaeger

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, checks, telemetry

PLAN = Plan(seed=4, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}])


def _agent_doc() -> dict[str, Any]:
    with telemetry.capture() as cap:
        with chaoskit.episode("refund-order-4832", plan=PLAN) as ep:
            search("order 4832 status")
            for _ in range(2):
                try:
                    issue_refund("4832")  # no idempotency key: the retry refunds twice
                    break
                except chaoskit.ToolHTTPError:
                    pass
            ep.finish("I refunded order 4832.")
        mine = [s for s in cap.spans if (s.attributes or {}).get("chaoskit.episode.id") == ep.id]
        return telemetry.to_otlp_json(mine)


DOC = _agent_doc()


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _tool(doc: dict[str, Any], n: int = 0) -> dict[str, Any]:
    return [s for s in _spans(doc) if s["name"].startswith("execute_tool")][n]


def _refund_retry(doc: dict[str, Any]) -> dict[str, Any]:
    return _tool(doc, 2)


def _root(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in _spans(doc) if s["name"].startswith("invoke_agent"))


def _set(span: dict[str, Any], key: str, value: dict[str, Any] | None) -> None:
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key]
    if value is not None:
        span["attributes"].append({"key": key, "value": value})


def _jsonl(*docs: Any) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def _tampered(change: Callable[[dict[str, Any]], object]) -> bytes:
    """The trace as two JSON Lines (an empty batch, then the spans), with ``change`` applied to the spans."""
    doc = copy.deepcopy(DOC)
    change(doc)
    return _jsonl({"resourceSpans": []}, doc)


def _jaeger(change: Callable[[dict[str, Any]], object], indent: int | None = None) -> bytes:
    doc = otlp_to_jaeger(copy.deepcopy(DOC))
    change(doc)
    return json.dumps(doc, indent=indent).encode()


def _jaeger_tool(doc: dict[str, Any]) -> dict[str, Any]:
    """The retry of the refund (the span ``RETRY_ID``)."""
    return [s for s in doc["data"][0]["spans"] if s["operationName"] == "execute_tool issue_refund"][-1]


def _jaeger_set(span: dict[str, Any], key: str, tag: dict[str, Any] | None) -> None:
    span["tags"] = [t for t in span["tags"] if t["key"] != key]
    if tag is not None:
        span["tags"].append({"key": key, **tag})


RETRY_ID = _refund_retry(DOC)["spanId"]
FIRST_ID = _tool(DOC, 0)["spanId"]


def _drop_span(doc: dict[str, Any]) -> None:
    ss = doc["resourceSpans"][0]["scopeSpans"][0]
    ss["spans"] = [s for s in ss["spans"] if s["spanId"] != RETRY_ID]


def _duplicate_with_other_outcome(doc: dict[str, Any]) -> None:
    twin = copy.deepcopy(_refund_retry(doc))
    _set(twin, "chaoskit.outcome", {"stringValue": "error"})
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(twin)


def _second_root(doc: dict[str, Any]) -> None:
    twin = copy.deepcopy(_root(doc))
    twin["spanId"] = "0123456789abcdef"
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(twin)


def _foreign_only(doc: dict[str, Any]) -> None:
    for sp in _spans(doc):
        sp["attributes"] = [a for a in sp["attributes"] if not a["key"].startswith("chaoskit.")]


def _pretty_otlp(change: Callable[[dict[str, Any]], object]) -> bytes:
    doc = copy.deepcopy(DOC)
    change(doc)
    return json.dumps(doc, indent=2).encode()


def _line_of(content: bytes, needle: str) -> str:
    for i, line in enumerate(content.decode().splitlines(), 1):
        if needle in line:
            return f"line {i}"
    raise AssertionError(f"{needle!r} not in the file")


ATTEMPT_RANGE = "whole number >= 1"
# (id, file name, content, what the message must name besides the file, what it must say is allowed)
CASES: list[tuple[str, str, bytes | None, list[str], list[str]]] = [
    # --- not a trace at all ------------------------------------------------------------------------------------
    ("empty-file", "t.jsonl", b"", ["empty"], ["OTLP-JSON", "Jaeger JSON"]),
    ("blank-lines", "t.jsonl", b"\n  \n\t\n", ["empty"], ["OTLP-JSON"]),
    ("binary", "t.json", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", ["line 1", "not UTF-8"], ["OTLP-JSON"]),
    (
        "latin1-on-line-2",
        "t.jsonl",
        b'{"resourceSpans": []}\n{"resourceSpans": "caf\xe9"}\n',
        ["line 2", "not UTF-8"],
        ["OTLP-JSON"],
    ),
    ("json-scalar", "t.json", b"42\n", ["line 1", "number"], ["OTLP-JSON or Jaeger JSON"]),
    ("other-object", "t.json", b'{"hello": "world"}\n', ["line 1", "'hello'"], ["OTLP-JSON or Jaeger JSON"]),
    ("empty-object", "t.json", b"{}\n", ["line 1", "empty object"], ["OTLP-JSON or Jaeger JSON"]),
    (
        "deep-nesting",
        "deep.json",
        b"[" * 100_000 + b"]" * 100_000,
        ["line 1", "nested too deeply"],
        ["fewer than 10 levels"],
    ),
    (
        "deep-nesting-in-a-line",
        "deep.jsonl",
        b'{"resourceSpans": []}\n{"resourceSpans": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n",
        ["line 2", "nested too deeply"],
        ["fewer than 10 levels"],
    ),
    (
        "huge-number",
        "t.jsonl",
        b'{"resourceSpans": [], "n": ' + b"9" * 5000 + b"}\n",
        ["line 1", "number"],
        ["usual size"],
    ),
    (
        "backend-error",
        "t.json",
        b'{"error": {"httpCode": 500, "message": "storage unavailable"}}',
        ["line 1", "storage unavailable"],
        ["instead of spans"],
    ),
    # --- cut short ---------------------------------------------------------------------------------------------
    ("one-line-cut", "t.jsonl", _jsonl(DOC)[:-200], ["line 1", "cut short"], ["complete JSON"]),
    ("one-line-cut-no-newline", "t.jsonl", _jsonl(DOC)[:300], ["line 1", "cut short"], ["complete JSON"]),
    (
        "second-line-cut",
        "t.jsonl",
        _jsonl({"resourceSpans": []}, DOC)[:-50],
        ["line 2", "cut short"],
        ["one complete JSON object per line"],
    ),
    (
        "first-line-cut-second-fine",
        "t.jsonl",
        _jsonl(DOC)[:-100] + b"\n" + _jsonl({"resourceSpans": []}),
        ["line 1", "cut short"],
        ["one complete JSON object per line"],
    ),
    # --- structure ---------------------------------------------------------------------------------------------
    (
        "resourceSpans-not-list",
        "t.jsonl",
        _jsonl({"resourceSpans": {"scopeSpans": []}}),
        ["line 1", "resourceSpans"],
        ["a list of objects"],
    ),
    (
        "scopeSpans-not-list",
        "t.jsonl",
        _jsonl({"resourceSpans": [{"scopeSpans": "spans"}]}),
        ["line 1", "resourceSpans[0].scopeSpans"],
        ["a list of objects"],
    ),
    (
        "spans-not-list",
        "t.jsonl",
        _jsonl({"resourceSpans": [{"scopeSpans": [{"spans": 7}]}]}),
        ["line 1", "scopeSpans[0].spans"],
        ["a list of span objects"],
    ),
    (
        "span-not-object",
        "t.jsonl",
        _jsonl({"resourceSpans": [{"scopeSpans": [{"spans": ["execute_tool x"]}]}]}),
        ["line 1", "spans[0]"],
        ["a span object"],
    ),
    (
        "attributes-not-list",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).update(attributes={"a": 1})),
        ["line 2", RETRY_ID, "attributes"],
        ["a list of {key, value} objects"],
    ),
    (
        "attribute-without-key",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d)["attributes"].append({"value": {"stringValue": "x"}})),
        ["line 2", RETRY_ID],
        ['"key": string'],
    ),
    ("api-v3-result-not-object", "t.json", b'{"result": [1, 2]}', ["line 1", "result"], ["resourceSpans"]),
    # --- spans without ids or times ----------------------------------------------------------------------------
    (
        "no-span-id",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).pop("spanId")),
        ["line 2", "spans[2]", "spanId"],
        ["16 hex digits"],
    ),
    (
        "span-id-not-hex",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).update(spanId="not-an-id!")),
        ["line 2", "spanId", "not-an-id!"],
        ["16 hex digits"],
    ),
    (
        "span-id-all-zero",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).update(spanId="0" * 16)),
        ["line 2", "spanId"],
        ["not all zero"],
    ),
    (
        "span-id-base64-wrong-size",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).update(spanId="AAECAw==")),
        ["line 2", "spanId"],
        ["base64 of 8 bytes"],
    ),
    (
        "no-trace-id",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).pop("traceId")),
        ["line 2", RETRY_ID, "traceId"],
        ["32 hex digits"],
    ),
    (
        "no-start-time",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).pop("startTimeUnixNano")),
        ["line 2", RETRY_ID, "startTimeUnixNano"],
        ["nanoseconds since the epoch"],
    ),
    (
        "no-end-time",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).pop("endTimeUnixNano")),
        ["line 2", RETRY_ID, "endTimeUnixNano"],
        ["whole number > 0"],
    ),
    (
        "start-time-text",
        "t.jsonl",
        _tampered(lambda d: _refund_retry(d).update(startTimeUnixNano="soon")),
        ["line 2", RETRY_ID, "'soon'"],
        ["whole number > 0"],
    ),
    (
        "end-before-start",
        "t.jsonl",
        _tampered(
            lambda d: _refund_retry(d).update(endTimeUnixNano=str(int(_refund_retry(d)["startTimeUnixNano"]) - 1))
        ),
        ["line 2", RETRY_ID, "ends before it starts"],
        ["endTimeUnixNano", "startTimeUnixNano"],
    ),
    # --- chaoskit spans that cannot be graded ------------------------------------------------------------------
    (
        "no-attempt-attribute",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.attempt", None)),
        ["line 2", RETRY_ID, "chaoskit.attempt", "missing"],
        [ATTEMPT_RANGE],
    ),
    (
        "attempt-zero",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.attempt", {"intValue": "0"})),
        ["line 2", RETRY_ID, "chaoskit.attempt", "got 0"],
        [ATTEMPT_RANGE],
    ),
    (
        "attempt-negative",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.attempt", {"intValue": "-2"})),
        ["line 2", RETRY_ID, "chaoskit.attempt", "-2"],
        [ATTEMPT_RANGE],
    ),
    (
        "attempt-text",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.attempt", {"stringValue": "second"})),
        ["line 2", RETRY_ID, "chaoskit.attempt", "'second'"],
        [ATTEMPT_RANGE],
    ),
    (
        "attempt-int-value-not-a-number",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.attempt", {"intValue": "2x"})),
        ["line 2", RETRY_ID, "chaoskit.attempt", "intValue"],
        ["int value"],
    ),
    (
        "irreversible-as-text",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.tool.irreversible", {"stringValue": "no"})),
        ["line 2", RETRY_ID, "chaoskit.tool.irreversible", "'no'"],
        ["true or false"],
    ),
    (
        "executed-bool-as-string",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.tool.executed", {"boolValue": "false"})),
        ["line 2", RETRY_ID, "chaoskit.tool.executed", "boolValue"],
        ["bool value"],
    ),
    (
        "unknown-outcome",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.outcome", {"stringValue": "fine"})),
        ["line 2", RETRY_ID, "chaoskit.outcome", "'fine'"],
        ["ok, error, cancelled"],
    ),
    (
        "episode-id-number",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.episode.id", {"intValue": "7"})),
        ["line 2", RETRY_ID, "chaoskit.episode.id"],
        ["non-empty string"],
    ),
    (
        "idempotency-key-number",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "chaoskit.idempotency_key", {"intValue": "7"})),
        ["line 2", RETRY_ID, "chaoskit.idempotency_key"],
        ["a string"],
    ),
    (
        "fault-index-negative",
        "t.jsonl",
        _tampered(lambda d: _set(_tool(d, 1), "chaoskit.fault.index", {"intValue": "-1"})),
        ["line 2", "chaoskit.fault.index", "-1"],
        ["whole number >= 0"],
    ),
    (
        "status-code-text",
        "t.jsonl",
        _tampered(lambda d: _set(_tool(d, 1), "http.response.status_code", {"stringValue": "five hundred"})),
        ["line 2", "http.response.status_code"],
        ["whole number >= 0"],
    ),
    (
        "retry-after-negative",
        "t.jsonl",
        _tampered(lambda d: _set(_tool(d, 1), "chaoskit.retry_after", {"doubleValue": -1.5})),
        ["line 2", "chaoskit.retry_after", "-1.5"],
        ["number of seconds >= 0"],
    ),
    (
        "asks-for-not-a-list",
        "t.jsonl",
        _tampered(lambda d: _set(_tool(d, 1), "chaoskit.fault.asks_for", {"intValue": "3"})),
        ["line 2", "chaoskit.fault.asks_for"],
        ["list of tool names"],
    ),
    (
        "operation-name-contradicts",
        "t.jsonl",
        _tampered(lambda d: _set(_refund_retry(d), "gen_ai.operation.name", {"stringValue": "chat"})),
        ["line 2", RETRY_ID, "gen_ai.operation.name", "'chat'"],
        ["'execute_tool' (or none)"],
    ),
    (
        "no-tool-name",
        "t.jsonl",
        _tampered(
            lambda d: (_set(_refund_retry(d), "gen_ai.tool.name", None), _refund_retry(d).update(name="execute_tool"))
        ),
        ["line 2", RETRY_ID, "no tool name"],
        ["gen_ai.tool.name"],
    ),
    (
        "root-without-episode-id",
        "t.jsonl",
        _tampered(lambda d: _set(_root(d), "chaoskit.episode.id", None)),
        ["line 2", "invoke_agent", "chaoskit.episode.id", "missing"],
        ["a string"],
    ),
    (
        "duplicate-span-id-different-content",
        "t.jsonl",
        _tampered(_duplicate_with_other_outcome),
        ["line 2", RETRY_ID, "appears twice with different content"],
        ["must be unique"],
    ),
    (
        "two-roots-for-one-episode",
        "t.jsonl",
        _tampered(_second_root),
        ["line 2", "two invoke_agent spans"],
        ["exactly one"],
    ),
    (
        "episode-missing-an-attempt",
        "t.jsonl",
        _tampered(_drop_span),
        ["line 2", "recorded 3 tool attempt(s)", "holds 2"],
        ["spans are missing"],
    ),
    # --- nothing to grade --------------------------------------------------------------------------------------
    ("no-spans", "t.jsonl", _jsonl({"resourceSpans": []}), ["nothing to grade", "no spans"], []),
    ("api-v3-empty-result", "t.json", b'{"result": {}}', ["nothing to grade", "no spans"], []),
    (
        "foreign-spans-only",
        "t.jsonl",
        _tampered(_foreign_only),
        ["nothing to grade", "none of its 4 span(s)"],
        ["chaoskit.* attributes"],
    ),
    # --- Jaeger UI JSON ----------------------------------------------------------------------------------------
    (
        "jaeger-trace-without-spans",
        "j.json",
        _jaeger(lambda d: d["data"][0].pop("spans")),
        ["nothing to grade", 'no "spans" list'],
        [],
    ),
    ("jaeger-no-traces", "j.json", b'{"data": [], "total": 0}', ["nothing to grade"], []),
    ("jaeger-data-not-list", "j.json", b'{"data": {"traceID": "ab"}}', ["line 1", "data"], ["a list of trace objects"]),
    (
        "jaeger-no-duration",
        "j.json",
        _jaeger(lambda d: _jaeger_tool(d).pop("duration")),
        ["line 1", "duration"],
        ["whole number >= 0"],
    ),
    (
        "jaeger-negative-duration",
        "j.json",
        _jaeger(lambda d: _jaeger_tool(d).update(duration=-40)),
        ["line 1", "ends before it starts", "-40"],
        ["duration"],
    ),
    (
        "jaeger-no-start",
        "j.json",
        _jaeger(lambda d: _jaeger_tool(d).pop("startTime")),
        ["line 1", "startTime"],
        ["microseconds since the epoch"],
    ),
    (
        "jaeger-span-id-bad",
        "j.json",
        _jaeger(lambda d: _jaeger_tool(d).update(spanID="zz-top")),
        ["line 1", "spanID", "'zz-top'"],
        ["up to 16 hex digits"],
    ),
    (
        "jaeger-attempt-tag-text",
        "j.json",
        _jaeger(lambda d: _jaeger_set(_jaeger_tool(d), "chaoskit.attempt", {"type": "int64", "value": "two"})),
        ["line 1", "chaoskit.attempt", "'two'"],
        ["whole number for type int64"],
    ),
    (
        "jaeger-bool-tag-garbage",
        "j.json",
        _jaeger(
            lambda d: _jaeger_set(_jaeger_tool(d), "chaoskit.tool.irreversible", {"type": "bool", "value": "maybe"})
        ),
        ["line 1", "chaoskit.tool.irreversible", "'maybe'"],
        ["true or false"],
    ),
]


def _pretty_cases() -> list[tuple[str, str, bytes | None, list[str], list[str]]]:
    """Pretty-printed files: the message names the span's own line, found here by its id."""
    otlp_no_attempt = _pretty_otlp(lambda d: _set(_refund_retry(d), "chaoskit.attempt", None))
    otlp_end_before = _pretty_otlp(lambda d: _refund_retry(d).update(endTimeUnixNano="1"))
    jaeger_no_attempt = _jaeger(lambda d: _jaeger_set(_jaeger_tool(d), "chaoskit.attempt", None), indent=2)
    cut = json.dumps(DOC, indent=2).encode()[:1500]
    last_line = f"line {len(cut.decode().rstrip().splitlines())}"
    return [
        (
            "pretty-otlp-no-attempt",
            "p.json",
            otlp_no_attempt,
            [_line_of(otlp_no_attempt, RETRY_ID), "chaoskit.attempt"],
            [ATTEMPT_RANGE],
        ),
        (
            "pretty-otlp-end-before-start",
            "p.json",
            otlp_end_before,
            [_line_of(otlp_end_before, RETRY_ID), "ends before it starts"],
            ["endTimeUnixNano"],
        ),
        (
            "pretty-jaeger-no-attempt",
            "p.json",
            jaeger_no_attempt,
            [_line_of(jaeger_no_attempt, RETRY_ID), "chaoskit.attempt"],
            [ATTEMPT_RANGE],
        ),
        ("pretty-otlp-cut", "p.json", cut, [last_line, "cut short"], ["complete JSON"]),
        # a directory is read as the files in it (a Collector's rotated files): an empty one holds nothing to grade
        ("directory", "a-folder", None, ["the directory holds no trace file"], ["empty or hidden files"]),
    ]


ALL = CASES + _pretty_cases()


def test_the_corpus_is_big_enough_and_the_intact_trace_grades_as_a_failure(tmp_path: Path) -> None:
    assert len(ALL) >= 45
    # the control: untouched, the same trace is graded (1), so every 2 below is "could not grade", not "failed"
    path = tmp_path / "intact.jsonl"
    path.write_bytes(_jsonl({"resourceSpans": []}, DOC))
    result = run_cli(["check", str(path)])
    assert result.code == 1, result.err
    assert "issue_refund was called 2 times" in result.out


@pytest.mark.parametrize(
    ("name", "content", "names", "allowed"), [pytest.param(f, c, n, a, id=i) for i, f, c, n, a in ALL]
)
def test_chaoskit_check_cannot_grade(
    tmp_path: Path, name: str, content: bytes | None, names: list[str], allowed: list[str]
) -> None:
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    result = run_cli(["check", str(path)])
    assert result.code == 2, (result.code, result.out, result.err)
    assert "PASS" not in result.out and "episode" not in result.out
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert result.err.startswith("chaoskit: cannot grade: ")
    assert_clear(result.err, names=[str(path), *names], allowed=allowed)


def test_a_missing_file_and_an_empty_argument(tmp_path: Path) -> None:
    gone = run_cli(["check", str(tmp_path / "nope.jsonl")])
    assert gone.code == 2
    assert_clear(gone.err, names=["nope.jsonl", "file not found"], allowed=["OTLP-JSON"])
    blank = run_cli(["check", " "])
    assert blank.code == 2
    assert_clear(blank.err, names=["empty argument"], allowed=["path of a trace file"])


# --- the Python readers raise TraceReadError ----------------------------------------------------------------


def test_a_stripped_attempt_number_no_longer_hides_a_duplicate_refund() -> None:
    # before: the retry without chaoskit.attempt was dropped as a "foreign" span and no_duplicate_writes passed
    doc = copy.deepcopy(DOC)
    assert checks.no_duplicate_writes(Trace.from_otlp_json(doc)).severity == "fail"
    _set(_refund_retry(doc), "chaoskit.attempt", None)
    with pytest.raises(TraceReadError) as info:
        Trace.from_otlp_json(doc)
    assert info.value.source == "<object>" and RETRY_ID in info.value.reason
    assert "must carry chaoskit.attempt" in info.value.reason


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: Trace.from_otlp_json(123),
            "expected a file path, JSON text, a parsed JSON object or a list of them; got int",
        ),
        (lambda: Trace.from_otlp_json(None), "got NoneType"),
        (lambda: Trace.from_otlp_json(b"\xff\xfe{}"), "<bytes>, line 1: not UTF-8 text"),
        (lambda: Trace.from_otlp_json(""), "got an empty string"),
        (lambda: Trace.from_otlp_json('{"resourceSpans": [}'), "<text>, line 1: expected a complete JSON document"),
        (lambda: Trace.from_jaeger_json({"data": 5}), "data: expected a list of trace objects, got a number"),
        (
            lambda: Trace.from_jaeger_json([{"traceID": "ab", "spans": [7]}]),
            "line 1: the trace.spans[0]: expected a span object",
        ),
        (lambda: Trace.load(None), "expected the path of a trace file, got None"),  # type: ignore[arg-type]
        (lambda: Trace.load("x.json", format="zipkin"), "unknown trace format 'zipkin'; expected one of otlp, jaeger"),
        (
            lambda: Trace.from_spans([{"name": "execute_tool x"}]),
            "spans[0]: expected an OpenTelemetry ReadableSpan, got dict",
        ),
        (lambda: Trace.from_spans(5), "expected an iterable of ReadableSpan objects, got int"),
        (lambda: Trace.from_otlp_json("traces\x00.jsonl"), "not a usable file path (embedded null byte)"),
    ],
)
def test_python_api_misuse_raises_trace_read_error(call: Callable[[], object], message: str) -> None:
    with pytest.raises(TraceReadError) as info:
        call()
    assert message in str(info.value)
    assert isinstance(info.value, chaoskit.ChaoskitError) and isinstance(info.value, ValueError)


def test_python_readers_name_the_span_and_line_of_a_tampered_jaeger_trace() -> None:
    doc = otlp_to_jaeger(copy.deepcopy(DOC))
    _jaeger_tool(doc).update(duration=-5)
    with pytest.raises(
        TraceReadError,
        match=r"<object>: span [0-9a-f]{16} \(execute_tool issue_refund\): the span "
        r"ends before it starts \(duration -5 µs\)",
    ):
        Trace.from_jaeger_json(doc)
    text = json.dumps(doc, indent=2)
    with pytest.raises(TraceReadError) as info:
        Trace.from_jaeger_json(text)
    assert info.value.line == int(_line_of(text.encode(), _jaeger_tool(doc)["spanID"]).split()[1])


def test_nothing_to_grade_is_an_empty_trace_in_python() -> None:
    # the Python API returns an empty Trace (callers see len 0); chaoskit check turns it into exit 2
    doc = copy.deepcopy(DOC)
    _foreign_only(doc)
    assert len(Trace.from_otlp_json(doc)) == 0
    assert Trace.from_jaeger_json({"data": [{"traceID": "ab"}]}).episodes == []
