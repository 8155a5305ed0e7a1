"""Nobody gets in through the HTTP proxy, credentials stay out of spans and logs, and it stops cleanly."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import chaoskit_http  # noqa: E402
from chaoskit_http import serve  # noqa: E402
from test_http_proxy import Upstream, plan, running_upstream, wait_for  # noqa: E402

import chaoskit  # noqa: E402
from chaoskit import ChaosWarning, telemetry  # noqa: E402
from chaoskit.cli import main as cli_main  # noqa: E402


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    """The upstream app of test_http_proxy and its URL."""
    with running_upstream() as running:
        yield running


SECRETS = ("sk-SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4", "SECRET-5")


def test_it_binds_loopback_unless_told_otherwise(upstream: tuple[Upstream, str]) -> None:
    _, up = upstream
    server = chaoskit_http.ProxyServer(plan(), upstream=up)
    try:
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        server.stop()
    with pytest.warns(ChaosWarning, match="listens on 0.0.0.0, not only on this machine"):
        server = chaoskit_http.ProxyServer(plan(), upstream=up, listen="0.0.0.0:0")
    server.stop()


def test_the_command_defaults_to_loopback() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    chaoskit_http.add_parser(parser.add_subparsers())
    args = parser.parse_args(["http-proxy", "--plan", "p.yaml", "--upstream", "http://127.0.0.1:1"])
    assert args.listen.startswith("127.0.0.1:")


def test_it_is_no_open_proxy(upstream: tuple[Upstream, str]) -> None:
    app, up = upstream
    with serve(plan(), upstream=up) as url:
        # absolute-form (what an HTTP client sends to a forward proxy): refused, even towards the upstream
        with httpx.Client(proxy=url) as as_proxy:
            assert as_proxy.get("http://evil.example/steal").status_code == 400
            assert as_proxy.get(f"{up}/orders/1").status_code == 400
        # a Host header naming another host still reaches the one upstream, with the upstream's Host
        r = httpx.get(f"{url}/echo", headers={"Host": "evil.example"})
        sent = dict(r.json()["headers"])
        assert sent["host"] == up.removeprefix("http://")
        assert _raw(url, b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n").startswith(
            b"HTTP/1.1 4"
        )
        assert _raw(url, b"GET //evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert [r["path"] for r in app.requests] == ["/echo"]


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        return s.recv(4096)


def test_credentials_pass_through_and_are_redacted_in_spans_and_logs(
    upstream: tuple[Upstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, up = upstream
    traces = tmp_path / "spans.jsonl"
    headers = {"Authorization": f"Bearer {SECRETS[0]}", "Cookie": f"session={SECRETS[1]}", "X-Api-Key": SECRETS[2]}
    caplog.set_level(logging.DEBUG, logger="chaoskit.http")
    with telemetry.capture() as cap, serve(plan(), upstream=up, traces=traces) as url:
        r = httpx.post(f"{url}/echo", params={"api_key": SECRETS[3]}, json={"password": SECRETS[4]}, headers=headers)
        wait_for(lambda: len(cap.attempt_spans()) == 1)
    sent = dict(r.json()["headers"])
    assert sent["authorization"] == headers["Authorization"] and sent["cookie"] == headers["Cookie"]
    assert sent["x-api-key"] == SECRETS[2]
    written = traces.read_text()
    logged = caplog.text
    assert "/echo" in written and "authorization" in logged and "[REDACTED]" in logged
    for secret in SECRETS:
        assert secret not in written, f"{secret} reached the spans file"
        assert secret not in logged, f"{secret} reached the log"
    args = json.loads(str(dict(cap.attempt_spans()[0].attributes or {})["chaoskit.args"]))
    assert args["query"] == {"api_key": "[REDACTED]"} and args["body"] == {"password": "[REDACTED]"}


def _command_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a ``python -m chaoskit`` child that has the ``http-proxy`` command: the entry point
    (pyproject.toml's ``chaoskit.commands``) from a stand-in distribution on PYTHONPATH when not installed."""
    dist = tmp_path / "entry-points" / "chaoskit_http_cmd-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: chaoskit-http-cmd\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[chaoskit.commands]\nhttp-proxy = chaoskit_http:add_parser\n")
    path = os.pathsep.join(p for p in (str(dist.parent), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


class _Proxy:
    """``chaoskit http-proxy`` in a child process, its stderr collected line by line."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        argv = [sys.executable, "-m", "chaoskit", "http-proxy", *args]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self.url_ready = threading.Event()
        self.url = ""
        threading.Thread(target=self._read, daemon=True).start()
        if not self.url_ready.wait(30) or not self.url:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the proxy did not start: {self.lines}")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on " in line and not self.url:
                self.url = line.split("listening on ", 1)[1].split(",", 1)[0]
                self.url_ready.set()
        self.url_ready.set()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_promptly_with_every_span_written(
    upstream: tuple[Upstream, str], tmp_path: Path, sig: signal.Signals
) -> None:
    _, up = upstream
    plan_file, traces = tmp_path / "plan.yaml", tmp_path / "spans.jsonl"
    plan_file.write_text("seed: 1\nfaults:\n  - {type: timeout, tool: GET /slow, after_s: 600}\n")
    ready = tmp_path / "proxy.url"
    args = ["--plan", str(plan_file), "--listen", "127.0.0.1:0", "--upstream", up, "--traces", str(traces)]
    proxy = _Proxy([*args, "--log-level", "debug", "--ready-file", str(ready)], _command_env(tmp_path))
    try:
        assert ready.read_text().strip() == proxy.url
        assert httpx.get(f"{proxy.url}/orders/1").status_code == 200
        assert httpx.post(f"{proxy.url}/refunds", json={"order": 1}).status_code == 201
        held: dict[str, Any] = {}
        client = threading.Thread(target=lambda: held.update(r=httpx.get(f"{proxy.url}/slow", timeout=60)))
        client.start()
        wait_for(lambda: any("GET /slow: GET /slow call 1, fault timeout" in line for line in proxy.lines))
        proxy.proc.send_signal(sig)
        assert proxy.proc.wait(timeout=15) == 0, "".join(proxy.lines)
        client.join(15)
    finally:
        if proxy.proc.poll() is None:
            proxy.proc.kill()
            proxy.proc.wait()
    assert held["r"].status_code == 504  # the held call was answered, not dropped
    trace = chaoskit.Trace.load(traces)
    assert sorted(a.tool for a in trace.attempts) == ["GET /orders/1", "GET /slow", "POST /refunds"]
    assert cli_main(["check", str(traces), "--checks", "no_duplicate_writes"]) == 0
    assert "stopped" in "".join(proxy.lines)


def _run(tmp_path: Path, *args: str, python: str = "") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", f"{python}\nimport sys\nfrom chaoskit.cli import main\nsys.exit(main())", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=_command_env(tmp_path))


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['httptools'] = None; sys.modules['uvicorn'] = None"
    out = _run(tmp_path, "http-proxy", "--plan", "p.yaml", "--upstream", "http://127.0.0.1:1", python=hide)
    assert out.returncode == 2 and "pip install 'chaoskit[http]'" in out.stderr, out.stderr


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("seed: 1\nfaults:\n  - {type: http, tool: refund}\n")
    good = tmp_path / "good.yaml"
    good.write_text("seed: 1\nfaults: []\n")
    up = ["--upstream", "http://127.0.0.1:9"]
    cases = {
        ("--plan", str(plan_file), *up): f"{plan_file}: tool: tool 'refund' names no HTTP route",
        ("--plan", str(tmp_path / "none.yaml"), *up): "none.yaml",
        ("--plan", str(plan_file), "--upstream", "ftp://x"): "--upstream 'ftp://x'",
        ("--plan", str(good), *up, "--listen", "here"): "--listen 'here': expected HOST:PORT",
        (
            "--plan",
            str(good),
            *up,
            "--openapi",
            str(good),
        ): f"--openapi {good}: not an OpenAPI file: expected a mapping with 'openapi' and 'paths'",
    }
    for args, message in cases.items():
        out = _run(tmp_path / str(len(message)), "http-proxy", *args)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)


def test_it_is_a_chaoskit_command(tmp_path: Path) -> None:
    out = _run(tmp_path, "http-proxy", "--help")
    assert out.returncode == 0 and "--upstream URL" in out.stdout and "127.0.0.1" in out.stdout
