"""``chaoskit check --from-jaeger``: Jaeger v2's api_v3 (a stub answering as Jaeger's own gateway does, on
127.0.0.1), its "No traces found" answer, ``--limit``, large answers read one trace at a time, and every way the
query can fail: a bad URL, a refused connection, a timeout, an answer that is not JSON or has been tampered with.
Whatever goes wrong, the exit status is 2 ("could not grade"), never a pass."""

from __future__ import annotations

import copy
import json
import socket
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _helpers import issue_refund
from _jaeger_stub import JaegerStub, jaeger_stub

import chaoskit
from chaoskit import Plan, Trace, telemetry
from chaoskit.traces import _jaeger
from chaoskit.traces._readers import read_with_builder

#: answers recorded from a real Jaeger v2 (tests/data/jaeger/README.md says how)
JAEGER = Path(__file__).resolve().parents[1] / "data" / "jaeger"

AFTER_WRITE = Plan(
    seed=1, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}]
)


def _episode(name: str, key: Callable[[], str | None], service: str = "shop-agent") -> dict[str, Any]:
    """One episode's spans as OTLP-JSON under ``service``: a refund retried after a 500 that came after the write
    (with ``key`` None the retry writes twice, and no_duplicate_writes fails)."""
    with telemetry.capture() as cap:
        with chaoskit.episode(name, plan=AFTER_WRITE) as ep:
            for _ in range(2):
                try:
                    issue_refund("4832", key=key())
                    break
                except chaoskit.ToolHTTPError:
                    pass
            ep.finish("Refund issued.")
        doc = telemetry.to_otlp_json(cap.spans)
    for rs in doc["resourceSpans"]:
        for kv in rs["resource"]["attributes"]:
            if kv["key"] == "service.name":
                kv["value"] = {"stringValue": service}
    return doc


def _spans(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            yield from ss["spans"]


def _shift(doc: dict[str, Any], by: timedelta) -> dict[str, Any]:
    """``doc`` with every span moved ``by`` in time (negative: into the past)."""
    out = copy.deepcopy(doc)
    ns = int(by.total_seconds()) * 10**9
    for sp in _spans(out):
        sp["startTimeUnixNano"] = str(int(sp["startTimeUnixNano"]) + ns)
        sp["endTimeUnixNano"] = str(int(sp["endTimeUnixNano"]) + ns)
    return out


@pytest.fixture
def jaeger() -> Iterator[JaegerStub]:
    yield from jaeger_stub()


def _check(stub: JaegerStub, *extra: str, service: str = "shop-agent") -> Any:
    return run_cli(["check", "--from-jaeger", stub.url, "--service", service, *extra])


# --- a Jaeger with traces ---------------------------------------------------------------------------------


def test_grades_what_jaeger_holds_for_the_service(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("careless", lambda: None), _episode("careful", lambda: "k-1")]
    jaeger.traces.append(_episode("elsewhere", lambda: None, service="other-agent"))
    result = _check(jaeger, "--json", "--since", "2h")
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert sorted(e["name"] for e in report["episodes"]) == ["careful", "careless"]
    failed = {e["name"]: [c["name"] for c in e["checks"] if not c["passed"]] for e in report["episodes"]}
    assert failed == {"careful": [], "careless": ["no_duplicate_writes"]}
    assert all(e["attempts"] == 2 and e["source"] == jaeger.url for e in report["episodes"])

    (query,) = jaeger.queries
    assert query["path"] == ["/api/v3/traces"] and query["query.service_name"] == ["shop-agent"]
    assert query["query.num_traces"] == ["101"]  # the default limit, 100 per request, and one to tell a full window
    low = datetime.fromisoformat(query["query.start_time_min"][0].replace("Z", "+00:00"))
    high = datetime.fromisoformat(query["query.start_time_max"][0].replace("Z", "+00:00"))
    assert timedelta(hours=2) < high - low < timedelta(hours=2, minutes=5)
    assert low < datetime.now(UTC) - timedelta(hours=1, minutes=59)


def test_the_grades_equal_those_of_the_same_spans_read_from_a_file(jaeger: JaegerStub, tmp_path: Path) -> None:
    jaeger.traces = [_episode("careless", lambda: None)]
    path = tmp_path / "same.json"
    path.write_text(json.dumps(jaeger.traces[0]))
    from_jaeger, from_file = _check(jaeger, "--json"), run_cli(["check", str(path), "--json"])
    assert from_jaeger.code == from_file.code == 1
    a, b = json.loads(from_jaeger.out)["episodes"], json.loads(from_file.out)["episodes"]
    assert [(e["checks"], e["score"], e["attempts"]) for e in a] == [
        (e["checks"], e["score"], e["attempts"]) for e in b
    ]


def test_limit_is_traces_per_request_and_a_full_window_is_read_again_in_halves(jaeger: JaegerStub) -> None:
    jaeger.traces = [_shift(_episode("older", lambda: None), -timedelta(minutes=10)), _episode("newer", lambda: "k")]
    result = _check(jaeger, "--limit", "1", "--json")
    assert result.code == 1, result.err
    # both traces graded: the whole hour held two, more than the limit, so it was read again in narrower windows
    assert sorted(e["name"] for e in json.loads(result.out)["episodes"]) == ["newer", "older"]
    # one more than the limit asked for: an answer with two traces says the window is full
    assert {q["query.num_traces"][0] for q in jaeger.queries} == {"2"}
    assert len(jaeger.queries) > 2


def test_since_bounds_the_query(jaeger: JaegerStub) -> None:
    jaeger.traces = [_shift(_episode("yesterday", lambda: None), -timedelta(hours=20))]
    result = _check(jaeger, "--since", "1h")
    assert result.code == 2
    assert_clear(result.err, names=["nothing to grade", "Jaeger has no traces for service 'shop-agent'", "1h"])
    assert _check(jaeger, "--since", "1d").code == 1


def test_no_traces_found_is_could_not_grade(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("elsewhere", lambda: None, service="other-agent")]
    result = _check(jaeger)
    assert result.code == 2 and result.out == ""
    assert result.err.strip() == (
        f"chaoskit: cannot grade: {jaeger.url}: nothing to grade: Jaeger has no traces for service "
        "'shop-agent' in the last 1h"
    )


def test_no_traces_found_with_status_200_as_older_gateways_answer(jaeger: JaegerStub) -> None:
    jaeger.answer = (
        200,
        {"Content-Type": "application/json"},
        b'{"error":{"httpCode":404,"message":"No traces found"}}',
    )
    result = _check(jaeger)
    assert result.code == 2
    assert_clear(result.err, names=["nothing to grade", "Jaeger has no traces for service 'shop-agent'"])


@pytest.mark.parametrize("name", ["v3-find-traces.json", "v3-get-trace.json"])
def test_jaegers_own_answer_samples_hold_nothing_to_grade(jaeger: JaegerStub, name: str) -> None:
    jaeger.answer = (200, {"Content-Type": "application/json"}, (JAEGER / name).read_bytes())
    result = _check(jaeger)
    assert result.code == 2
    assert_clear(result.err, names=["nothing to grade", "none of its 2 span(s) is a chaoskit span"])


def test_chaoskit_traces_among_foreign_ones_in_a_real_answer(jaeger: JaegerStub) -> None:
    sample = json.loads((JAEGER / "v3-find-traces.json").read_text())["result"]
    ours = _episode("careless", lambda: None)
    jaeger.answer = (
        200,
        {"Content-Type": "application/json"},
        json.dumps({"result": {"resourceSpans": sample["resourceSpans"] + ours["resourceSpans"]}}).encode(),
    )
    result = _check(jaeger, "--json")
    assert result.code == 1, result.err
    assert [e["name"] for e in json.loads(result.out)["episodes"]] == ["careless"]


# --- large answers ------------------------------------------------------------------------------------------


def _foreign(i: int, spans: int) -> dict[str, Any]:
    return {
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop-agent"}}]},
        "scopeSpans": [
            {
                "scope": {"name": "http"},
                "spans": [
                    {
                        "traceId": f"{i + 1:032x}",
                        "spanId": f"{k + 1:016x}",
                        "name": "GET /orders",
                        "kind": 2,
                        "startTimeUnixNano": "1700000000000000000",
                        "endTimeUnixNano": "1700000000100000000",
                        "attributes": [{"key": "http.route", "value": {"stringValue": "/orders/{id}" * 4}}],
                    }
                    for k in range(spans)
                ],
            }
        ],
    }


def _big_answer() -> str:
    ours = _episode("careless", lambda: None)["resourceSpans"]
    return json.dumps({"result": {"resourceSpans": [_foreign(i, 40) for i in range(100)] + ours}})


def test_a_large_answer_is_read_one_trace_at_a_time() -> None:
    text = _big_answer()
    tracemalloc.start()
    try:
        episodes, builder = _jaeger.read_answer(text, "jaeger")
        streamed = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        whole, _ = read_with_builder(text, "otlp", name="jaeger")
        parsed_whole = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert episodes == whole and len(episodes) == 1 and builder.spans_seen == 100 * 40 + 3
    # parsing the whole answer holds every span's objects at once; reading one trace at a time does not
    assert streamed * 4 < parsed_whole, (streamed, parsed_whole)


def test_a_large_chunked_answer_from_jaeger(jaeger: JaegerStub) -> None:
    jaeger.answer = (200, {"Content-Type": "application/json"}, _big_answer().encode())
    result = _check(jaeger, "--json", "--limit", "200")  # the stub answers 101 traces to every window
    assert result.code == 1, result.err
    assert [e["name"] for e in json.loads(result.out)["episodes"]] == ["careless"]


@pytest.mark.parametrize("announced", [True, False])
def test_an_answer_above_the_size_limit(jaeger: JaegerStub, monkeypatch: pytest.MonkeyPatch, announced: bool) -> None:
    monkeypatch.setattr(_jaeger, "MAX_ANSWER_BYTES", 10_000)
    body = _big_answer().encode()
    headers = {"Content-Type": "application/json"} | ({"Content-Length": str(len(body))} if announced else {})
    jaeger.answer = (200, headers, body)
    result = _check(jaeger)
    assert result.code == 2
    assert_clear(result.err, names=["above chaoskit's limit of 10,000 bytes", "--limit", "--since"])


# --- could not grade: bad URLs, refused connections, timeouts --------------------------------------------


def test_a_refused_connection(jaeger: JaegerStub) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run_cli(["check", "--from-jaeger", f"http://127.0.0.1:{port}", "--service", "x"])
    assert result.code == 2
    assert_clear(result.err, names=["cannot reach Jaeger", "refused", f"http://127.0.0.1:{port}/api/v3/traces"])


def test_a_url_that_is_not_jaegers_query_service(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("careless", lambda: None)]
    result = run_cli(["check", "--from-jaeger", jaeger.url + "/jaeger", "--service", "shop-agent"])
    assert result.code == 2
    assert_clear(result.err, names=["HTTP 404", "404 page not found", "/api/v3/traces", "base path"])


def test_a_jaeger_that_never_answers() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # the connection is accepted by the kernel; nothing ever answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        result = run_cli(["check", "--from-jaeger", url, "--service", "x", "--timeout", "0.3"])
    assert result.code == 2
    assert_clear(result.err, names=["did not answer within 0.3 s", "--timeout"])


def test_a_jaeger_that_stops_in_the_middle_of_its_answer(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("careless", lambda: None)]
    jaeger.stall_after = 100
    result = _check(jaeger, "--timeout", "0.3")
    assert result.code == 2
    assert_clear(result.err, names=["stopped sending its answer after", "0.3 s", "--timeout"])


def test_a_jaeger_that_trickles_its_answer_is_stopped_at_the_timeout(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("careless", lambda: None)]
    jaeger.trickle = 0.05
    result = _check(jaeger, "--timeout", "0.4")
    assert result.code == 2
    assert_clear(result.err, names=["had sent only", "bytes of its answer after 0.4 s"])


# --- could not grade: answers that are not JSON, or have been tampered with -----------------------------


def _tampered(doc: dict[str, Any], change: Callable[[list[dict[str, Any]]], None]) -> bytes:
    out = copy.deepcopy(doc)
    change([sp for sp in _spans(out) if sp["name"].startswith("execute_tool")])
    return json.dumps({"result": out}).encode()


def _drop_last(tools: list[dict[str, Any]]) -> None:
    tools[-1]["name"] = "gone"
    tools[-1]["attributes"] = []


def _end_before_start(tools: list[dict[str, Any]]) -> None:
    tools[0]["endTimeUnixNano"] = "5"


def _not_an_attempt(tools: list[dict[str, Any]]) -> None:
    tools[0]["attributes"] = [a for a in tools[0]["attributes"] if a["key"] != "chaoskit.attempt"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_drop_last, "spans are missing"),
        (_end_before_start, "the span ends before it starts"),
        (_not_an_attempt, "must carry chaoskit.attempt"),
    ],
)
def test_a_tampered_trace_is_never_graded(jaeger: JaegerStub, change: Callable[..., None], message: str) -> None:
    body = _tampered(_episode("careful", lambda: "k"), change)
    jaeger.answer = (200, {"Content-Type": "application/json"}, body)
    result = _check(jaeger)
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", f"{jaeger.url}/api/v3/traces", message])


def test_a_span_id_reused_with_other_content_across_traces(jaeger: JaegerStub) -> None:
    first = _episode("careful", lambda: "k")
    second = copy.deepcopy(first)
    next(sp for sp in _spans(second) if sp["name"].startswith("execute_tool"))["endTimeUnixNano"] = str(2 * 10**18)
    jaeger.answer = (
        200,
        {},
        json.dumps({"result": {"resourceSpans": first["resourceSpans"] + second["resourceSpans"]}}).encode(),
    )
    result = _check(jaeger)
    assert result.code == 2
    assert_clear(result.err, names=["appears twice with different content", "tampered"])


def test_an_entry_that_is_not_an_object_is_named_by_its_path(jaeger: JaegerStub) -> None:
    ours = _episode("careful", lambda: "k")["resourceSpans"]
    jaeger.answer = (200, {}, json.dumps({"result": {"resourceSpans": [*ours, 7]}}).encode())
    result = _check(jaeger)
    assert result.code == 2
    assert_clear(result.err, names=["result.resourceSpans[1]: expected an object with scopeSpans"])


@pytest.mark.parametrize(
    ("status", "headers", "body", "message"),
    [
        (200, {}, b"<!doctype html><title>Jaeger UI</title>", "Jaeger did not answer with JSON"),
        (200, {}, b'{"result": {"resourceSpans": [{"scopeSpans": [', "expected a complete JSON document"),
        (200, {}, b'{"result": {"resourceSpans": []}}', "nothing to grade: it holds no spans"),
        (200, {}, b'{"result": 3}', "result: expected an object holding resourceSpans"),
        (200, {}, b'{"result": {"resourceSpans": []}}\xff', "not UTF-8"),
        (200, {"Content-Encoding": "gzip"}, b"\x1f\x8b", "Content-Encoding 'gzip'"),
        (200, {"Content-Length": "5000"}, b'{"result": {"resourceSpans": []}}', "cut short"),
        (
            400,
            {"Content-Type": "text/plain; charset=utf-8"},
            b'{"error":{"httpCode":400,"message":"malformed parameter query.num_traces: bad"}}\n',
            "Jaeger answered HTTP 400 (Jaeger rejected the query): malformed parameter query.num_traces: bad",
        ),
        (
            500,
            {"Content-Type": "text/plain; charset=utf-8"},
            b'{"error":{"httpCode":500,"message":"elasticsearch: no such index"}}\n',
            "Jaeger answered HTTP 500: elasticsearch: no such index",
        ),
        (502, {}, b"<html>\n<h1>Bad gateway</h1>\n</html>", "Jaeger answered HTTP 502: <html> <h1>Bad gateway</h1>"),
        # a redirect to itself: followed until the client gives up, then reported as the redirect it is
        (302, {"Location": "/api/v3/traces"}, b"", "Jaeger answered HTTP 302, redirecting to '/api/v3/traces'"),
    ],
)
def test_answers_that_cannot_be_graded(
    jaeger: JaegerStub, status: int, headers: dict[str, str], body: bytes, message: str
) -> None:
    jaeger.answer = (status, headers, body)
    result = _check(jaeger)
    assert result.code == 2 and result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert_clear(result.err, names=["chaoskit: cannot grade:", jaeger.url, message])


def test_the_stub_answers_a_bad_query_as_jaeger_does(jaeger: JaegerStub) -> None:
    # the stub itself must reject what Jaeger rejects, or the tests above would prove little
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{jaeger.url}/api/v3/traces?query.service_name=x", timeout=5)
    assert info.value.code == 400 and b"are required" in info.value.read()


def test_reading_the_answer_directly_gives_the_trace(jaeger: JaegerStub) -> None:
    jaeger.traces = [_episode("careless", lambda: None)]
    fetched = _jaeger.fetch_jaeger(jaeger.url, "shop-agent", timedelta(hours=1), limit=5, timeout=5)
    assert fetched is not None
    episodes, _ = fetched
    assert Trace(episodes) == Trace.from_otlp_json(jaeger.traces[0])
    assert _jaeger.fetch_jaeger(jaeger.url, "nobody", timedelta(hours=1)) is None
