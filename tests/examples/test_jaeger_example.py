"""``examples/jaeger/``: the compose file pins Jaeger v2 and publishes its ports on loopback, the guide names the
same version, and the guide's own commands work: ``chaoskit run`` exports over OTLP/HTTP with only the
``OTEL_*`` variables it shows (into a stub OTLP receiver on 127.0.0.1 that stores the spans as Jaeger does),
and ``chaoskit check --from-jaeger`` grades them back through a stub of Jaeger's api_v3."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from _badinput import run_cli
from _jaeger_stub import JaegerStub, jaeger_stub

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "jaeger"
GUIDE = (EXAMPLE / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    """The guide's shell commands, continuation lines joined."""
    blocks = re.findall(r"```bash\n(.*?)```", GUIDE, flags=re.S)
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def _command(prefix: str, *, without: str = "\0") -> list[str]:
    (line,) = [c for c in _commands() if prefix in c and without not in c]
    return shlex.split(line)


def test_the_compose_file_pins_jaeger_v2_on_loopback() -> None:
    compose = yaml.safe_load((EXAMPLE / "docker-compose.yml").read_text(encoding="utf-8"))
    jaeger = compose["services"]["jaeger"]
    image, _, version = jaeger["image"].rpartition(":")
    assert image.endswith("jaegertracing/jaeger") and re.fullmatch(r"2\.\d+\.\d+", version), jaeger["image"]
    assert set(jaeger["ports"]) == {f"127.0.0.1:{p}:{p}" for p in (16686, 4317, 4318)}
    assert f"Jaeger {version}" in GUIDE and jaeger["image"] in GUIDE


def test_the_guides_docker_commands_use_the_compose_file() -> None:
    docker = [c for c in _commands() if c.startswith("docker")]
    assert docker == [
        "docker compose -f examples/jaeger/docker-compose.yml up -d",
        "docker compose -f examples/jaeger/docker-compose.yml down",
    ]


# --- the guide's run and check, against stubs ---------------------------------------------------------------


def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


class _OtlpReceiver(BaseHTTPRequestHandler):
    """OTLP/HTTP ``POST /v1/traces`` (protobuf), stored per trace as OTLP-JSON, the way Jaeger keeps it."""

    jaeger: JaegerStub

    def do_POST(self) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        doc = MessageToDict(request)
        by_trace: dict[str, dict[str, Any]] = {}
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in sp:
                            sp[key] = _hex(sp[key])
                    trace = by_trace.setdefault(sp["traceId"], {"resourceSpans": []})
                    trace["resourceSpans"].append(
                        {
                            "resource": rs.get("resource", {}),
                            "scopeSpans": [{"scope": ss.get("scope", {}), "spans": [sp]}],
                        }
                    )
        self.jaeger.traces.extend(by_trace.values())
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def jaeger() -> Iterator[JaegerStub]:
    yield from jaeger_stub()


@pytest.fixture
def otlp(jaeger: JaegerStub) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Receiver", (_OtlpReceiver,), {"jaeger": jaeger}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_guides_run_and_check_round_trip(jaeger: JaegerStub, otlp: str) -> None:
    run = _command("chaoskit run")
    env_assignments = [a for a in run if re.fullmatch(r"[A-Z_]+=.*", a)]
    argv = run[len(env_assignments) :]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    for assignment in env_assignments:
        key, _, value = assignment.partition("=")
        env[key] = value.replace("http://localhost:4318", otlp)
    assert set(env) >= {"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT"} and env["OTEL_SERVICE_NAME"] == "chaos-demo"
    assert argv[0] == "chaoskit"
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", *argv[1:], "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    scenarios = {p.stem for p in (ROOT / "examples" / "scenarios").glob("*.yaml")}
    assert len(jaeger.traces) == len(scenarios)  # one trace per episode, every span delivered

    check = _command("chaoskit check --from-jaeger", without="--write-back")
    assert check[:3] == ["chaoskit", "check", "--from-jaeger"] and check[3] == "http://localhost:16686"
    result = run_cli([*check[1:3], jaeger.url, *check[4:], "--json"])
    assert result.code in (0, 1), result.err
    episodes = json.loads(result.out)["episodes"]
    assert len(episodes) == len(scenarios)
    assert jaeger.queries[-1]["query.service_name"] == ["chaos-demo"]
    refund = next(e for e in episodes if e["name"] == "refund-not-repeated-after-500")
    assert refund["attempts"] == 4

    # the guide's --write-back: one chaoskit.evaluation span per episode reaches the OTLP receiver, in its trace
    back = _command("--write-back")
    (assignment,) = [a for a in back if re.fullmatch(r"[A-Z_]+=.*", a)]
    key, _, value = assignment.partition("=")
    assert (key, value) == ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    before = len(jaeger.traces)
    argv = back[1:]
    assert argv[:4] == ["chaoskit", "check", "--from-jaeger", "http://localhost:16686"]
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", *argv[1:3], jaeger.url, *argv[4:]],
        cwd=ROOT,
        env={**env, key: otlp},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == result.code, done.stderr
    assert f"wrote the grades of {len(episodes)} episode(s) back to Jaeger" in done.stderr
    written = [
        sp
        for doc in jaeger.traces[before:]
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
    ]
    assert sorted(sp["traceId"] for sp in written) == sorted(e["trace_id"] for e in episodes)
    assert all(sp["name"].startswith("chaoskit.evaluation ") and sp["events"] for sp in written)


@pytest.mark.parametrize("page", ["docs/backends.md", "examples/jaeger/README.md"])
def test_the_pages_links_lead_somewhere(page: str) -> None:
    path = ROOT / page
    targets = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    local = [t.split("#")[0] for t in targets if not t.startswith(("http://", "https://", "#"))]
    assert local, "the page links to nothing local"
    missing = [t for t in local if not (path.parent / t).exists()]
    assert not missing, f"{page} links to missing files: {missing}"
