"""The typed (msgspec) reading of OTLP-JSON Lines gives exactly what the general reader gives: the same episodes, or
the same error naming the same file, line and field, for real agent traces and for tampered or odd lines.

Each case writes a JSON Lines file whose line 2 holds the spans of a real episode (a refund agent that retries an
HTTP 500 and a rate limit), reads it with the typed path on and off, and compares the outcomes."""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers import issue_refund, search
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chaoskit
import chaoskit.traces._readers as readers
from chaoskit import Plan, Trace, TraceReadError, telemetry


def _real_doc(*, error_in_event: bool = True) -> dict[str, Any]:
    plan = Plan(
        seed=9,
        faults=[
            {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
            {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 1},
        ],
    )
    with telemetry.capture() as cap:
        with chaoskit.episode("refund", plan=plan) as ep:
            for _ in range(2):
                try:
                    search("order 4832")
                    break
                except chaoskit.ToolHTTPError:
                    pass
            for _ in range(2):
                try:
                    issue_refund("4832", key="refund-4832")
                    break
                except chaoskit.ToolHTTPError:
                    pass
            ep.finish("Refunded order 4832.")
        mine = [s for s in cap.spans if (s.attributes or {}).get("chaoskit.episode.id") == ep.id]
        return telemetry.to_otlp_json(mine)


OTLP = _real_doc()
TYPED = readers._typed_line


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _tool_span(doc: dict[str, Any], tool: str = "issue_refund", attempt: int = 1) -> dict[str, Any]:
    for sp in _spans(doc):
        attrs = {kv["key"]: kv["value"] for kv in sp.get("attributes", [])}
        if sp["name"] == f"execute_tool {tool}" and attrs.get("chaoskit.attempt") == {"intValue": str(attempt)}:
            return sp
    raise AssertionError(f"no span of {tool} attempt {attempt}")


def _attr(sp: dict[str, Any], key: str) -> dict[str, Any]:
    for kv in sp["attributes"]:
        if kv["key"] == key:
            return kv
    kv = {"key": key, "value": {}}
    sp["attributes"].append(kv)
    return kv


def _outcome(read: Callable[[Path], Any], path: Path) -> str:
    try:
        return "ok " + repr(read(path))
    except TraceReadError as exc:
        return f"error {type(exc).__name__}: {exc}"


def _both(line: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, int]:
    """The outcome of reading a file whose second line is ``line`` with the typed path on and off (whole and
    streamed), and how many lines the typed path read."""
    taken = 0
    typed = TYPED
    assert typed is not None, "msgspec is a dependency of chaoskit"

    def counting(raw: bytes, builder: Any) -> bool:
        nonlocal taken
        mine = raw.rstrip(b"\n") == line  # not the empty first line
        try:
            ok = typed(raw, builder)
        except TraceReadError:
            taken += mine  # read, and found wrong by the builder
            raise
        taken += ok and mine
        return ok

    def read(path: Path) -> Any:
        return (Trace.load(path).episodes, [t.episodes for t in Trace.iter_episodes(path)])

    with tempfile.TemporaryDirectory() as tmp, monkeypatch.context() as patch:
        path, first = Path(tmp) / "t.jsonl", Path(tmp) / "first.jsonl"
        path.write_bytes(b'{"resourceSpans": []}\n' + line + b"\n")
        first.write_bytes(line + b"\n")  # the first line is read apart, to tell JSON Lines from one document
        patch.setattr(readers, "_typed_line", counting)
        on = _outcome(read, path)
        on_first = _outcome(read, first)
        patch.setattr(readers, "_typed_line", None)
        off = _outcome(read, path)
        off_first = _outcome(read, first)
    assert on_first == off_first
    return on, off, taken


def _same(doc: Any, monkeypatch: pytest.MonkeyPatch, *, taken: bool | None = None) -> str:
    line = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    on, off, n = _both(line, monkeypatch)
    assert on == off
    if taken is not None:
        assert (n > 0) is taken
    return on


def test_a_real_trace_is_read_by_the_typed_path_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _same(OTLP, monkeypatch, taken=True)
    assert out.startswith("ok ") and "issue_refund" in out and "after_write" in out


def test_a_written_order_other_than_the_exporters_is_read_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = copy.deepcopy(OTLP)
    for sp in _spans(doc):
        sp["attributes"].reverse()
        for k in list(sp):
            sp[k] = sp.pop(k)  # same keys, values moved to the end in a new order
    _same(doc, monkeypatch, taken=True)


def _edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(OTLP)
    change(doc)
    return doc


def _set_value(value: Any, key: str = "chaoskit.attempt") -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        _attr(_tool_span(doc), key)["value"] = value

    return change


# each: a tampered or unusual line, whether the typed path reads it (None: either), and what the outcome starts with
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], bool | None, str]] = {
    "attempt as a JSON number": (_set_value({"intValue": 1}), True, "ok"),
    "attempt as a negative digit string": (_set_value({"intValue": "-1"}), True, "error"),
    "attempt zero": (_set_value({"intValue": "0"}), True, "error"),
    "attempt not a number": (_set_value({"intValue": "one"}), False, "error"),
    "attempt as a whole float": (_set_value({"intValue": 1.0}), False, "ok"),
    "attempt with two kinds, int first": (_set_value({"intValue": "1", "boolValue": True}), False, "ok"),
    "attempt with two kinds, bool first": (_set_value({"boolValue": True, "intValue": "1"}), False, "error"),
    "string beside another kind": (_set_value({"intValue": "2", "stringValue": "1"}), True, "ok"),
    "a value of an unknown kind": (_set_value({"fooValue": 1}), False, "error"),
    "a null value": (_set_value(None), False, "error"),
    "a value left out": (lambda d: _attr(_tool_span(d), "chaoskit.attempt").pop("value"), False, "error"),
    "a null string": (_set_value({"stringValue": None}, "chaoskit.outcome"), False, "error"),
    "an outcome outside ok/error/cancelled": (_set_value({"stringValue": "fine"}, "chaoskit.outcome"), True, "error"),
    "executed as a string": (_set_value({"stringValue": "true"}, "chaoskit.tool.executed"), True, "ok"),
    "executed as a bool string kind": (_set_value({"boolValue": "true"}, "chaoskit.tool.executed"), False, "error"),
    "retry_after as a whole number": (_set_value({"doubleValue": 2}, "chaoskit.retry_after"), True, "ok"),
    "retry_after as text": (_set_value({"doubleValue": "NaN"}, "chaoskit.retry_after"), False, "error"),
    "an array attribute": (_set_value({"arrayValue": {"values": [{"stringValue": "a"}, None]}}, "x.list"), True, "ok"),
    "an empty array": (_set_value({"arrayValue": {}}, "x.list"), True, "ok"),
    "a null array": (_set_value({"arrayValue": None}, "x.list"), True, "ok"),
    "an array written as a list": (_set_value({"arrayValue": [{"stringValue": "a"}]}, "x.list"), False, "ok"),
    "an array item with two kinds": (
        _set_value({"arrayValue": {"values": [{"stringValue": "a", "intValue": "1"}]}}, "x.list"),
        False,
        "ok",
    ),
    "a kvlist attribute": (
        _set_value({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "3"}}, {"key": "j"}]}}, "x.map"),
        True,
        "ok",
    ),
    "a kvlist entry without a key": (_set_value({"kvlistValue": {"values": [{"value": {}}]}}, "x.map"), False, "error"),
    "bytes": (_set_value({"bytesValue": "AAE="}, "x.bytes"), True, "ok"),
    "an empty value object": (_set_value({}, "x.none"), True, "ok"),
    "a huge integer": (_set_value({"intValue": 10**30}, "chaoskit.fault.index"), False, "ok"),
    "the largest 64-bit integer": (_set_value({"intValue": 2**64 - 1}, "chaoskit.fault.index"), True, "ok"),
    "a huge negative integer": (_set_value({"intValue": -(2**70)}, "x.n"), False, "ok"),
    "a huge double": (_set_value({"doubleValue": 1e308}, "chaoskit.retry_after"), True, "ok"),
    "an attribute key that is a number": (lambda d: _tool_span(d)["attributes"].append({"key": 3}), False, "error"),
    "attributes as an object": (lambda d: _tool_span(d).update(attributes={}), False, "error"),
    "attributes null": (lambda d: _tool_span(d).update(attributes=None), True, "error"),
    "span id upper case": (lambda d: _tool_span(d).update(spanId=_tool_span(d)["spanId"].upper()), True, "ok"),
    "span id all zero": (lambda d: _tool_span(d).update(spanId="0" * 16), False, "error"),
    "span id a number": (lambda d: _tool_span(d).update(spanId=5), False, "error"),
    "span id in base64": (lambda d: _tool_span(d).update(spanId="AAECAwQFBgc="), True, "ok"),
    "trace id left out": (lambda d: _tool_span(d).pop("traceId"), False, "error"),
    "start time as a number": (
        lambda d: _tool_span(d).update(startTimeUnixNano=int(_tool_span(d)["startTimeUnixNano"])),
        True,
        "ok",
    ),
    "end before start": (lambda d: _tool_span(d).update(endTimeUnixNano="1"), False, "error"),
    "start time past 2**64": (lambda d: _tool_span(d).update(startTimeUnixNano=str(2**64)), False, "error"),
    "a span name that is a number": (lambda d: _spans(d).append({"name": 7}), False, "ok"),
    "a span that is a string": (lambda d: _spans(d).append("span"), False, "error"),
    "a foreign span with odd fields": (lambda d: _spans(d).append({"name": "chat", "traceId": 1}), True, "ok"),
    "an execute_tool span of another framework": (
        lambda d: _spans(d).append({"name": "execute_tool x", "spanId": 4, "attributes": []}),
        True,
        "ok",
    ),
    "gen_ai.operation.name disagreeing": (
        _set_value({"stringValue": "invoke_agent"}, "gen_ai.operation.name"),
        False,
        "error",
    ),
    "status message not a string": (lambda d: _tool_span(d).update(status={"message": 500}), False, "ok"),
    "status message a huge number": (lambda d: _tool_span(d).update(status={"message": 10**30}), False, "ok"),
    "status not an object": (lambda d: _tool_span(d).update(status="bad"), False, "ok"),
    "events not a list": (lambda d: _tool_span(d).update(events={}), False, "ok"),
    "an exception message with two kinds": (
        lambda d: [
            kv["value"].update(intValue="5")
            for ev in _tool_span(d)["events"]
            for kv in ev["attributes"]
            if kv["key"] == "exception.message"
        ],
        False,
        "ok",
    ),
    "an exception event whose message is a number": (
        lambda d: [
            kv.update(value={"intValue": "500"})
            for ev in _tool_span(d)["events"]
            for kv in ev["attributes"]
            if kv["key"] == "exception.message"
        ],
        True,
        "ok",
    ),
    "a duplicated span with other content": (
        lambda d: _spans(d).append({**copy.deepcopy(_tool_span(d)), "endTimeUnixNano": "9" * 19}),
        True,
        "error",
    ),
    "a copy of a span": (lambda d: _spans(d).append(copy.deepcopy(_tool_span(d))), True, "ok"),
    "wrapped in a Jaeger api_v3 result": (
        lambda d: d.update(result={"resourceSpans": d.pop("resourceSpans")}),
        False,
        "ok",
    ),
    "an older instrumentationLibrarySpans": (
        lambda d: d["resourceSpans"][0].update(instrumentationLibrarySpans=d["resourceSpans"][0].pop("scopeSpans")),
        True,
        "ok",
    ),
    "no resourceSpans": (lambda d: d.update(resourceSpans=None), True, "ok"),
    "a backend error beside the spans": (lambda d: d.update(error="boom"), True, "ok"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampered_and_unusual_lines_read_alike(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    change, taken, expect = CASES[case]
    out = _same(_edit(change), monkeypatch, taken=taken)
    assert out.startswith(expect), out
    if expect == "error":
        assert ".jsonl, line 2: " in out, out


RAW_CASES: dict[str, tuple[bytes, str]] = {
    # the typed decoder skips fields it does not use without looking inside them: these must still fail
    "not UTF-8 in an unused field": (b'{"resourceSpans": [], "x": "\xff"}', "not UTF-8 text"),
    "not UTF-8 in a key": (b'{"resourceSpans": [], "\xff": 1}', "not UTF-8 text"),
    "a control character in a string": (b'{"resourceSpans": [], "x": "a\x01b"}', "cut short or malformed"),
    "NaN in an unused field": (b'{"resourceSpans": [], "x": NaN}', "ok"),
    "a lone surrogate": (b'{"resourceSpans": [], "x": "\\ud800"}', "ok"),
    "deep nesting": (b'{"resourceSpans": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
    "a number too big for a double": (b'{"resourceSpans": [], "x": 1e400}', "ok"),
    "a whole number of 5,000 digits": (b'{"resourceSpans": [], "x": ' + b"7" * 5000 + b"}", "digits"),
    "a whole number of 4,000 digits": (b'{"resourceSpans": [], "x": -' + b"7" * 4000 + b"}", "ok"),
    "a top-level list": (b'[{"resourceSpans": []}]', "ok"),
    "trailing text": (b'{"resourceSpans": []} x', "cut short or malformed"),
    "duplicate keys": (b'{"resourceSpans": 5, "resourceSpans": []}', "ok"),
}


@pytest.mark.parametrize("case", sorted(RAW_CASES))
def test_odd_json_reads_alike(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw, expect = RAW_CASES[case]
    body = json.dumps(OTLP).encode()
    # the real spans on the same line, so that a wrong acceptance would grade them
    line = raw.replace(b'"resourceSpans": []', body[1:-1], 1)
    out = _same(line, monkeypatch)
    assert out.startswith("ok") if expect == "ok" else expect in out, out


def _mutations(data: st.DataObject, doc: Any) -> Iterator[Any]:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        parent: Any = None
        key: Any = None
        node = doc
        while isinstance(node, dict | list) and node and data.draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            k = data.draw(st.sampled_from(keys))
            parent, key, node = node, k, node[k]
        if parent is None:
            continue
        action = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if action == "replace":
            parent[key] = data.draw(
                st.one_of(
                    st.none(),
                    st.booleans(),
                    st.integers(-(2**66), 2**66),
                    st.floats(),
                    st.text(max_size=5),
                    st.sampled_from(["1", "-2", "0", "ok", "error", "true", {}, [], {"intValue": "3"}]),
                )
            )
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(node))
        else:
            parent[key] = [node, node]
    yield doc


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_lines_read_alike(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    for doc in _mutations(data, OTLP):
        _same(json.dumps(doc).encode(), monkeypatch)
