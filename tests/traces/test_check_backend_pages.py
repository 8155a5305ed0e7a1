"""``chaoskit check --from-phoenix`` and ``--from-jaeger`` read a long time range page by page (Phoenix: cursor
pages; Jaeger: time windows, a full one read again in halves), against stub servers on 127.0.0.1 that serve
many pages: every page read once, episodes split across pages graded whole with the verdicts of the trace file,
memory bounded by a page rather than by the range, progress on a terminal only, and a page sequence that is
incomplete or broken is "cannot grade", never a pass."""

from __future__ import annotations

import base64
import copy
import io
import itertools
import json
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _jaeger_stub import JaegerStub, jaeger_stub
from _phoenix_stub import PhoenixStub, otlp_to_phoenix

from chaoskit.cli._check import PageProgress
from chaoskit.runner._battery import run_battery
from chaoskit.traces._phoenix import PhoenixPages

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [ROOT / "examples" / "scenarios" / f"{n}.yaml" for n in ("refund-after-500", "status-timeouts")]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A runner's trace file (two scenarios, a careful and a naive agent, three repetitions) and its documents."""
    work = tmp_path_factory.mktemp("pages")
    lines = []
    for agent in ("careful", "naive"):
        run_battery(SCENARIOS, agent=f"examples.plain.agents:{agent}", repeat=3, seed=5, traces=work / agent)
        lines += [ln for ln in (work / agent).read_text().splitlines() if ln.strip()]
    traces = work / "spans.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    return traces, [json.loads(line) for line in lines]


def _verdicts(report: str) -> dict[str, Any]:
    return {e["id"]: (e["checks"], e["score"], e["attempts"]) for e in json.loads(report)["episodes"]}


def _file_verdicts(traces: Path) -> dict[str, Any]:
    result = run_cli(["check", str(traces), "--json"])
    assert result.code == 1, result.err  # the naive agent fails its checks
    return _verdicts(result.out)


def _episode_of(span: dict[str, Any]) -> str | None:
    for kv in span["attributes"]:
        if kv["key"] == "chaoskit.episode.id":
            value: str = kv["value"]["string_value"]
            return value
    return None


# --- Phoenix: cursor pages -------------------------------------------------------------------------------------


def test_phoenix_pages_are_each_read_once_and_split_episodes_are_graded_whole(
    exported: tuple[Path, list[dict[str, Any]]],
) -> None:
    traces, docs = exported
    spans = otlp_to_phoenix(docs)
    page = 5
    with PhoenixStub({"chaos": spans}, page_cap=page) as stub:
        result = run_cli(["check", "--from-phoenix", stub.url, "--project", "chaos", "--since", "1d", "--json"])
    assert result.code == 1, result.err
    assert _verdicts(result.out) == _file_verdicts(traces)
    # every page asked for once: the first without a cursor, each next one with the cursor the previous named
    queries = [q for path, q, _ in stub.requests if path.endswith("/spans/otlpv1")]
    cursors = [q.get("cursor", [None])[0] for q in queries]
    assert len(queries) == -(-len(spans) // page) and len(set(cursors)) == len(cursors)
    # and the time window fixed when the read started, the same in every request
    assert len({(q["start_time"][0], q["end_time"][0]) for q in queries}) == 1
    # pages cut episodes: the stub serves newest first, ``page`` spans a page
    pages = [spans[::-1][i : i + page] for i in range(0, len(spans), page)]
    episode_pages: dict[str, set[int]] = {}
    for n, p in enumerate(pages):
        for s in p:
            eid = _episode_of(s)
            if eid is not None:
                episode_pages.setdefault(eid, set()).add(n)
    assert sum(len(p) > 1 for p in episode_pages.values()) >= 5


def _copies(spans: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` copies of ``spans`` with fresh trace, span and episode ids."""
    out = []
    for _ in range(n):
        ids: dict[str, str] = {}

        def fresh(old: str, size: int, ids: dict[str, str] = ids) -> str:
            if old not in ids:
                ids[old] = uuid.uuid4().hex[:size]
            return ids[old]

        for s in spans:
            c = copy.deepcopy(s)
            c["trace_id"] = fresh(s["trace_id"], 32)
            c["span_id"] = fresh(s["span_id"], 16)
            if c["parent_span_id"]:
                c["parent_span_id"] = fresh(s["parent_span_id"], 16)
            for kv in c["attributes"]:
                if kv["key"] == "chaoskit.episode.id":
                    kv["value"]["string_value"] = fresh(kv["value"]["string_value"], 32)
            out.append(c)
    return out


def _peak_while_reading(url: str) -> tuple[int, int]:
    """Peak traced memory while reading project ``chaos`` page by page (episodes dropped as handed out)."""
    pages = PhoenixPages(url, "chaos", timeout=30)
    tracemalloc.start()
    try:
        count = sum(1 for _ in pages)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, count


def test_phoenix_memory_is_bounded_by_a_page_not_by_the_range(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = exported
    one = otlp_to_phoenix(docs)
    small, large = _copies(one, 3), _copies(one, 24)
    with PhoenixStub({"chaos": small}, page_cap=50) as stub:
        peak_small, n_small = _peak_while_reading(stub.url)
    with PhoenixStub({"chaos": large}, page_cap=50) as stub:
        peak_large, n_large = _peak_while_reading(stub.url)
    assert n_large == 8 * n_small > 0
    # 8x the spans, read 50 a page: the peak grows by far less (1.2x measured: what grows is the 24-byte
    # fingerprint kept of each span read, to tell a copy from a changed span)
    assert peak_large < 1.6 * peak_small, (peak_small, peak_large)


class _SkippingPhoenix(PhoenixStub):
    """A Phoenix whose third page names a cursor past the page after it: a page of spans never served. (A page
    that held whole episodes and nothing else leaves no trace in what is served: see docs/scale.md.)"""

    def _spans(self, h: Any, spans: list[dict[str, Any]], query: dict[str, list[str]]) -> None:
        served = sum(1 for path, _, _ in self.requests if path.endswith("/spans/otlpv1"))
        if served == 3 and "cursor" in query:
            rowid = int(base64.b64decode(query["cursor"][0]).decode().split(":")[1])
            query = {**query, "cursor": [base64.b64encode(f"Span:{rowid - self.page_cap}".encode()).decode()]}
        super()._spans(h, spans, query)


def test_an_incomplete_page_sequence_from_phoenix_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = exported
    spans = otlp_to_phoenix(docs)
    for cap in (3, 5, 7):  # the page skipped cuts an episode: its root span or some of its attempts never arrive
        with _SkippingPhoenix({"chaos": spans}, page_cap=cap) as stub:
            result = run_cli(["check", "--from-phoenix", stub.url, "--project", "chaos", "--since", "1d"])
        assert result.code == 2 and result.out == "", cap  # no verdict printed, the episodes before it included
        assert_clear(result.err, names=["cannot grade", "spans", "missing"])


def test_an_episode_read_without_its_root_span_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = exported
    spans = otlp_to_phoenix(docs)
    root = next(s for s in spans if s["name"].startswith("invoke_agent"))
    # the root span is on a page never served (or began before --since): its attempts alone are no episode
    with PhoenixStub({"chaos": [s for s in spans if s is not root]}, page_cap=5) as stub:
        result = run_cli(["check", "--from-phoenix", stub.url, "--project", "chaos", "--since", "1d"])
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", _episode_of(root) or "", "invoke_agent span", "--since"])


def test_a_page_phoenix_fails_to_serve_cannot_be_graded(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = exported

    class Failing(PhoenixStub):
        def _spans(self, h: Any, spans: list[dict[str, Any]], query: dict[str, list[str]]) -> None:
            if "cursor" in query and sum(1 for p, _, _ in self.requests if p.endswith("/spans/otlpv1")) == 4:
                self._send(h, 500, json.dumps({"detail": "database is locked"}))
                return
            super()._spans(h, spans, query)

    with Failing({"chaos": otlp_to_phoenix(docs)}, page_cap=4) as stub:
        result = run_cli(["check", "--from-phoenix", stub.url, "--project", "chaos", "--since", "1d"])
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", "HTTP 500", "database is locked"])


# --- Jaeger: time windows --------------------------------------------------------------------------------------


def _traces(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents regrouped one trace per document, as the stub stores them."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    resource: dict[str, Any] = {}
    for doc in docs:
        for rs in doc["resourceSpans"]:
            resource = rs.get("resource") or {}
            for ss in rs.get("scopeSpans") or ():
                for sp in ss.get("spans") or ():
                    by_trace.setdefault(sp["traceId"], []).append(sp)
    service = {"key": "service.name", "value": {"stringValue": "shop-agent"}}
    attrs = [kv for kv in resource.get("attributes") or () if kv["key"] != "service.name"] + [service]
    return [
        {"resourceSpans": [{"resource": {"attributes": attrs}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
        for spans in by_trace.values()
    ]


@pytest.fixture
def jaeger() -> Iterator[JaegerStub]:
    yield from jaeger_stub()


def _accepted_windows(stub: JaegerStub, limit: int) -> list[tuple[str, str]]:
    """The windows whose answer was kept: those that held at most ``limit`` traces (the others were halved)."""
    out = []
    for q in stub.queries:
        if q["path"] != ["/api/v3/traces"]:
            continue
        status, _, body = stub.find(q)
        held = len(json.loads(body)["result"]["resourceSpans"]) if status == 200 else 0
        if held <= limit:
            out.append((q["query.start_time_min"][0], q["query.start_time_max"][0]))
    return out


def test_jaeger_windows_cover_the_range_once_and_grade_every_trace_whole(
    exported: tuple[Path, list[dict[str, Any]]], jaeger: JaegerStub
) -> None:
    traces, docs = exported
    jaeger.traces = _traces(docs)
    assert len(jaeger.traces) >= 12
    result = run_cli(["check", "--from-jaeger", jaeger.url, "--service", "shop-agent", "--limit", "3", "--json"])
    assert result.code == 1, result.err
    assert _verdicts(result.out) == _file_verdicts(traces)
    # the windows kept tile the range: each starts where the one before ended, none read twice
    windows = _accepted_windows(jaeger, 3)
    assert len(windows) == len(set(windows)) >= 4
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    # the window's answer, never the whole range's, is what is held: at most 3 traces (+1 to tell a full window)
    assert {q["query.num_traces"][0] for q in jaeger.queries} == {"4"}


def test_a_window_jaeger_holds_more_than_the_limit_in_is_refused_not_cut(
    exported: tuple[Path, list[dict[str, Any]]], jaeger: JaegerStub
) -> None:
    _, docs = exported
    one = _traces(docs)[0]
    jaeger.traces = [one, copy.deepcopy(one)]  # two traces at the very same times: no window tells them apart
    for sp in jaeger.traces[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        sp["traceId"] = "f" * 32
    result = run_cli(["check", "--from-jaeger", jaeger.url, "--service", "shop-agent", "--limit", "1"])
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", "more than 1 traces", "raise --limit"])


def test_a_trace_jaeger_holds_incomplete_cannot_be_graded(
    exported: tuple[Path, list[dict[str, Any]]], jaeger: JaegerStub
) -> None:
    _, docs = exported
    jaeger.traces = _traces(docs)
    spans = jaeger.traces[2]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    attempt = next(s for s in spans if s["name"].startswith("execute_tool"))
    spans.remove(attempt)  # the episode's root counts an attempt the window's answer does not hold
    result = run_cli(["check", "--from-jaeger", jaeger.url, "--service", "shop-agent", "--limit", "3"])
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", "attempt"])


# --- progress ---------------------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_and_cleared_at_the_end() -> None:
    out = _Terminal()
    with PageProgress(out, enabled=True) as progress:
        progress("Phoenix: 1 page(s), 1,000 spans read, 80 episodes")
        progress("Phoenix: 2 page(s), 2,000 spans read, 170 episodes")
    text = out.getvalue()
    assert "\rchaoskit: Phoenix: 2 page(s), 2,000 spans read, 170 episodes" in text
    assert text.endswith("\r")  # the line is cleared: the report and errors start on a clean line
    for quiet, stream in ((True, _Terminal()), (False, io.StringIO())):  # --quiet, or not a terminal
        with PageProgress(stream, enabled=not quiet) as progress:
            progress("Phoenix: 1 page(s)")
        assert stream.getvalue() == ""


def test_check_shows_page_progress_on_a_terminal_and_not_with_quiet(
    exported: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, docs = exported
    with PhoenixStub({"chaos": otlp_to_phoenix(docs)}, page_cap=10) as stub:
        for quiet in (False, True):
            err = _Terminal()
            monkeypatch.setattr("sys.stderr", err)
            from chaoskit.cli._main import main

            code = main(
                ["check", "--from-phoenix", stub.url, "--project", "chaos", "--since", "1d", "--json"]
                + (["--quiet"] if quiet else [])
            )
            assert code == 1
            shown = err.getvalue()
            if quiet:
                assert "page(s)" not in shown
            else:
                assert "chaoskit: Phoenix: 1 page(s)" in shown and "chaoskit: Phoenix: 3 page(s)" in shown


def test_a_window_jaeger_fails_to_answer_cannot_be_graded(
    exported: tuple[Path, list[dict[str, Any]]], jaeger: JaegerStub
) -> None:
    _, docs = exported
    jaeger.traces = _traces(docs)
    real = jaeger.find
    asked: list[int] = []

    def find(q: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        asked.append(1)
        if len(asked) == 4:  # a window in the middle of the range
            return 500, {"Content-Type": "application/json"}, b'{"error":{"httpCode":500,"message":"storage busy"}}'
        return real(q)

    jaeger.find = find  # type: ignore[method-assign]
    result = run_cli(["check", "--from-jaeger", jaeger.url, "--service", "shop-agent", "--limit", "3"])
    assert len(asked) == 4  # the read stops at the failed window
    assert result.code == 2 and result.out == ""  # the windows before it graded, and nothing printed
    assert_clear(result.err, names=["cannot grade", "HTTP 500", "storage busy"])


def test_a_window_answer_of_another_shape_is_read_as_the_whole_answer_reader_does(
    exported: tuple[Path, list[dict[str, Any]]], jaeger: JaegerStub
) -> None:
    traces, docs = exported
    jaeger.traces = _traces(docs)
    real = jaeger.find

    def find(q: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        status, headers, body = real(q)
        if status != 200:
            return status, headers, body
        # "result" twice: the streamed reading stops after the first (its spans already read) and the answer is
        # read whole by the general reader into the same reader, whose spans then come a second time unchanged
        result = json.dumps(json.loads(body)["result"])
        return status, headers, ('{"result": ' + result + ', "result": ' + result + "}").encode()

    jaeger.find = find  # type: ignore[method-assign]
    result = run_cli(["check", "--from-jaeger", jaeger.url, "--service", "shop-agent", "--limit", "3", "--json"])
    assert result.code == 1, result.err
    assert _verdicts(result.out) == _file_verdicts(traces)
