"""``chaoskit check``'s sources: trace files, ``--from-jaeger`` or ``--from-phoenix``, one at a time; the options
that belong to each, usage errors naming the flag, and ``--from-phoenix`` handing its arguments to
``chaoskit.traces._phoenix.PhoenixPages`` (replaced here by a fake module: the real reader has its own tests)."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _badinput import assert_clear, run_cli
from _helpers import issue_refund, run_spans

import chaoskit
from chaoskit import Plan, Trace, TraceReadError, telemetry
from chaoskit.traces._phoenix import check_phoenix_url
from chaoskit.traces._records import EpisodeRecord

PLAN = Plan(seed=1, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}])


def _careless() -> str:
    for _ in range(2):
        try:
            issue_refund("4832")
            break
        except chaoskit.ToolHTTPError:
            pass
    return "Refund issued."


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    _, spans = run_spans(PLAN, _careless, name="refund")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(telemetry.to_otlp_json(spans)))
    return path


class _Pages:
    """What the real PhoenixPages hands out: the episodes, then "nothing to grade" when there were none."""

    def __init__(self, trace: Trace) -> None:
        self.trace, self.spans = trace, 3

    def __iter__(self) -> Iterator[EpisodeRecord]:
        yield from self.trace.episodes
        if not self.trace.episodes:
            raise TraceReadError("nothing to grade: it holds 3 spans, none of them chaoskit's", source="phoenix")


class _FakePhoenix:
    def __init__(self, result: Trace | Exception) -> None:
        self.result = result
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> _Pages:
        kwargs.pop("progress")  # a callable of the CLI's, shown on a terminal only
        self.calls.append((args, kwargs))
        if isinstance(self.result, Exception):
            raise self.result
        return _Pages(self.result)


def _fake_phoenix(monkeypatch: pytest.MonkeyPatch, result: Trace | Exception) -> _FakePhoenix:
    fake = _FakePhoenix(result)
    module = types.ModuleType("chaoskit.traces._phoenix")
    module.PhoenixPages = fake  # type: ignore[attr-defined]
    module.check_phoenix_url = check_phoenix_url  # type: ignore[attr-defined]  # the real one: the URL check stays
    monkeypatch.setitem(sys.modules, "chaoskit.traces._phoenix", module)
    return fake


# --- --from-phoenix --------------------------------------------------------------------------------------------


def test_from_phoenix_grades_the_trace_the_reader_returns(monkeypatch: pytest.MonkeyPatch, trace_file: Path) -> None:
    fake = _fake_phoenix(monkeypatch, Trace.load(trace_file))
    url = "http://127.0.0.1:6006"
    result = run_cli(["check", "--from-phoenix", url, "--project", "chaos", "--since", "2d", "--limit", "7", "--json"])
    assert result.code == 1, result.err
    (episode,) = json.loads(result.out)["episodes"]
    assert episode["source"] == url and episode["attempts"] == 2
    assert [c["name"] for c in episode["checks"] if not c["passed"]] == ["no_duplicate_writes"]
    ((args, kwargs),) = fake.calls
    assert args == (url, "chaos")
    assert kwargs == {"since": timedelta(days=2), "limit": 7, "timeout": 30.0}


def test_from_phoenix_defaults(monkeypatch: pytest.MonkeyPatch, trace_file: Path) -> None:
    fake = _fake_phoenix(monkeypatch, Trace.load(trace_file))
    assert run_cli(["check", "--from-phoenix", "https://phoenix.example", "--project", "p", "--timeout", "5"]).code == 1
    # no --limit: no limit (read page by page), not Jaeger's 100 traces
    assert fake.calls[0][1] == {"since": timedelta(hours=1), "limit": None, "timeout": 5.0}


def test_from_phoenix_with_nothing_to_grade(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_phoenix(monkeypatch, Trace([]))
    result = run_cli(["check", "--from-phoenix", "http://127.0.0.1:6006", "--project", "chaos"])
    assert result.code == 2 and result.out == ""
    assert_clear(result.err, names=["cannot grade", "nothing to grade", "Phoenix project 'chaos'", "last 1h"])


def test_from_phoenix_that_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    error = TraceReadError("unknown project 'chaos'; known: default, agents", source="http://127.0.0.1:6006")
    _fake_phoenix(monkeypatch, error)
    result = run_cli(["check", "--from-phoenix", "http://127.0.0.1:6006", "--project", "chaos"])
    assert result.code == 2
    assert_clear(result.err, names=["chaoskit: cannot grade:", "unknown project 'chaos'", "known: default, agents"])


# --- usage errors, each naming its flag ---------------------------------------------------------------------

J = ["--from-jaeger", "http://localhost:16686", "--service", "s"]
P = ["--from-phoenix", "http://localhost:6006", "--project", "p"]


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        ([*J, *P], ["--from-jaeger and --from-phoenix cannot be used together"]),
        ([*J, "FILE"], ["--from-jaeger", "do not also give trace files"]),
        ([*P, "FILE"], ["--from-phoenix", "do not also give trace files"]),
        (["--from-phoenix", "http://localhost:6006"], ["--from-phoenix needs --project NAME"]),
        (["--from-jaeger", "http://localhost:16686"], ["--from-jaeger needs --service NAME"]),
        (["FILE", "--project", "p"], ["--project is for --from-phoenix"]),
        (["FILE", "--service", "s"], ["--service is for --from-jaeger"]),
        ([*P, "--service", "s"], ["--service is for --from-jaeger"]),
        ([*J, "--project", "p"], ["--project is for --from-phoenix"]),
        (["FILE", "--since", "1h"], ["--since is for --from-jaeger or --from-phoenix"]),
        (["FILE", "--limit", "5"], ["--limit is for --from-jaeger or --from-phoenix"]),
        (["FILE", "--timeout", "5"], ["--timeout is for --from-jaeger or --from-phoenix"]),
        ([*P, "--format", "otlp"], ["--format is for trace files"]),
        (["--from-phoenix", "localhost:6006", "--project", "p"], ["--from-phoenix", "http://localhost:6006"]),
        (["--from-phoenix", "http://phoenix:99999", "--project", "p"], ["--from-phoenix", "Port out of range"]),
        ([*P, "--since", "soon"], ["--since expects a duration such as 30m, 1h or 2d", "'soon'"]),
        ([*J, "--since", "0h"], ["--since must be longer than 0"]),
        ([*J, "--since", "99999999999w"], ["--since is too long"]),
        ([*P, "--limit", "0"], ["--limit must be a whole number >= 1"]),
        ([*P, "--timeout", "nan"], ["--timeout must be a finite number of seconds > 0"]),
        ([], ["give trace files, or --from-jaeger URL --service NAME, or --from-phoenix URL --project NAME"]),
    ],
)
def test_usage_errors_name_the_flag(argv: list[str], names: list[str], trace_file: Path) -> None:
    result = run_cli(["check", *(str(trace_file) if a == "FILE" else a for a in argv)])
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("chaoskit: error: ") and len(result.err.strip().splitlines()) == 1
    assert_clear(result.err, names=names)


def test_help_lists_both_backends() -> None:
    result = run_cli(["check", "--help"])
    assert result.code == 0
    out = result.out
    for flag in ("--from-jaeger", "--service", "--from-phoenix", "--project", "--since", "--limit", "--timeout"):
        assert flag in out
