"""Property-based fuzzing of the trace readers (hypothesis): whatever they are given, they return a Trace or raise
TraceReadError with a specific message; never KeyError, TypeError, RecursionError or the readers' last-resort
guard ("internal reader error"). Inputs: arbitrary JSON-ish values, valid OTLP-JSON / JSON Lines / Jaeger documents of a real
episode with one part mutated, cut short, or replaced by random bytes."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from _helpers import issue_refund, search
from _otlp_jaeger import otlp_to_jaeger
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, telemetry

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = [
    "resourceSpans",
    "scopeSpans",
    "spans",
    "result",
    "data",
    "traceID",
    "spanID",
    "traceId",
    "spanId",
    "name",
    "operationName",
    "attributes",
    "tags",
    "key",
    "value",
    "type",
    "stringValue",
    "intValue",
    "boolValue",
    "arrayValue",
    "values",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "startTime",
    "duration",
    "error",
    "chaoskit.attempt",
    "gen_ai.operation.name",
    "execute_tool x",
    "invoke_agent y",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(KEYS),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner, max_size=4),
    ),
    max_leaves=25,
)


def _real_doc() -> dict[str, Any]:
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
JAEGER = otlp_to_jaeger(OTLP)


def _ok_or_clear_error(read: Any, source: Any) -> None:
    try:
        trace = read(source)
    except TraceReadError as exc:
        message = str(exc)
        assert message and "internal reader error" not in message, message
        assert "\n" not in message.strip(), message
        return
    assert isinstance(trace, Trace)


def _mutate(data: st.DataObject, doc: Any) -> Any:
    """``doc`` with one node, chosen by walking down from the root, replaced, removed or retyped."""
    doc = copy.deepcopy(doc)
    parent: Any = None
    key: Any = None
    node = doc
    while isinstance(node, dict | list) and node and data.draw(st.booleans()):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        k = data.draw(st.sampled_from(keys))
        parent, key, node = node, k, node[k]
    if parent is None:
        return data.draw(json_values)
    action = data.draw(st.sampled_from(["replace", "delete", "stringify", "duplicate"]))
    if action == "replace":
        parent[key] = data.draw(json_values)
    elif action == "delete":
        del parent[key]
    elif action == "stringify":
        parent[key] = json.dumps(node)
    elif isinstance(parent, list):
        parent.append(copy.deepcopy(node))
    else:
        parent[key] = [node, node]
    return doc


@FUZZ
@given(json_values)
def test_arbitrary_json_values(value: Any) -> None:
    _ok_or_clear_error(Trace.from_otlp_json, value if isinstance(value, dict | list) else [value])
    _ok_or_clear_error(Trace.from_jaeger_json, value if isinstance(value, dict | list) else [value])
    _ok_or_clear_error(lambda t: Trace.from_otlp_json(t), json.dumps(value) if isinstance(value, dict | list) else "[]")


@FUZZ
@given(st.data())
def test_mutated_otlp_documents(data: st.DataObject) -> None:
    doc = _mutate(data, OTLP)
    _ok_or_clear_error(Trace.from_otlp_json, doc)
    text = json.dumps(doc)
    _ok_or_clear_error(Trace.from_otlp_json, "[" + text + "]" if not text.startswith(("{", "[")) else text)


@FUZZ
@given(st.data())
def test_mutated_jaeger_documents(data: st.DataObject) -> None:
    doc = _mutate(data, JAEGER)
    _ok_or_clear_error(Trace.from_jaeger_json, doc if isinstance(doc, dict | list) else [doc])
    _ok_or_clear_error(lambda d: Trace.from_otlp_json(d), {"result": doc})


@FUZZ
@given(st.data(), st.sampled_from(["jsonl", "pretty", "jaeger"]))
def test_mutated_and_cut_files(data: st.DataObject, kind: str) -> None:
    if kind == "jaeger":
        text = json.dumps(_mutate(data, JAEGER), indent=1)
    else:
        doc = _mutate(data, OTLP)
        text = (
            json.dumps({"resourceSpans": []}) + "\n" + json.dumps(doc) if kind == "jsonl" else json.dumps(doc, indent=2)
        )
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    if data.draw(st.booleans()):
        text = text[:cut]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t.{kind}"
        path.write_text(text, encoding="utf-8")
        _ok_or_clear_error(Trace.load, path)
        _ok_or_clear_error(lambda p: Trace.load(p, format="jaeger"), path)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        path.write_bytes(raw)
        _ok_or_clear_error(Trace.load, path)
    _ok_or_clear_error(Trace.from_otlp_json, raw)


def test_the_fuzzed_documents_are_gradable_when_left_intact() -> None:
    # the fuzzing starts from documents the readers accept: a mutation, not the seed, makes an input bad
    assert [a.tool for a in Trace.from_otlp_json(OTLP).attempts] == ["search", "search", "issue_refund", "issue_refund"]
    assert Trace.from_jaeger_json(JAEGER) == Trace.from_otlp_json(OTLP)
