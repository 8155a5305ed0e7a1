"""Grades on the trace: ``chaoskit run`` writes one ``gen_ai.evaluation.result`` event per check on each episode's
span; ``chaoskit check --write-back`` sends them to the backend the trace came from (Jaeger: a span under the
episode's span, over OTLP; Phoenix: span annotations, here against the stub ``tests/_phoenix_stub.py``, which
answers ``POST /v1/span_annotations`` as Phoenix 20.26's handler does). The readers ignore both, so a trace
holding them grades exactly as before. The live Jaeger round trip is ``tests/traces/test_jaeger_backend.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _phoenix_stub import PhoenixStub, otlp_to_phoenix
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import chaoskit.semconv as sc
from chaoskit import Trace, score
from chaoskit.grading import _evaluation
from chaoskit.grading.checks import run_checks
from chaoskit.runner import run_battery

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [ROOT / "examples" / "scenarios" / f"{n}.yaml" for n in ("refund-after-500", "status-timeouts")]
CHECKS = ["no_duplicate_writes", "no_bluff", "reports_failure", "no_retry_storm", "no_fabrication"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """A runner's local trace file (two scenarios, a careful and a naive agent) and its episode results."""
    work = tmp_path_factory.mktemp("evaluation")
    lines, results = [], []
    for agent in ("careful", "naive"):
        got = run_battery(SCENARIOS, agent=f"examples.plain.agents:{agent}", repeat=1, seed=5, traces=work / agent)
        results += got.episodes
        lines += (work / agent).read_text().splitlines()
    traces = work / "spans.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    return traces, results


def _spans(path: Path) -> list[dict[str, Any]]:
    return [
        sp
        for line in path.read_text().splitlines()
        if line.strip()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
    ]


def _value(v: dict[str, Any]) -> Any:
    ((kind, x),) = v.items()
    if kind == "arrayValue":
        return [_value(i) for i in x.get("values") or ()]
    return float(x) if kind == "doubleValue" else x


def _attrs(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _value(kv["value"]) for kv in items or ()}


def test_run_puts_one_evaluation_event_per_check_on_each_episode_span(run: tuple[Path, list[Any]]) -> None:
    traces, results = run
    roots = {
        _attrs(sp["attributes"])[sc.EPISODE_ID]: sp for sp in _spans(traces) if sp["name"].startswith("invoke_agent ")
    }
    assert len(roots) == len(results) == 4
    failed = 0
    for ep in results:
        events = [
            _attrs(e["attributes"])
            for e in roots[ep.episode_id].get("events") or ()
            if e["name"] == sc.EVALUATION_EVENT
        ]
        assert len(events) == len(ep.checks)
        for event, check in zip(events, ep.checks, strict=True):
            assert event[sc.GEN_AI_EVALUATION_NAME] == check["name"]
            assert event[sc.GEN_AI_EVALUATION_SCORE_LABEL] == check["severity"]
            assert event[sc.GEN_AI_EVALUATION_SCORE_VALUE] == (1.0 if check["passed"] else 0.0)
            assert event[sc.GEN_AI_EVALUATION_EXPLANATION] == check["message"]
            assert event.get(sc.EVALUATION_EVIDENCE, []) == check["evidence"]
            failed += not check["passed"]
    assert failed  # the naive agent's duplicate refund: a failing result, with its evidence, is on the trace
    assert any(
        e.get(sc.EVALUATION_EVIDENCE)
        for sp in roots.values()
        for e in (_attrs(ev["attributes"]) for ev in sp.get("events") or ())
        if e.get(sc.GEN_AI_EVALUATION_SCORE_LABEL) == "fail"
    )


def _graded(trace: Trace) -> dict[str | None, tuple[Any, ...]]:
    out = {}
    for one in trace.split():
        results = run_checks(one, CHECKS)
        checks = tuple(json.dumps(r.to_dict(), sort_keys=True) for r in results)
        out[one.episodes[0].id] = (checks, score(one, checks=results).value, len(one.episodes[0].attempts))
    return out


def test_a_trace_with_evaluation_events_grades_exactly_as_one_without(
    run: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    traces, _ = run
    stripped = tmp_path / "stripped.jsonl"
    lines = []
    removed = 0
    for line in traces.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    kept = [e for e in sp.get("events") or () if e["name"] != sc.EVALUATION_EVENT]
                    removed += len(sp.get("events") or ()) - len(kept)
                    sp["events"] = kept
        lines.append(json.dumps(doc))
    stripped.write_text("\n".join(lines) + "\n")
    assert removed > 0
    assert _graded(Trace.load(traces)) == _graded(Trace.load(stripped))
    with_events, without = run_cli(["check", str(traces), "--json"]), run_cli(["check", str(stripped), "--json"])
    assert with_events.code == without.code == 1
    a, b = json.loads(with_events.out)["episodes"], json.loads(without.out)["episodes"]
    assert [{**e, "source": None} for e in a] == [{**e, "source": None} for e in b]


# --- --write-back to Jaeger: a span under the episode's, through the SDK's OTLP exporter ---------------------


def test_write_back_otlp_sends_a_span_under_each_episode_with_its_grades(
    run: tuple[Path, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, _ = run
    sent = InMemorySpanExporter()
    monkeypatch.setattr(_evaluation, "exporter_from_env", lambda: (sent, "memory"))
    trace = Trace.load(traces)
    graded = [(ep, [r.to_dict() for r in run_checks(Trace([ep]), CHECKS)]) for ep in trace.episodes]
    assert _evaluation.write_back_otlp(graded, "shop-agent") == "memory"
    spans = sent.get_finished_spans()
    assert len(spans) == len(graded) == 4
    for span, (ep, checks) in zip(spans, graded, strict=True):
        assert span.name == f"{sc.SPAN_EVALUATION} {ep.name}"
        assert f"{span.context.trace_id:032x}" == ep.trace_id  # joined to the episode's trace
        assert span.parent is not None and f"{span.parent.span_id:016x}" == ep.span_id  # under its span
        assert span.resource.attributes["service.name"] == "shop-agent"
        assert [dict(e.attributes or {}) for e in span.events] == [_evaluation.evaluation_attributes(c) for c in checks]
        assert {e.name for e in span.events} == {sc.EVALUATION_EVENT}
        assert not any(k.startswith(sc.CHAOSKIT_PREFIX) for k in span.attributes or {})  # never read as an episode
    # the written-back spans beside the trace change no grade
    from chaoskit import telemetry

    doc = telemetry.to_otlp_json(spans)
    both = traces.read_text() + json.dumps(doc) + "\n"
    joined = traces.with_name("joined.jsonl")
    joined.write_text(both)
    assert _graded(Trace.load(joined)) == _graded(trace)


def test_write_back_needs_a_backend_and_for_jaeger_an_otlp_endpoint(
    run: tuple[Path, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    traces, _ = run
    result = run_cli(["check", str(traces), "--write-back"])
    assert result.code == 2
    assert_clear(result.err, names=["--write-back", "--from-jaeger or --from-phoenix"])
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    result = run_cli(["check", "--from-jaeger", "http://127.0.0.1:9", "--service", "s", "--write-back"])
    assert result.code == 2
    assert_clear(result.err, names=["--write-back", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"])


# --- --write-back to Phoenix: span annotations on the episode's span --------------------------------------


def test_write_back_to_phoenix_annotates_each_episode_span(run: tuple[Path, list[Any]]) -> None:
    traces, _ = run
    spans = otlp_to_phoenix(json.loads(line) for line in traces.read_text().splitlines() if line.strip())
    with PhoenixStub({"chaos": spans}) as stub:
        argv = ["check", "--from-phoenix", stub.url, "--project", "chaos", "--json", "--write-back"]
        result = run_cli(argv)
        again = run_cli(argv)
    assert result.code == again.code == 1, result.err
    report = json.loads(result.out)
    n = sum(len(e["checks"]) for e in report["episodes"])
    assert n >= 20 and len(report["episodes"]) == 4
    assert f"wrote {n} annotation(s) on 4 episode span(s) back to Phoenix" in result.err
    posts = [q for path, q, _ in stub.requests if path == "/v1/span_annotations"]
    assert posts == [{"sync": ["true"]}] * 2
    assert len(stub.annotations) == n  # sent twice, stored once: updated by name, span and identifier
    roots = {sp["span_id"]: sp for sp in spans if sp["name"].startswith("invoke_agent ")}
    for ep in report["episodes"]:
        (span_id,) = [sid for sid, sp in roots.items() if sp["trace_id"] == ep["trace_id"]]
        for check in ep["checks"]:
            got = stub.annotations[(check["name"], span_id, "chaoskit")]
            assert got["annotator_kind"] == "CODE"
            assert got["result"] == {
                "label": check["severity"],
                "score": 1.0 if check["passed"] else 0.0,
                "explanation": check["message"],
            }
            assert got["metadata"]["evidence"] == check["evidence"]


def test_write_back_to_phoenix_that_lacks_the_span_is_not_a_clean_exit(run: tuple[Path, list[Any]]) -> None:
    traces, _ = run
    spans = otlp_to_phoenix(json.loads(line) for line in traces.read_text().splitlines() if line.strip())
    with PhoenixStub({"chaos": spans}) as stub:
        root = next(sp for sp in spans if sp["name"].startswith("invoke_agent "))
        stub.not_held = {root["span_id"]}
        result = run_cli(["check", "--from-phoenix", stub.url, "--project", "chaos", "--write-back"])
    assert result.code == 2
    assert_clear(result.err, names=["could not write the grades back", "HTTP 404", root["span_id"]])
    assert "episode(s)" in result.out  # the grades themselves were printed


COMMAND_AGENT = """
import os
import chaoskit
from chaoskit import chaos

@chaos(irreversible=True)
def issue_refund(order_id: str) -> str:
    return "refunded " + order_id

with chaoskit.episode(os.environ.get("CHAOSKIT_SCENARIO", "cli")) as ep:
    for _ in range(2):
        try:
            issue_refund("4832")
            break
        except Exception:
            pass
    ep.finish("Refund issued.")
print("Refund issued.")
"""


def test_a_command_line_agents_grades_are_on_the_run_episode_span_its_root_span_is_under(tmp_path: Path) -> None:
    """The agent's own root span ended in its process; the runner's ``run_episode`` span, its parent in the
    same trace, stays open until the episode is graded and takes the events."""
    import sys

    (tmp_path / "agent.py").write_text(COMMAND_AGENT)
    (tmp_path / "refund.yaml").write_text(
        "name: refund\ntask: Refund order 4832\nfaults:\n  - {type: http, tool: issue_refund, on_call: 1, status: 500,"
        " after_write: true}\n"
    )
    traces = tmp_path / "spans.jsonl"
    result = run_battery([tmp_path / "refund.yaml"], agent=f"{sys.executable} {tmp_path / 'agent.py'}", traces=traces)
    (ep,) = result.episodes
    assert any(not c["passed"] for c in ep.checks)  # the retried write without a key: a failing check
    spans = _spans(traces)
    (run_span,) = [sp for sp in spans if sp["name"].startswith(sc.SPAN_RUN_EPISODE)]
    (root,) = [sp for sp in spans if sp["name"].startswith("invoke_agent ")]
    assert root["parentSpanId"] == run_span["spanId"] and root["traceId"] == run_span["traceId"]
    events = [_attrs(e["attributes"]) for e in run_span.get("events") or () if e["name"] == sc.EVALUATION_EVENT]
    assert [(e[sc.GEN_AI_EVALUATION_NAME], e[sc.GEN_AI_EVALUATION_SCORE_LABEL]) for e in events] == [
        (c["name"], c["severity"]) for c in ep.checks
    ]
