"""The battery runner with a scenario whose tools are a REST API (``http:``): the example out-of-process agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from _badinput import run_cli

from chaoskit import PlanError
from chaoskit.scenarios import load_scenario

pytest.importorskip("uvicorn", reason="the http extra is not installed (pip install 'chaoskit[http]')")
pytest.importorskip("httpx", reason="the example agent needs httpx")

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = ROOT / "examples/http/scenarios/refund-over-http.yaml"
CAREFUL = "python examples/http/agent.py"
NAIVE = "python examples/http/agent.py --naive"


def run(tmp_path: Path, *args: str, marker: str = "") -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``chaoskit run ARGS --json``; ``marker`` goes into the environment every process of the run inherits."""
    out = tmp_path / "results.json"
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    env["CHAOSKIT_TEST_MARKER"] = marker
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", *args, "--json", str(out), "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, (json.loads(out.read_text(encoding="utf-8")) if out.exists() else {})


def marked(marker: str) -> list[int]:
    """The live processes whose environment holds ``CHAOSKIT_TEST_MARKER=marker`` (read from /proc)."""
    needle = f"CHAOSKIT_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_gone(marker: str) -> list[int]:
    """The marked processes still alive after a generous wait (a bound for slow machines, not a timing check)."""
    deadline = time.monotonic() + 15
    while (alive := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def scenario_with(tmp_path: Path, old: str, new: str, name: str = "variant.yaml") -> Path:
    text = SCENARIO.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")


@needs_proc
def test_the_careful_agent_passes_and_the_naive_one_writes_twice(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    traces = tmp_path / "traces.jsonl"
    done, results = run(
        tmp_path, str(SCENARIO), "--agents", f"{CAREFUL},{NAIVE}", "--traces", str(traces), marker=marker
    )
    assert results, done.stderr
    by_agent = {e["agent"]: e for e in results["episodes"]}
    assert set(by_agent) == {CAREFUL, NAIVE}
    careful, naive = by_agent[CAREFUL], by_agent[NAIVE]
    assert careful["passed"], careful["checks"]
    assert not naive["passed"]
    failed = {c["name"] for c in naive["checks"] if not c["passed"]}
    assert "no_duplicate_writes" in failed
    assert "no_duplicate_writes" not in {c["name"] for c in careful["checks"] if not c["passed"]}
    for episode in (careful, naive):  # the proxy's spans are the episode's: the lookup, the faulted write, the retry
        timeline = episode["attempts"]["timeline"]
        assert [(t["tool"], t["outcome"]) for t in timeline] == [
            ("GET /orders/{id}", "ok"),
            ("create_refund", "error"),
            ("create_refund", "ok"),
        ]
        assert timeline[1]["fault"] == "http" and timeline[1]["executed"]  # after_write: written, then 503
    assert wait_gone(marker) == []  # neither the API, nor the proxy, nor the agent outlives the run
    # each episode's attempts are in its own trace (the runner's run_episode span): the runner hands the proxy it
    # starts the episode's TRACEPARENT, so the two agents' calls never share one
    spans = [
        span
        for line in traces.read_text(encoding="utf-8").splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    roots = {s["traceId"] for s in spans if s["name"].startswith("run_episode ")}
    attempts = [s["traceId"] for s in spans if s["name"].startswith("execute_tool ")]
    assert len(roots) == 2 and len(attempts) == 6 and set(attempts) == roots
    assert sorted(attempts.count(t) for t in roots) == [3, 3]


def test_the_example_battery_meets_its_expectations(tmp_path: Path) -> None:
    done, results = run(tmp_path, "examples/http")
    assert results, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    expectations = results["verdict"]["expectations"]
    assert (expectations["met"], expectations["unexpected"]) == (2, [])


@needs_proc
def test_an_api_started_on_a_port_is_stopped_with_everything_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    api = tmp_path / "api.py"
    api.write_text(
        textwrap.dedent(
            f"""
            import os, runpy, subprocess, sys
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open({str(pids)!r}, "a") as fh:
                fh.write(f"{{os.getpid()}} {{child.pid}}\\n")
            sys.argv = ["api.py", "--port", sys.argv[1]]
            runpy.run_path({str(ROOT / "examples/http/api.py")!r}, run_name="__main__")
            """
        ),
        encoding="utf-8",
    )
    scenario = scenario_with(
        tmp_path,
        'command: [python, examples/http/api.py, --port, "0", --ready-file, "{ready_file}"]',
        f'command: [python, {api}, "{{port}}"]',
    )
    marker = uuid.uuid4().hex
    done, results = run(tmp_path, str(scenario), "--repeat", "2", marker=marker)
    assert results, done.stderr
    assert [e["passed"] for e in results["episodes"]] == [True, True]
    started = [int(p) for line in pids.read_text().splitlines() for p in line.split()]
    assert len(started) == 4  # one API (and its child) per episode
    assert wait_gone(marker) == []
    assert [p for p in started if alive(p)] == []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_a_running_api_by_url_and_routes_marked_irreversible(tmp_path: Path) -> None:
    ready = tmp_path / "api.url"
    api = subprocess.Popen(
        [sys.executable, str(ROOT / "examples/http/api.py"), "--port", "0", "--ready-file", str(ready)],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and api.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        url = ready.read_text(encoding="utf-8").strip()
        scenario = scenario_with(
            tmp_path,
            'command: [python, examples/http/api.py, --port, "0", --ready-file, "{ready_file}"]',
            f'url: {url}\n  irreversible: ["GET /orders/{{id}}"]',
        )
        traces = tmp_path / "spans.jsonl"
        done, results = run(tmp_path, str(scenario), "--traces", str(traces))
    finally:
        api.terminate()
        api.wait()
    assert results, done.stderr
    (episode,) = results["episodes"]
    assert episode["passed"], episode["checks"]
    irreversible = {}
    for line in traces.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in span["attributes"]}
                    if "chaoskit.tool.irreversible" in attrs:
                        irreversible[span["name"]] = attrs["chaoskit.tool.irreversible"].get("boolValue")
    assert irreversible == {"execute_tool GET /orders/{id}": True, "execute_tool create_refund": True}


def test_a_fault_naming_no_route_is_an_error_at_its_line(tmp_path: Path) -> None:
    scenario = scenario_with(tmp_path, "tool: create_refund ", "tool: frobnicate ")
    done, _ = run(tmp_path, str(scenario))
    assert done.returncode == 2
    assert f"{scenario}:13: faults[0].tool: 'frobnicate' is no HTTP route" in done.stderr
    assert "create_refund, get_order, list_refunds" in done.stderr


def test_an_api_that_exits_before_it_listens_is_named_with_its_error(tmp_path: Path) -> None:
    scenario = scenario_with(tmp_path, '"{ready_file}"]', '"{ready_file}", --bogus]')
    done, _ = run(tmp_path, str(scenario))
    assert done.returncode == 2
    assert "the API `python examples/http/api.py" in done.stderr
    assert "exited with status 2 before it listened" in done.stderr
    assert "unrecognized arguments: --bogus" in done.stderr


@pytest.mark.parametrize(
    ("body", "line", "field", "says"),
    [
        ("  url: ftp://shop\n", 4, "http.url", "http:// or https://"),
        ("  command: [python, api.py]\n", 4, "http.command", "put {port} in the command"),
        ("  url: http://a\n  command: [api, '{port}']\n", 3, "http", "either as command"),
        ("  {}\n", 3, "http", "either as command"),
        ("  url: http://a\n  comand: [api]\n", 3, "http", "unknown key 'comand' (did you mean 'command'?)"),
        ("  url: http://a\n  openapi: no/such.yaml\n", 5, "http.openapi", "no such file 'no/such.yaml'"),
        ("  url: http://a\n  irreversible: ['FETCH /x']\n", 5, "http.irreversible", "neither a route"),
        ("  url: http://a\n  irreversible: [send_it]\n", 3, "http", "no openapi file is given"),
        (
            "  url: http://a\n  openapi: examples/http/openapi.yaml\n  irreversible: [create_refnud]\n",
            3,
            "http",
            "operationIds of examples/http/openapi.yaml: create_refund, get_order, list_refunds",
        ),
    ],
)
def test_bad_http_values_name_file_line_and_field(
    monkeypatch: pytest.MonkeyPatch, body: str, line: int, field: str, says: str
) -> None:
    monkeypatch.chdir(ROOT)
    with pytest.raises(PlanError) as info:
        load_scenario(f"name: x\ntask: Refund A-1001\nhttp:\n{body}", source="bad.yaml")
    assert (info.value.source, info.value.line, info.value.field) == ("bad.yaml", line, field)
    assert says in str(info.value)


def test_the_example_scenario_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    scenario = load_scenario(SCENARIO)
    assert scenario.http is not None and scenario.http.openapi == "examples/http/openapi.yaml"
    assert scenario.http.command is not None and "{ready_file}" in scenario.http.command


def test_a_python_agent_on_a_proxied_scenario_is_a_clear_error(tmp_path: Path) -> None:
    # the proxy reaches only an agent in its own process: an in-process agent would run without any fault
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: proxied\ntask: refund 4832\nhttp: {url: 'http://127.0.0.1:9'}\n"
        "faults: [{type: http, tool: 'POST /refunds', status: 500}]\n",
        encoding="utf-8",
    )
    r = run_cli(["run", str(scenario), "--agent", "examples.plain.agents:careful", "-q"])
    assert r.code == 2 and "needs a command-line agent" in (r.out + r.err), r.out + r.err
