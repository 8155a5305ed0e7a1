"""Replaying an episode read from a tracing backend: `chaoskit run --replay-from-jaeger URL --trace ID`,
`--replay-from-phoenix URL --project NAME`, and `chaoskit replay --from-jaeger/--from-phoenix`, through the
backends' own readers (chaoskit.grading), against stubs that answer as Jaeger's api_v3 and Phoenix's REST API do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _jaeger_stub import JaegerStub, jaeger_stub
from _phoenix_stub import PhoenixStub, otlp_to_phoenix

import chaoskit
from chaoskit.cli._main import main

SCENARIO = "examples/scenarios/refund-after-500.yaml"
AGENT = "examples.plain.agents:naive"
DATA = Path(__file__).resolve().parents[1] / "data" / "jaeger"


@pytest.fixture
def jaeger() -> Iterator[JaegerStub]:
    yield from jaeger_stub()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], str]:
    """A fault-free recording of the naive agent on the refund scenario: its file, OTLP documents and trace id."""
    folder = tmp_path_factory.mktemp("cassettes")
    assert main(["run", SCENARIO, "--agent", AGENT, "--record", str(folder), "-q"]) in (0, 1)
    file = folder / "refund-not-repeated-after-500.jsonl"
    docs = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    trace_id = chaoskit.Trace.load(file).episodes[0].trace_id
    assert trace_id
    return folder, docs, trace_id


def _facts(result: Any) -> list[tuple[Any, ...]]:
    return sorted((e.scenario, e.passed, tuple((c["name"], c["severity"]) for c in e.checks)) for e in result.episodes)


def _v3_answer(docs: list[dict[str, Any]]) -> tuple[int, dict[str, str], bytes]:
    # api_v3's GET /api/v3/traces/{id}: the trace's OTLP resource spans under "result" (tests/data/jaeger)
    body = {"result": {"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def test_run_replays_a_trace_read_from_jaeger_as_it_replays_the_file(
    recorded: tuple[Path, list[dict[str, Any]], str], jaeger: JaegerStub
) -> None:
    folder, docs, trace_id = recorded
    jaeger.answer = _v3_answer(docs)
    from_file = chaoskit.run_battery([SCENARIO], agent=AGENT, repeat=2, seed=5, replay=folder)
    args = ["run", SCENARIO, "--agent", AGENT, "--repeat", "2", "--seed", "5", "-q"]
    out = Path(folder.parent / "jaeger-results.json")
    assert main([*args, "--replay-from-jaeger", jaeger.url, "--trace", trace_id, "--json", str(out)]) == 1
    assert jaeger.queries[0]["path"] == [f"/api/v3/traces/{trace_id}"]
    got = json.loads(out.read_text())
    facts = sorted(
        (e["scenario"], e["passed"], tuple((c["name"], c["severity"]) for c in e["checks"])) for e in got["episodes"]
    )
    assert facts == _facts(from_file)
    # the 500 after the write came back on top of the recording: the naive agent's repeat is caught
    assert all(("no_duplicate_writes", "fail") in f[2] for f in facts)


def test_replay_command_reads_the_episode_from_jaeger_and_from_phoenix(
    recorded: tuple[Path, list[dict[str, Any]], str], jaeger: JaegerStub, capsys: pytest.CaptureFixture[str]
) -> None:
    _, docs, trace_id = recorded
    jaeger.answer = _v3_answer(docs)
    capsys.readouterr()
    assert main(["replay", "--from-jaeger", jaeger.url, "--trace", trace_id, "--agent", AGENT]) == 0
    assert "verdicts unchanged" in capsys.readouterr().out
    # the scenario's faults on the same recording: the naive agent repeats the refund, a changed verdict
    assert main(["replay", "--from-jaeger", jaeger.url, "--trace", trace_id, "--agent", AGENT,
                 "--scenario", SCENARIO]) == 1  # fmt: skip
    assert "no_duplicate_writes" in capsys.readouterr().out
    with PhoenixStub({"shop": otlp_to_phoenix(docs)}) as phoenix:
        assert main(["replay", "--from-phoenix", phoenix.url, "--project", "shop", "--agent", AGENT]) == 0
        assert main(["replay", "--from-phoenix", phoenix.url, "--project", "shop", "--trace", trace_id,
                     "--agent", AGENT, "--scenario", SCENARIO]) == 1  # fmt: skip
        capsys.readouterr()
        assert (
            main(["replay", "--from-phoenix", phoenix.url, "--project", "shop", "--trace", "1", "--agent", AGENT]) == 2
        )
        assert "holds no chaoskit episode in trace 00000000000000000000000000000001" in capsys.readouterr().err


def test_a_backend_trace_without_results_is_refused_naming_the_span(
    jaeger: JaegerStub, capsys: pytest.CaptureFixture[str]
) -> None:
    # recorded from a real Jaeger: `chaoskit run` exported it without tool results (tests/data/jaeger/README.md)
    body = (DATA / "v3-chaoskit-episode.json").read_bytes()
    jaeger.answer = (200, {"Content-Type": "application/json"}, body)
    trace_id = "29aebf160a089ae3bff8299ed7842313"
    assert main(["replay", "--from-jaeger", jaeger.url, "--trace", trace_id, "--agent", AGENT]) == 2
    err = capsys.readouterr().err
    assert f"{jaeger.url} (trace {trace_id}): span " in err and "(lookup_order call 1): the span holds no result" in err
    jaeger.answer = None  # the stub's own answer for an unknown path: Jaeger's 404
    assert main(["replay", "--from-jaeger", jaeger.url, "--trace", "ab" * 16, "--agent", AGENT]) == 2
    assert "chaoskit: error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replay-from-jaeger", "http://127.0.0.1:9"], "needs --trace ID"),
        (["--replay-from-phoenix", "http://127.0.0.1:9"], "needs --project NAME"),
        (["--trace", "ab"], "--trace is for --replay-from-jaeger"),
        (["--replay-from-jaeger", "http://127.0.0.1:9", "--trace", "not-hex"], "up to 32 hex digits"),
        (  # inf was an OverflowError traceback; --timeout of chaoskit check already refused it
            ["--replay-from-jaeger", "http://127.0.0.1:9", "--trace", "ab", "--backend-timeout", "inf"],
            "--backend-timeout must be a number of seconds > 0, got inf",
        ),
        (["--on-miss", "record"], "--on-miss record adds to the cassettes of --replay DIR"),
    ],
)
def test_backend_options_that_do_not_go_together(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", SCENARIO, "--agent", AGENT, "-q", *args]) == 2
    assert message in capsys.readouterr().err
