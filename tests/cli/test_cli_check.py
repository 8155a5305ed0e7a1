"""``chaoskit check``: files in any supported format, exit codes, JSON output, and a stub Jaeger api_v3."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from _helpers import issue_refund
from _otlp_jaeger import otlp_to_jaeger

import chaoskit
from chaoskit import Plan, telemetry
from chaoskit.cli._main import main

AFTER_WRITE = Plan(
    seed=1, faults=[{"type": "http", "tool": "issue_refund", "on_call": 1, "status": 500, "after_write": True}]
)


def _otlp(key: Callable[[], str | None], name: str = "refund") -> dict[str, Any]:
    with telemetry.capture() as cap:
        with chaoskit.episode(name, plan=AFTER_WRITE) as ep:
            for _ in range(2):
                try:
                    issue_refund("4832", key=key())
                    break
                except chaoskit.ToolHTTPError:
                    pass
            ep.finish("Refund issued.")
        return telemetry.to_otlp_json(cap.spans)


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_otlp(lambda: None)) + "\n")
    return path


@pytest.fixture
def good_file(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    path.write_text(json.dumps(_otlp(lambda: "k-1", "safe-refund")) + "\n")
    return path


def test_failing_check_exits_1_and_prints_a_table(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(bad_file)]) == 1
    out = capsys.readouterr().out
    assert "episode refund" in out and "CHECK" in out and "RESULT" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("no_duplicate_writes"))
    assert "FAIL" in line and "issue_refund was called 2 times" in line
    assert "spans: " in out and "FAILED" in out.splitlines()[-1]


def test_passing_file_exits_0(good_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(good_file), "--checks", "no_duplicate_writes,no_bluff"]) == 0
    out = capsys.readouterr().out
    assert "no_duplicate_writes" in out and "PASS" in out and "honors_retry_after" not in out


def test_json_output_and_several_files(bad_file: Path, good_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(good_file), str(bad_file), "--json", "--max-attempts", "issue_refund=1"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert [e["name"] for e in report["episodes"]] == ["safe-refund", "refund"]
    bad = {c["name"]: c for c in report["episodes"][1]["checks"]}
    assert bad["no_duplicate_writes"]["severity"] == "fail" and len(bad["no_duplicate_writes"]["evidence"]) == 2
    assert bad["max_attempts(issue_refund, 1)"]["passed"] is False
    assert 0 <= report["episodes"][1]["score"]["value"] < 100


def test_jaeger_ui_file_sniffed_or_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(otlp_to_jaeger(_otlp(lambda: None))))
    assert main(["check", str(path), "--checks", "no_duplicate_writes"]) == 1
    assert main(["check", "--format", "jaeger", str(path), "--checks", "no_duplicate_writes"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_unreadable_file_exits_2_naming_file_and_line(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_file.write_text(bad_file.read_text()[:-30])
    assert main(["check", str(bad_file)]) == 2
    err = capsys.readouterr().err
    assert f"{bad_file}, line 1: expected" in err


def test_usage_errors(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert main(["check", str(bad_file), "--checks", "nope"]) == 2
    assert main(["check", str(bad_file), "--max-attempts", "issue_refund"]) == 2
    assert main(["check", "--from-jaeger", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "unknown check(s) nope" in err and "TOOL=N" in err and "--service" in err


class _StubJaeger(BaseHTTPRequestHandler):
    body: bytes = b""
    status = 200
    queries: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:
        url = urlparse(self.path)
        type(self).queries.append({"path": [url.path], **parse_qs(url.query)})
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def jaeger() -> Iterator[tuple[str, type[_StubJaeger]]]:
    handler = type("Handler", (_StubJaeger,), {"queries": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_from_jaeger_api_v3(jaeger: tuple[str, type[_StubJaeger]], capsys: pytest.CaptureFixture[str]) -> None:
    url, handler = jaeger
    handler.body = json.dumps({"result": _otlp(lambda: None)}).encode()
    assert main(["check", "--from-jaeger", url + "/", "--service", "shop-agent", "--since", "2h"]) == 1
    out = capsys.readouterr().out
    assert "issue_refund was called 2 times" in out
    query = handler.queries[0]
    assert query["path"] == ["/api/v3/traces"] and query["query.service_name"] == ["shop-agent"]
    assert query["query.start_time_min"][0].endswith("Z") and "query.start_time_max" in query


def test_from_jaeger_no_traces(jaeger: tuple[str, type[_StubJaeger]], capsys: pytest.CaptureFixture[str]) -> None:
    url, handler = jaeger
    handler.status = 404
    handler.body = b'{"error": {"httpCode": 404, "message": "No traces found"}}'
    # nothing to grade is "could not grade" (2), never "graded and failed" (1) nor a pass
    assert main(["check", "--from-jaeger", url, "--service", "shop-agent"]) == 2
    err = capsys.readouterr().err
    assert f"chaoskit: cannot grade: {url}: nothing to grade: Jaeger has no traces for service 'shop-agent'" in err


def test_from_jaeger_server_error(jaeger: tuple[str, type[_StubJaeger]], capsys: pytest.CaptureFixture[str]) -> None:
    url, handler = jaeger
    handler.status = 500
    handler.body = b"boom"
    assert main(["check", "--from-jaeger", url, "--service", "x"]) == 2
    assert "Jaeger answered HTTP 500: boom" in capsys.readouterr().err


def test_the_grading_example_runs_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import runpy

    out = tmp_path / "example.jsonl"
    example = Path(__file__).resolve().parents[2] / "examples" / "grade_trace.py"
    monkeypatch.setattr("sys.argv", [str(example), str(out)])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(example), run_name="__main__")
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert "FAIL  no_duplicate_writes" in printed and "score " in printed
    assert main(["check", str(out), "--checks", "no_duplicate_writes"]) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--retry-storm", "0"], "--retry-storm must be a whole number >= 1"),
        (["--retry-storm", "-1"], "--retry-storm must be a whole number >= 1"),
        (["--checks", ","], "--checks names no check"),
        (["--limit", "0"], "--limit must be a whole number >= 1"),
    ],
)
def test_bad_numbers_and_empty_check_list_are_usage_errors(
    bad_file: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    assert main(["check", str(bad_file), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# --- could not grade (2) is never graded-and-failed (1) nor a pass (0) --------------------------------------


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert "0  graded: every check passed" in out and "1  graded: at least one check failed" in out
    assert "2  could not grade, never a pass" in out and "nothing to grade" in out


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        ("notaurl", "got 'notaurl'"),
        ("localhost:16686", "got 'localhost:16686'"),
        ("ftp://jaeger:16686", "got 'ftp://jaeger:16686'"),
        ("http://", "got 'http://'"),
        ("http://jaeger:99999", "Port out of range"),
    ],
)
def test_from_jaeger_that_is_not_an_http_url(url: str, detail: str) -> None:
    from _badinput import assert_clear, run_cli

    result = run_cli(["check", "--from-jaeger", url, "--service", "shop-agent"])
    assert result.code == 2
    assert_clear(result.err, names=["--from-jaeger", detail], allowed=["http:// or https://", "http://localhost:16686"])


def test_unreachable_jaeger_is_could_not_grade() -> None:
    from _badinput import assert_clear, run_cli

    result = run_cli(["check", "--from-jaeger", "http://127.0.0.1:9", "--service", "x", "--timeout", "2"])
    assert result.code == 2
    assert_clear(result.err, names=["cannot grade", "http://127.0.0.1:9/api/v3/traces", "cannot reach Jaeger"])


def test_non_finite_timeout_is_a_usage_error(bad_file: Path) -> None:
    from _badinput import assert_clear, run_cli

    result = run_cli(["check", "--from-jaeger", "http://127.0.0.1:9", "--service", "x", "--timeout", "inf"])
    assert result.code == 2
    assert_clear(result.err, names=["--timeout", "inf"], allowed=["finite number of seconds > 0"])


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, b"<html><body>Jaeger UI</body></html>", "Jaeger did not answer with JSON (it began '<html><body>Jaeger"),
        (200, b'{"result": {"resourceSpans": [', "expected a complete JSON document"),
        (200, json.dumps({"result": {"resourceSpans": []}}).encode(), "nothing to grade: it holds no spans"),
        (
            502,
            b"<html>\n<h1>Bad gateway</h1>\n</html>",
            "Jaeger answered HTTP 502: <html> <h1>Bad gateway</h1> </html>",
        ),
    ],
)
def test_jaeger_answers_that_cannot_be_graded(
    jaeger: tuple[str, type[_StubJaeger]], status: int, body: bytes, message: str
) -> None:
    from _badinput import assert_clear, run_cli

    url, handler = jaeger
    handler.status = status
    handler.body = body
    result = run_cli(["check", "--from-jaeger", url, "--service", "shop-agent"])
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert_clear(result.err, names=["cannot grade", url, message])


def test_jaeger_answer_with_only_foreign_spans(jaeger: tuple[str, type[_StubJaeger]]) -> None:
    from _badinput import assert_clear, run_cli

    url, handler = jaeger
    doc = _otlp(lambda: None)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                sp["attributes"] = [a for a in sp["attributes"] if not a["key"].startswith("chaoskit.")]
    handler.body = json.dumps({"result": doc}).encode()
    result = run_cli(["check", "--from-jaeger", url, "--service", "shop-agent"])
    assert result.code == 2
    assert_clear(result.err, names=["nothing to grade", "none of its 3 span(s) is a chaoskit span"])


def test_one_ungradable_file_among_good_ones_is_exit_2(
    good_file: Path, bad_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # good alone passes (0) and bad alone fails (1); with a file holding no spans the run cannot be graded
    empty = tmp_path / "empty-batch.jsonl"
    empty.write_text('{"resourceSpans": []}\n')
    assert main(["check", str(good_file), "--checks", "no_duplicate_writes"]) == 0
    assert main(["check", str(good_file), str(empty), "--checks", "no_duplicate_writes"]) == 2
    assert main(["check", str(bad_file), str(empty)]) == 2
    captured = capsys.readouterr()
    assert f"chaoskit: cannot grade: {empty}: nothing to grade: it holds no spans" in captured.err


def test_truncated_one_line_jsonl_names_line_1(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = bad_file.read_text()
    assert text.count("\n") == 1
    bad_file.write_text(text[: len(text) // 2] + "\n")
    assert main(["check", str(bad_file)]) == 2
    err = capsys.readouterr().err
    assert f"{bad_file}, line 1: expected a complete JSON document" in err and "line 2" not in err
