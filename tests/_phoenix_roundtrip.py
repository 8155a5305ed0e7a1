"""Test helper, run inside a network namespace: Phoenix up, chaoskit runs exporting to it, spans read back.

``python tests/_phoenix_roundtrip.py --phoenix-python P --workdir D --out OUT.json`` (as a child of
``unshare -n``): brings up loopback, starts Phoenix on free ports, and for each OTLP protocol (``http/protobuf``
and ``grpc``) runs ``chaoskit run`` over a few example scenarios in a child process whose exporter is set by
the standard ``OTEL_*`` variables alone (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_PROTOCOL``, the
project through ``OTEL_RESOURCE_ATTRIBUTES``). It then reads the project back with ``fetch_phoenix``, grades
every episode with the checks and parameters the runner used, and writes both sides to OUT.json for the test
to compare. Phoenix is stopped by its PID whatever happens (context manager, atexit, SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaoskit.grading._score import score  # noqa: E402
from chaoskit.grading.checks import DEFAULT_CHECKS, run_checks  # noqa: E402
from chaoskit.scenarios._scenario import load_battery  # noqa: E402
from chaoskit.traces._phoenix import fetch_phoenix  # noqa: E402
from chaoskit.traces._records import TraceReadError  # noqa: E402
from chaoskit.traces._trace import Trace  # noqa: E402
from examples.phoenix.local import Phoenix, loopback_up  # noqa: E402

SCENARIOS = [
    ROOT / "examples" / "scenarios" / f"{name}.yaml"
    for name in ("refund-after-500", "refund-rate-limited", "status-timeouts", "status-injection")
]
AGENTS = "examples.plain.agents:careful,examples.plain.agents:naive"
PROTOCOLS = {"http/protobuf": "chaoskit-http", "grpc": "chaoskit-grpc"}


def _spec(path: Path) -> tuple[list[str], dict[str, Any]]:
    """The check names and parameters the runner grades this scenario with (as tests/grading/test_one_grading_path)."""
    (sc,) = load_battery([path])
    s = sc.success
    specs = s.check_specs()
    names = [n for n, _ in specs] if specs is not None else list(DEFAULT_CHECKS)
    if "no_duplicate_writes" not in names:
        names.append("no_duplicate_writes")
    limits = {k: v for k, v in (("max_attempts", s.max_attempts), ("min_attempts", s.min_attempts)) if v}
    names = [n for n in ("max_attempts", "min_attempts") if n in limits] + names
    return names, {"required_tools": s.required_tools, **limits}


def _grade(trace: Trace, episode_id: str, path: Path) -> dict[str, Any]:
    names, params = _spec(path)
    one = Trace([trace.episode(episode_id)])
    results = run_checks(one, names, **params)
    return {
        "checks": [r.to_dict() for r in results],
        "score": score(one, checks=results, required_tools=params["required_tools"]).value,
        "attempts": len(one.episodes[0].attempts),
        "passed": all(r.passed for r in results),
    }


def _export_run(proto: str, endpoint: str, project: str, out: Path, *, service: str | None = None) -> dict[str, Any]:
    """``chaoskit run`` in a child process that exports over ``proto`` (as ``service`` when given): its results
    file, parsed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=proto,
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",
    )
    if service is not None:
        env["OTEL_SERVICE_NAME"] = service
    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "chaoskit", "run", *map(str, SCENARIOS), "--agents", AGENTS, "--repeat", "2"]
    argv += ["--json", str(out / "results.json"), "--traces", str(out / "local.jsonl"), "--quiet"]
    run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    if run.returncode not in (0, 1) or not (out / "results.json").exists():
        raise RuntimeError(f"chaoskit run failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    results["stderr"] = run.stderr
    return results


def _read_back(url: str, project: str, want: set[str], deadline_s: float = 60.0) -> tuple[Trace, float]:
    """Phoenix's trace once it holds every wanted episode, complete; Phoenix inserts spans in batches."""
    started = time.monotonic()
    last = "nothing read yet"
    while time.monotonic() - started < deadline_s:
        try:
            trace = fetch_phoenix(url, project, timeout=10)
            have = {e.id for e in trace.episodes if e.id}
            if want <= have:
                return trace, time.monotonic() - started
            last = f"{len(want & have)} of {len(want)} episodes"
        except TraceReadError as exc:
            last = str(exc)  # not all spans inserted yet: an episode misses attempts, or no project yet
        time.sleep(0.5)
    raise TimeoutError(f"Phoenix did not hold every episode of {project!r} within {deadline_s:g} s: {last}")


def _fault_spans(url: str, project: str) -> list[dict[str, Any]]:
    """The spans with an injected error fault as Phoenix gives them (raw): what its trace view shows."""
    query = f"{url}/v1/projects/{project}/spans/otlpv1?limit=1000"
    with urllib.request.urlopen(query, timeout=10) as resp:
        data = json.loads(resp.read())["data"]
    out = []
    for span in data:
        attrs = {kv["key"]: kv["value"] for kv in span.get("attributes") or ()}
        if "error.type" in attrs and (attrs.get("chaoskit.fault.injected") or {}).get("bool_value"):
            out.append(
                {
                    "name": span["name"],
                    "status_code": (span.get("status") or {}).get("code"),
                    "status_message": (span.get("status") or {}).get("message"),
                    "fault_type": (attrs.get("chaoskit.fault.type") or {}).get("string_value"),
                    "events": [e.get("name") for e in span.get("events") or ()],
                    # what Phoenix made of gen_ai.tool.call.arguments: the tool input its span view shows
                    "tool_parameters": {
                        k.removeprefix("tool.parameters."): next((x for x in v.values() if x is not None), None)
                        for k, v in attrs.items()
                        if k.startswith("tool.parameters.")
                    },
                    "span_kind": (attrs.get("openinference.span.kind") or {}).get("string_value"),
                    "arguments": (attrs.get("gen_ai.tool.call.arguments") or {}).get("string_value"),
                }
            )
    return out


def _annotations(url: str, project: str) -> list[dict[str, Any]]:
    """The span annotations chaoskit wrote back, as Phoenix lists them (its evaluation columns show them)."""
    query = f"{url}/v1/projects/{project}/span_annotations?identifier=chaoskit&limit=1000"
    with urllib.request.urlopen(query, timeout=10) as resp:
        data: list[dict[str, Any]] = json.loads(resp.read())["data"]
    return data


def _check_cli(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``chaoskit check ARGS --json`` (with ``env`` added to the environment): its exit status, its stderr and,
    per episode id, the checks, score and attempts."""
    argv = [sys.executable, "-m", "chaoskit", "check", *args, "--json"]
    run_env = None if env is None else {**os.environ, **env}
    run = subprocess.run(argv, cwd=ROOT, env=run_env, capture_output=True, text=True, timeout=120, check=False)
    if run.returncode not in (0, 1):
        return {"exit": run.returncode, "stderr": run.stderr[-2000:], "episodes": {}}
    episodes = {e["id"]: [e["checks"], e["score"]["value"], e["attempts"]] for e in json.loads(run.stdout)["episodes"]}
    return {"exit": run.returncode, "stderr": run.stderr[-2000:], "episodes": episodes}


def _protocol(px: Phoenix, proto: str, project: str, workdir: Path, by_name: dict[str, Path]) -> dict[str, Any]:
    endpoint = px.url if proto.startswith("http") else px.grpc_endpoint
    started = time.monotonic()
    results = _export_run(proto, endpoint, project, workdir / project)
    episodes = results["episodes"]
    trace, waited = _read_back(px.url, project, {e["episode_id"] for e in episodes})
    local = Trace.load(workdir / project / "local.jsonl")
    return {
        "project": project,
        "seconds": round(time.monotonic() - started, 1),
        "waited_s": round(waited, 1),
        "episodes_in_phoenix": len(trace.episodes),
        "stderr": results["stderr"][-2000:],
        "faults_seen": _fault_spans(px.url, project),
        "cli_phoenix": _check_cli("--from-phoenix", px.url, "--project", project, "--limit", "1000"),
        "cli_file": _check_cli(str(workdir / project / "local.jsonl")),
        "write_back": _check_cli("--from-phoenix", px.url, "--project", project, "--limit", "1000", "--write-back"),
        "annotations": _annotations(px.url, project),
        "episodes": [
            {
                "scenario": e["scenario"],
                "agent": e["agent"],
                "episode_id": e["episode_id"],
                "runner": {k: e[k] for k in ("checks", "score", "passed", "attempts")},
                "phoenix": _grade(trace, e["episode_id"], by_name[e["scenario"]]),
                "local": _grade(local, e["episode_id"], by_name[e["scenario"]]),
            }
            for e in episodes
        ],
    }


def _replay_cli(*args: str) -> dict[str, Any]:
    """``chaoskit replay ARGS --json``: its exit status, its stderr and its comparison."""
    argv = [sys.executable, "-m", "chaoskit", "replay", *args, "--json"]
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    out = json.loads(run.stdout) if run.returncode in (0, 1) and run.stdout.strip() else None
    return {"exit": run.returncode, "stderr": run.stderr[-2000:], "comparison": out}


def _replay(px: Phoenix, workdir: Path) -> dict[str, Any]:
    """An episode recorded with ``--record`` while exporting to Phoenix, read back from Phoenix and replayed
    (``chaoskit replay --from-phoenix``) under its scenario's faults, beside the replay of the local cassette."""
    project, scenario = "chaoskit-replay", str(SCENARIOS[0])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=px.url, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
               OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}")  # fmt: skip
    folder = workdir / "cassettes"
    argv = [sys.executable, "-m", "chaoskit", "run", scenario, "--agent", "examples.plain.agents:naive"]
    run = subprocess.run([*argv, "--record", str(folder), "--quiet"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=False)  # fmt: skip
    if run.returncode not in (0, 1):
        raise RuntimeError(f"chaoskit run --record failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    (cassette,) = folder.iterdir()
    recorded = Trace.load(cassette).episodes[0]
    _read_back(px.url, project, {str(recorded.id)})
    common = ["--agent", "examples.plain.agents:naive", "--scenario", scenario]
    return {
        "from_phoenix": _replay_cli("--from-phoenix", px.url, "--project", project, *common),
        "from_file": _replay_cli(str(cassette), *common),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--phoenix-python", required=True, type=Path)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that Phoenix is stopped on the way out
    loopback_up()
    by_name = {load_battery([p])[0].name: p for p in SCENARIOS}
    report: dict[str, Any] = {"protocols": {}}
    with Phoenix(args.phoenix_python, args.workdir / "phoenix", pid_file=args.workdir / "phoenix.pid") as px:
        report["startup_s"] = round(px.startup_s, 1)
        for proto, project in PROTOCOLS.items():
            try:
                report["protocols"][proto] = _protocol(px, proto, project, args.workdir, by_name)
            except Exception:
                report["protocols"][proto] = {"error": traceback.format_exc(limit=3)}
        try:
            report["replay"] = _replay(px, args.workdir)
        except Exception:
            report["replay"] = {"error": traceback.format_exc(limit=3)}
    report["timing"] = {"phoenix_startup_s": report["startup_s"]} | {
        p: side.get("seconds") for p, side in report["protocols"].items()
    }
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
