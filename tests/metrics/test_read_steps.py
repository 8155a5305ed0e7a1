"""``read_steps`` reads OTLP-JSON through the traces' one decoder and file reader: the same files are accepted,
and bad input gets the trace reader's errors naming the file, the line and the span or field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit import TraceReadError
from chaoskit.metrics import read_steps

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _chat(span_id: str, start: int, text: str, **extra: Any) -> dict[str, Any]:
    output = [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": "chat gpt-test",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_000_000),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-test"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(output)}},
        ],
        **extra,
    }


def _doc(*spans: dict[str, Any], key: str = "scopeSpans") -> dict[str, Any]:
    foreign = {"traceId": TRACE, "spanId": "00f067aa0ba902b9", "name": "GET /", "attributes": [{"key": 3}]}
    return {"resourceSpans": [{key: [{"spans": [foreign, *spans]}]}]}


FIRST = _chat("b7ad6b7169203331", 1_700_000_000_000_000_000, "Looking up the order.")
SECOND = _chat("c7ad6b7169203332", 1_700_000_001_000_000_000, "Refunded order 4832.")


def test_a_file_and_its_parsed_documents_give_the_same_steps(tmp_path: Path) -> None:
    docs = [_doc(SECOND), _doc(FIRST)]
    lines = tmp_path / "t.jsonl"
    lines.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    pretty = tmp_path / "t.json"
    pretty.write_text(json.dumps(_doc(FIRST, SECOND), indent=2), encoding="utf-8")
    steps = read_steps(docs)
    assert [s.text for s in steps] == ["Looking up the order.", "Refunded order 4832."]
    assert steps[0].input_tokens == 12 and steps[0].model == "gpt-test" and steps[0].span_id == "b7ad6b7169203331"
    assert read_steps(lines) == steps == read_steps(pretty) == read_steps(str(lines))
    # an api_v3 answer, and the older OTLP name of scopeSpans, are read as the trace reader reads them
    assert read_steps({"result": _doc(FIRST, SECOND)}) == steps
    assert read_steps(_doc(FIRST, SECOND, key="instrumentationLibrarySpans")) == steps


def test_a_line_cut_short_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_doc(FIRST)) + "\n" + json.dumps(_doc(SECOND))[:-40] + "\n", encoding="utf-8")
    with pytest.raises(TraceReadError) as info:
        read_steps(path)
    assert info.value.source == str(path) and info.value.line == 2
    assert "cut short or malformed" in str(info.value)


def test_a_missing_file_is_a_trace_read_error(tmp_path: Path) -> None:
    with pytest.raises(TraceReadError, match="file not found") as info:
        read_steps(tmp_path / "missing.jsonl")
    assert info.value.source == str(tmp_path / "missing.jsonl")


def test_a_step_span_with_a_bad_value_or_id_is_refused_by_name(tmp_path: Path) -> None:
    bad_value = copy.deepcopy(SECOND)
    bad_value["attributes"][2]["value"] = {"intValue": "twelve"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_doc(FIRST)) + "\n" + json.dumps(_doc(bad_value)) + "\n", encoding="utf-8")
    with pytest.raises(
        TraceReadError, match=r"spans\[1\] \(chat gpt-test\): attribute gen_ai.usage.input_tokens"
    ) as info:
        read_steps(path)
    assert info.value.line == 2
    bad_id = {**SECOND, "spanId": "0000000000000000"}
    with pytest.raises(TraceReadError, match="model step span 'chat gpt-test' has no valid traceId, spanId"):
        read_steps([_doc(bad_id)])


def test_a_document_of_the_wrong_shape_is_named_by_its_path() -> None:
    with pytest.raises(TraceReadError, match=r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans: expected a list"):
        read_steps({"resourceSpans": [{"scopeSpans": [{"spans": {"name": "chat"}}]}]})
