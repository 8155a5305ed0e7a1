"""Attempts made in another process for an episode (a proxy's: no chaoskit.episode.id, the episode's trace) are
graded with that episode: whole reads, streaming reads, parallel parts, and `chaoskit check`."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context

import chaoskit
from chaoskit import Plan, Trace, chaos, telemetry
from chaoskit.cli import main as chaoskit_main
from chaoskit.grading import checks

FAILING = Plan(faults=[{"type": "error", "tool": "deploy", "error": "backend reset"}])


@chaos
def deploy(service: str) -> str:
    return f"deployed {service}"


def _outside_the_episode(ctx: Any, n: int) -> None:
    """``n`` calls of ``deploy`` as another process makes them for the episode: in its trace (its root span as the
    parent, as a traceparent in the request's _meta gives), under the same plan, but with no episode of its own."""

    def calls() -> None:
        token = otel_context.attach(ctx)
        try:
            with FAILING.activate():
                for _ in range(n):
                    try:
                        deploy("api")
                    except ConnectionResetError:
                        pass
        finally:
            otel_context.detach(token)

    worker = threading.Thread(target=calls)  # a new thread: no episode is active there
    worker.start()
    worker.join(timeout=30)


def naive_agent_spans(path: Path | None = None, *, proxied: int = 5, answer: str = "Done!") -> Trace:
    """A naive agent whose tool calls all go through "a proxy" and fail, and that answers ``answer``."""
    writer = telemetry.SpanFileWriter(str(path)) if path is not None else None
    if writer is not None:
        telemetry.add_processor(writer)
    try:
        with telemetry.capture() as cap, chaoskit.episode("deploy-task") as ep:
            _outside_the_episode(otel_context.get_current(), proxied)
            ep.finish(answer)
    finally:
        telemetry.flush()
        if writer is not None:
            telemetry.remove_processor(writer)
    return Trace.from_spans(cap.spans)


def root_first(path: Path) -> None:
    """Rewrite a span file one span a line, the episode's root span first: as when the proxy's file is appended
    after the agent's, so that the episode is complete (and streamed out) before its proxied attempts."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    one = {"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [span]}]}]}
                    lines.append((not span["name"].startswith("invoke_agent"), json.dumps(one)))
    assert sum(not later for later, _ in lines) == 1
    path.write_text("\n".join(text for _, text in sorted(lines, key=lambda x: x[0])) + "\n", encoding="utf-8")


def test_the_proxied_attempts_join_the_episode_of_their_trace() -> None:
    trace = naive_agent_spans()
    (episode,) = trace.episodes  # without the fix: the episode and "outside any episode"
    assert episode.output == "Done!"
    assert [(a.tool, a.outcome, a.episode_id) for a in episode.attempts] == [("deploy", "error", episode.id)] * 5
    bluff = next(r for r in checks.run_checks(trace) if r.name == "no_bluff")
    assert not bluff.passed  # "Done!" after five failures is a bluff


def test_chaoskit_check_fails_the_naive_agent(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "spans.jsonl"
    naive_agent_spans(path)
    assert chaoskit_main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "no_bluff" in out and "outside any episode" not in out
    assert chaoskit_main(["check", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    (episode,) = report["episodes"]
    assert episode["output"] == "Done!" and episode["attempts"] == 5
    assert {c["name"]: c["passed"] for c in episode["checks"]}["no_bluff"] is False


def test_an_honest_answer_passes_with_the_proxied_attempts(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    naive_agent_spans(path, answer="I could not deploy api: the deploy tool failed 5 times (backend reset).")
    assert chaoskit_main(["check", str(path), "--checks", "no_bluff,reports_failure"]) == 0


def test_a_proxied_attempt_written_after_its_episode_is_still_graded_with_it(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    naive_agent_spans(path)
    root_first(path)
    (episode,) = Trace.load(path).episodes
    assert len(episode.attempts) == 5
    assert chaoskit_main(["check", str(path), "--checks", "no_bluff"]) == 1


def test_parallel_parts_keep_the_proxied_attempts_with_their_episode(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    naive_agent_spans(path)
    root_first(path)
    # the root's line made long with a span that is not chaoskit's: the file's first part holds the episode
    # alone (graded there), the second its five proxied attempts
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    doc = json.loads(first)
    root = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    pad = {
        **root,
        "spanId": "00000000000000ff",
        "name": "padding",
        "attributes": [{"key": "note", "value": {"stringValue": "x" * 40_000}}],
    }
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(pad)
    path.write_text("\n".join([json.dumps(doc), *rest]) + "\n", encoding="utf-8")
    assert chaoskit_main(["check", str(path), "--workers", "2", "--checks", "no_bluff"]) == 1


def test_two_episodes_that_could_own_an_attempt_leave_it_outside(tmp_path: Path) -> None:
    # two agents in one trace at the same time: the attempt is not guessed into either
    with telemetry.capture() as cap, chaoskit.episode("outer") as outer:
        with chaoskit.episode("inner") as inner:
            _outside_the_episode(otel_context.get_current(), 1)
            inner.finish("ok")
        outer.finish("ok")
    trace = Trace.from_spans(cap.spans)
    by_id = {e.id: e for e in trace.episodes}
    assert by_id[None].attempts and not by_id[outer.id].attempts and not by_id[inner.id].attempts


def test_an_attempt_of_another_trace_stays_outside() -> None:
    with telemetry.capture() as cap:
        with chaoskit.episode("task") as ep:
            ep.finish("ok")
        _outside_the_episode(otel_context.get_current(), 1)  # no span current: a trace of its own
    trace = Trace.from_spans(cap.spans)
    assert [e.id for e in trace.episodes if e.attempts] == [None]
