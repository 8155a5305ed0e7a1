"""The out-of-process example agent of examples/http, through the HTTP proxy, graded by ``chaoskit check``."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from chaoskit_http import serve  # noqa: E402

from chaoskit import Trace  # noqa: E402
from chaoskit.cli import main as cli_main  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "http"


def _load_api() -> Any:
    spec = importlib.util.spec_from_file_location("example_http_api", EXAMPLE / "api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ShopApi()


@pytest.fixture
def shop() -> Iterator[tuple[Any, str]]:
    """The example API on 127.0.0.1 and its URL."""
    api = _load_api()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(api, lifespan="off", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _agent(url: str, *flags: str) -> str:
    env = {**os.environ, "CHAOSKIT_HTTP_URL": url}
    argv = [sys.executable, str(EXAMPLE / "agent.py"), *flags, "Refund order A-1001 in full."]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True).stdout


@pytest.mark.parametrize(("flags", "refunds", "verdict"), [((), 1, 0), (("--naive",), 2, 1)])
def test_the_example_agent_through_the_proxy(
    shop: tuple[Any, str], tmp_path: Path, flags: tuple[str, ...], refunds: int, verdict: int
) -> None:
    api, up = shop
    traces = tmp_path / "spans.jsonl"
    with serve(EXAMPLE / "plan.yaml", upstream=up, openapi=EXAMPLE / "openapi.yaml", traces=traces) as url:
        out = _agent(url, *flags)
    assert "refunded 42.50 on order A-1001" in out
    assert len(api.refunds) == refunds  # the naive agent's retry without a key refunded twice
    tools = [a.tool for a in Trace.load(traces).attempts]
    assert tools == ["GET /orders/{id}", "create_refund", "create_refund"]
    # the careful agent keeps its key and waits as asked; the naive one repeats the write
    assert cli_main(["check", str(traces), "--checks", "no_duplicate_writes,honors_retry_after"]) == verdict
