"""Grading that streams: ``Trace.iter_episodes`` and ``chaoskit check`` (with ``--workers``) read a file one
episode at a time, give the verdicts the whole-file reader gives, and keep every "could not grade" rule."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from _helpers import issue_refund, read_page, search

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, checks, telemetry
from chaoskit.cli._main import main

PLAN = Plan(
    seed=4,
    faults=[
        {"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True},
        {"type": "rate_limit", "tool": "search", "on_call": 1, "retry_after": 0.001},
        {"type": "prompt_injection", "tool": "read_page", "on_call": 1},
    ],
)


def _episodes(n: int) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """OTLP-JSON span dicts of ``n`` real episodes of differing behaviour, plus the resource and scope."""
    tracer = telemetry.get_tracer()
    with telemetry.capture() as cap:
        for i in range(n):
            with chaoskit.episode(f"ep-{i}", plan=PLAN) as ep:
                for _ in range(1 + i % 3):  # one, two or three refunds: some duplicate writes
                    try:
                        issue_refund("4832", key="k" if i % 2 else None)
                    except chaoskit.ToolHTTPError:
                        pass
                for _ in range(1 + i % 2):
                    try:
                        search("a")
                    except chaoskit.ToolHTTPError:
                        pass
                if i % 4 == 0:
                    read_page("u")
                with tracer.start_as_current_span("chat model"):
                    pass
                ep.finish("Refund issued." if i % 3 else "The refund failed.")
        search("outside any episode")
        doc = telemetry.to_otlp_json(cap.spans)
    rs = doc["resourceSpans"][0]
    return rs["scopeSpans"][0]["spans"], rs["resource"], rs["scopeSpans"][0]["scope"]


def _write(path: Path, spans: list[dict[str, Any]], res: dict[str, Any], scope: dict[str, Any], per_line: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(0, len(spans), per_line):
            chunk = spans[i : i + per_line]
            fh.write(
                json.dumps({"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": scope, "spans": chunk}]}]})
            )
            fh.write("\n")
    return path


def _interleaved(spans: list[dict[str, Any]], seed: int = 7) -> list[dict[str, Any]]:
    """The spans with the episodes' spans interleaved (each episode's own order kept, as an exporter keeps it)."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_trace.setdefault(s["traceId"], []).append(s)
    queues = list(by_trace.values())
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    while queues:
        q = rng.choice(queues[:3])  # a few episodes in flight at a time
        out.append(q.pop(0))
        if not q:
            queues.remove(q)
    return out


@pytest.fixture(scope="module")
def template() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    return _episodes(12)


def _graded(episodes: list[Any]) -> list[tuple[Any, ...]]:
    """Each episode's id, attempts and verdicts, sorted by id: what must not depend on how the file was read."""
    out = []
    for ep in episodes:
        results = checks.run_checks(Trace([ep]))
        out.append((ep.id, len(ep.attempts), tuple((r.name, r.severity, r.message) for r in results)))
    return sorted(out, key=lambda t: str(t[0]))


def _check_json(path: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    rc = main(["check", "--json", str(path), *extra])
    out = capsys.readouterr().out
    return rc, json.loads(out) if rc != 2 else {}


def _by_id(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            (e["id"], e["attempts"], tuple((c["name"], c["severity"], c["message"]) for c in e["checks"]))
            for e in report["episodes"]
        ),
        key=lambda t: str(t[0]),
    )


def test_iter_episodes_gives_the_episodes_load_gives_on_interleaved_spans(template: Any, tmp_path: Path) -> None:
    spans, res, scope = template
    path = _write(tmp_path / "t.jsonl", _interleaved(spans), res, scope, per_line=3)
    streamed = list(Trace.iter_episodes(path))
    assert all(len(t) == 1 for t in streamed)
    whole = Trace.load(path)
    assert len(streamed) == len(whole.episodes) == 13  # 12 episodes and the attempts outside any
    assert sorted((t.episodes[0] for t in streamed), key=lambda e: str(e.id)) == sorted(
        whole.episodes, key=lambda e: str(e.id)
    )
    assert _graded([t.episodes[0] for t in streamed]) == _graded(whole.episodes)


def test_episodes_are_handed_out_before_the_end_of_the_file(template: Any, tmp_path: Path) -> None:
    spans, res, scope = template
    path = _write(tmp_path / "t.jsonl", spans, res, scope, per_line=4)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"resourceSpans": [{"scopeSpans": [{"spans": [\n')  # cut short: the file cannot be graded
    episodes = Trace.iter_episodes(path)
    first = next(episodes)
    assert first.episodes[0].name == "ep-0"
    with pytest.raises(TraceReadError, match="cut short or malformed"):
        list(episodes)
    with pytest.raises(TraceReadError, match="cut short or malformed"):
        Trace.load(path)


@pytest.mark.parametrize("workers", ["1", "2", "3"])
def test_check_with_workers_gives_the_whole_file_verdicts(
    template: Any, tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, res, scope = template
    path = _write(tmp_path / "t.jsonl", _interleaved(spans, seed=int(workers)), res, scope, per_line=2)
    rc, report = _check_json(path, "--workers", workers, capsys=capsys)
    whole = Trace.load(path).episodes
    assert rc == 1 and len(report["episodes"]) == len(whole)
    expected = [(eid, n, tuple(v)) for eid, n, v in _graded(whole)]
    assert _by_id(report) == expected


def test_an_exact_copy_of_a_span_after_its_episode_is_ignored(template: Any, tmp_path: Path) -> None:
    spans, res, scope = template
    # a collector's retry: the first batch again at the end of the file
    path = _write(tmp_path / "t.jsonl", [*spans, *spans[:5]], res, scope, per_line=5)
    assert _graded([t.episodes[0] for t in Trace.iter_episodes(path)]) == _graded(Trace.load(path).episodes)


def _attempt(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in spans if s["name"].startswith("execute_tool issue_refund"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_changed_copy_of_a_span_after_its_episode_cannot_be_graded(
    template: Any, tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, res, scope = template
    changed = copy.deepcopy(_attempt(spans))
    for kv in changed["attributes"]:
        if kv["key"] == "chaoskit.outcome":
            kv["value"] = {"stringValue": "ok" if kv["value"]["stringValue"] != "ok" else "error"}
    path = _write(tmp_path / "t.jsonl", [*spans, changed], res, scope, per_line=2)
    with pytest.raises(TraceReadError, match="second version of one of its spans"):
        list(Trace.iter_episodes(path))
    with pytest.raises(TraceReadError, match="appears twice with different content"):
        Trace.load(path)
    assert main(["check", str(path), "--workers", workers]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "appears twice with different content" in captured.err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_extra_attempt_after_its_episode_is_graded_as_the_whole_file_reader_grades_it(
    template: Any, tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, res, scope = template
    extra = copy.deepcopy(_attempt(spans))
    extra["spanId"] = "feedfacefeedface"
    path = _write(tmp_path / "t.jsonl", [*spans, extra], res, scope, per_line=2)
    with pytest.raises(TraceReadError, match="beyond the attempts its invoke_agent span counted"):
        list(Trace.iter_episodes(path))
    rc, report = _check_json(path, "--workers", workers, capsys=capsys)
    whole = Trace.load(path).episodes
    assert rc == 1 and _by_id(report) == [(e, n, tuple(v)) for e, n, v in _graded(whole)]


@pytest.mark.parametrize("workers", ["1", "2", "3"])
def test_an_episode_missing_an_attempt_never_passes(
    template: Any, tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, res, scope = template
    lost = _attempt(spans)
    path = _write(tmp_path / "t.jsonl", [s for s in _interleaved(spans) if s is not lost], res, scope, per_line=2)
    with pytest.raises(TraceReadError, match="spans are missing"):
        list(Trace.iter_episodes(path))
    assert main(["check", str(path), "--workers", workers]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "spans are missing" in captured.err


def test_workers_must_be_positive(template: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spans, res, scope = template
    path = _write(tmp_path / "t.jsonl", spans, res, scope, per_line=50)
    assert main(["check", str(path), "--workers", "0"]) == 2
    assert "--workers must be a whole number >= 1, got 0" in capsys.readouterr().err
