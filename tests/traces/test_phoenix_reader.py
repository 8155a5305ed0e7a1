"""Reading traces back from Arize Phoenix's REST API (``fetch_phoenix``), against a stub Phoenix on 127.0.0.1.

The stub (``tests/_phoenix_stub.py``) answers as Phoenix 20.26 does: snake_case OTLP spans with nulls, float-
rounded nanosecond times, cursor paging, a plain-text 404 for an unknown project, the UI's HTML for any other
path. The live round trip against a real Phoenix is ``tests/traces/test_phoenix_backend.py``.
"""

from __future__ import annotations

import copy
import json
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _phoenix_stub import PhoenixStub, otlp_to_phoenix

import chaoskit
import chaoskit.grading
from chaoskit import ChaoskitError, Trace, TraceReadError, score
from chaoskit.grading.checks import run_checks
from chaoskit.runner._battery import run_battery
from chaoskit.traces._phoenix import fetch_phoenix, phoenix_to_otlp

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [ROOT / "examples" / "scenarios" / f"{n}.yaml" for n in ("refund-after-500", "status-timeouts")]
CHECKS = ["no_duplicate_writes", "no_bluff", "reports_failure", "no_retry_storm", "no_fabrication"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A runner's local trace file (two scenarios, a careful and a naive agent) and its spans as Phoenix has them."""
    work = tmp_path_factory.mktemp("phoenix-reader")
    lines = []
    for agent in ("careful", "naive"):
        run_battery(SCENARIOS, agent=f"examples.plain.agents:{agent}", repeat=2, seed=5, traces=work / agent)
        lines += (work / agent).read_text().splitlines()
    traces = work / "spans.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    docs = [json.loads(line) for line in lines if line.strip()]
    return traces, otlp_to_phoenix(docs)


def _graded(trace: Trace) -> dict[str | None, tuple[Any, ...]]:
    out = {}
    for one in trace.split():
        results = run_checks(one, CHECKS)
        checks = tuple(json.dumps(r.to_dict(), sort_keys=True) for r in results)
        out[one.episodes[0].id] = (checks, score(one, checks=results).value, len(one.episodes[0].attempts))
    return out


def test_phoenix_spans_grade_as_the_local_trace_file(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    traces, spans = exported
    with PhoenixStub({"default": [], "chaos": spans}, page_cap=7) as stub:
        trace = fetch_phoenix(stub.url, "chaos")
    local = Trace.load(traces)
    assert len(trace) == len(local) == 8
    assert _graded(trace) == _graded(local)
    # Phoenix keeps times to the microsecond (rounded, where the local file truncates): within one of them
    for got, want in zip(trace.attempts, local.attempts, strict=True):
        assert abs(got.start_time - want.start_time) <= 1.5e-6
    # paged: 7 spans a page, each page asked for with the cursor the previous one named
    pages = [q for path, q, _ in stub.requests if path.endswith("/otlpv1")]
    assert len(pages) == -(-len(spans) // 7)
    assert "cursor" not in pages[0] and all("cursor" in q for q in pages[1:])


def test_times_are_rounded_back_to_the_microsecond(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    """Phoenix sends ``int(seconds * 1e9)``, a few hundred ns off its stored microsecond: rounded back."""
    _, spans = exported
    sent = [s["start_time_unix_nano"] for s in spans]
    assert any(t % 1000 for t in sent)  # the float shows
    (rs,) = phoenix_to_otlp(spans)["resourceSpans"]
    got = [s["startTimeUnixNano"] for s in rs["scopeSpans"][0]["spans"]]
    assert all(t % 1000 == 0 for t in got)
    assert all(abs(g - s) < 500 for g, s in zip(got, sent, strict=True))


def test_verdicts_include_failures(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    """Both a passing and a failing episode come back through Phoenix, so the comparison above can fail."""
    _, spans = exported
    with PhoenixStub({"chaos": spans}) as stub:
        graded = _graded(fetch_phoenix(stub.url, "chaos"))
    passed = {all(json.loads(c)["passed"] for c in checks) for checks, _, _ in graded.values()}
    assert passed == {True, False}


def test_the_project_name_is_quoted_and_since_is_sent(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    with PhoenixStub({"my run #1": spans}) as stub:
        fetch_phoenix(stub.url, "my run #1", since=timedelta(days=3650))
    path, query, _ = stub.requests[0]
    assert path == "/v1/projects/my%20run%20%231/spans/otlpv1"
    assert query["start_time"][0].endswith("+00:00")


def test_an_unknown_project_lists_the_projects() -> None:
    with PhoenixStub({"default": [], "chaos-http": []}) as stub, pytest.raises(TraceReadError) as err:
        fetch_phoenix(stub.url, "chaos-grpc")
    assert "Phoenix has no project 'chaos-grpc'; its projects: 'default', 'chaos-http'" in str(err.value)


def test_more_spans_than_the_limit_is_refused_not_cut(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    with PhoenixStub({"chaos": spans}) as stub:
        with pytest.raises(TraceReadError, match=r"holds more than 10 spans; .* raise the limit \(--limit\)"):
            fetch_phoenix(stub.url, "chaos", limit=10)
        assert len(fetch_phoenix(stub.url, "chaos", limit=len(spans))) == 8


def test_a_refused_connection_says_where_phoenix_was_expected() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    with pytest.raises(TraceReadError, match=r"cannot reach Phoenix \(.*refused.*\); is it running at"):
        fetch_phoenix(f"http://127.0.0.1:{port}", "chaos", timeout=5)


def test_a_phoenix_that_never_answers_times_out() -> None:
    with PhoenixStub({}, mode="hang") as stub, pytest.raises(TraceReadError, match=r"did not answer within 0.2 s"):
        fetch_phoenix(stub.url, "chaos", timeout=0.2)


def test_an_answer_that_is_not_json() -> None:
    """A Phoenix without the REST endpoint (or another server) answers its HTML page."""
    with PhoenixStub({}, mode="html") as stub, pytest.raises(TraceReadError, match=r"did not answer with JSON"):
        fetch_phoenix(stub.url, "chaos")


def test_authentication(exported: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    _, spans = exported
    with PhoenixStub({}, mode="401") as stub, pytest.raises(TraceReadError, match=r"HTTP 401.*PHOENIX_API_KEY"):
        fetch_phoenix(stub.url, "chaos")
    monkeypatch.setenv("PHOENIX_API_KEY", "k-123")
    with PhoenixStub({"chaos": spans}) as stub:
        fetch_phoenix(stub.url, "chaos")
    assert stub.requests[0][2]["Authorization"] == "Bearer k-123"


def test_the_api_key_is_sent_as_given_whatever_netrc_says(
    exported: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # an HTTP client that reads ~/.netrc (requests does) would replace the bearer token with Basic credentials
    _, spans = exported
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("PHOENIX_API_KEY", "k-123")
    with PhoenixStub({"chaos": spans}) as stub:
        fetch_phoenix(stub.url, "chaos")
    assert stub.requests and all(headers["Authorization"] == "Bearer k-123" for _, _, headers in stub.requests)
    monkeypatch.delenv("PHOENIX_API_KEY")
    with PhoenixStub({"chaos": spans}) as stub:
        fetch_phoenix(stub.url, "chaos")
    assert stub.requests and all("Authorization" not in headers for _, _, headers in stub.requests)


def test_paging_that_does_not_advance_is_an_error(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    with PhoenixStub({"chaos": spans}, page_cap=5, mode="stuck_cursor") as stub:
        with pytest.raises(TraceReadError, match=r"paging does not advance"):
            fetch_phoenix(stub.url, "chaos")


def _tool_span(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in spans if s["name"].startswith("execute_tool "))


def test_a_tampered_attribute_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    spans = copy.deepcopy(spans)
    attempt = next(kv for kv in _tool_span(spans)["attributes"] if kv["key"] == "chaoskit.attempt")
    attempt["value"] = {**attempt["value"], "int_value": None, "string_value": "two"}
    with PhoenixStub({"chaos": spans}) as stub, pytest.raises(TraceReadError, match=r"chaoskit\.attempt"):
        fetch_phoenix(stub.url, "chaos")


def test_a_missing_attempt_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    spans = [s for s in spans if s is not _tool_span(spans)]
    with PhoenixStub({"chaos": spans}) as stub, pytest.raises(TraceReadError, match=r"attempt"):
        fetch_phoenix(stub.url, "chaos")


def test_a_span_ending_before_it_starts_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    spans = copy.deepcopy(spans)
    span = _tool_span(spans)
    span["end_time_unix_nano"] = span["start_time_unix_nano"] - 5_000_000
    with PhoenixStub({"chaos": spans}) as stub, pytest.raises(TraceReadError, match=r"ends before it starts"):
        fetch_phoenix(stub.url, "chaos")


def test_nothing_to_grade(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, spans = exported
    foreign = copy.deepcopy(spans[:3])
    for s in foreign:
        s["name"] = "HTTP GET"
    with PhoenixStub({"empty": [], "other": foreign}) as stub:
        with pytest.raises(TraceReadError, match=r"nothing to grade: Phoenix project 'empty' has no spans"):
            fetch_phoenix(stub.url, "empty")
        with pytest.raises(TraceReadError, match=r"nothing to grade: none of its 3 span\(s\) is a chaoskit span"):
            fetch_phoenix(stub.url, "other")


@pytest.mark.parametrize("url", ["127.0.0.1:6006", "ftp://host", "http://", "http://h:99999", "http://h/?q=1"])
def test_a_bad_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(ChaoskitError, match=r"--from-phoenix expects the http:// or https:// URL of Phoenix"):
        fetch_phoenix(url, "chaos")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"project": ""}, "expected the name of a Phoenix project"),
        ({"limit": 0}, "limit must be a whole number >= 1"),
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    args = {"project": "chaos", **kwargs}
    with pytest.raises(ChaoskitError, match=message):
        fetch_phoenix("http://127.0.0.1:1", args.pop("project"), **args)


def test_public_name() -> None:
    assert chaoskit.fetch_phoenix is chaoskit.grading.fetch_phoenix is fetch_phoenix
