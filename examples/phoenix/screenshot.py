"""Screenshot a chaos run in Arize Phoenix's trace view with headless Chromium: ``docs/img/phoenix-trace.png``,
and its grades as Phoenix's span annotations: ``docs/img/phoenix-annotations.png``.

    python -m examples.phoenix.screenshot [--out PATH] [--annotations-out PATH] [--scenario FILE] [--agent REF]

As root on Linux, with ``chromium`` installed. It creates (or reuses) Phoenix's cached venv, then, inside a
network namespace with only loopback, starts Phoenix on free ports, runs the scenario with chaoskit exporting
over OTLP/HTTP (set through ``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_RESOURCE_ATTRIBUTES`` only), reads the
episode back with ``fetch_phoenix``, and opens Phoenix's ``/redirects/spans/<span id>`` route for the first
attempt that an injected fault failed: the trace view with the episode, its attempts and that fault selected,
marked as an error. It then writes the grades back (``chaoskit check --from-phoenix URL --project P
--write-back``: one span annotation per check on the episode's span) and opens that span with its Annotations
card expanded as a table (``_cdp.py``, Chromium driven over the DevTools protocol by Phoenix's venv, which holds
``websockets``). Phoenix is stopped by its PID at the end. Takes about a minute once the venv is cached.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chaoskit.traces._phoenix import fetch_phoenix
from chaoskit.traces._records import TraceReadError
from chaoskit.traces._trace import Trace
from examples.phoenix.local import (
    Phoenix,
    PhoenixUnavailable,
    ensure_phoenix_venv,
    loopback_up,
    namespace_problem,
    run_in_namespace,
)

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "chaoskit-demo"
MAX_BYTES = 300_000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("headless Chromium is needed: apt-get install chromium")


def _run_scenario(px: Phoenix, scenario: Path, agent: str, workdir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHAOSKIT_"))}
    env |= {
        "OTEL_EXPORTER_OTLP_ENDPOINT": px.url,
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
    }
    argv = [sys.executable, "-m", "chaoskit", "run", str(scenario), "--agent", agent, "--quiet"]
    argv += ["--traces", str(workdir / "local.jsonl")]
    run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    if run.returncode not in (0, 1):
        raise SystemExit(f"chaoskit run failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")


def _read_back(px: Phoenix, deadline_s: float = 60.0) -> Trace:
    started = time.monotonic()
    while True:
        try:
            trace = fetch_phoenix(px.url, PROJECT, timeout=10)
            if trace.episodes and trace.episodes[0].id:
                return trace
        except TraceReadError:
            if time.monotonic() - started > deadline_s:
                raise
        time.sleep(0.5)


def _write_back(px: Phoenix) -> str:
    """``chaoskit check --from-phoenix --write-back``: the grades as span annotations; its summary line."""
    argv = [sys.executable, "-m", "chaoskit", "check", "--from-phoenix", px.url, "--project", PROJECT, "--write-back"]
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    if run.returncode not in (0, 1) or "annotation" not in run.stderr:
        raise SystemExit(f"chaoskit check --write-back failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return run.stderr.strip()


def _annotations_shot(px: Phoenix, span_id: str, out: Path, phoenix_python: Path) -> None:
    """The episode's span in Phoenix's trace view, its Annotations card open as a table."""
    target = f"{px.url}/redirects/spans/{span_id}"
    argv = [str(phoenix_python), str(Path(__file__).with_name("_cdp.py")), target, str(out)]
    argv += ["--wait-text", "invoke_agent", "--click", "Annotations", "--click", "Table", "--chromium", _chromium()]
    argv += ["--then-text", "no_duplicate_writes"]  # the table loaded (the list cuts the names short)
    shot = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    if shot.returncode != 0 or not out.exists():
        raise SystemExit(f"the annotations screenshot failed ({shot.returncode}):\n{shot.stderr[-3000:]}")
    print(f"{out}: {out.stat().st_size} bytes, {target}")


def _inside(out: Path, scenario: Path, agent: str, phoenix_python: Path, annotations_out: Path) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that Phoenix is stopped on the way out
    loopback_up()
    with tempfile.TemporaryDirectory(prefix="chaoskit-phoenix-") as tmp, Phoenix(phoenix_python, Path(tmp)) as px:
        _run_scenario(px, scenario, agent, Path(tmp))
        trace = _read_back(px)
        faulted = [a for a in trace.attempts if a.fault_type and a.error_type]
        if not faulted:
            raise SystemExit(f"no attempt of {scenario.name} failed from an injected fault: nothing to show")
        target = f"{px.url}/redirects/spans/{faulted[0].span_id}"
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        # no calls home (the namespace has only loopback), and a fresh profile
        argv += ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
        argv += [f"--user-data-dir={Path(tmp) / 'chromium-profile'}"]
        argv += ["--window-size=1600,1000", "--virtual-time-budget=15000", f"--screenshot={out}", target]
        shot = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
        if shot.returncode != 0 or not out.exists():
            raise SystemExit(f"chromium failed ({shot.returncode}):\n{shot.stderr[-3000:]}")
        print(f"{out}: {out.stat().st_size} bytes, {target}")
        print(_write_back(px))
        _annotations_shot(px, str(trace.episodes[0].span_id), annotations_out, phoenix_python)


def main(argv: list[str] | None = None) -> int:
    """Take the screenshot (re-running this module inside a network namespace); 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "phoenix-trace.png")
    annotations = ROOT / "docs" / "img" / "phoenix-annotations.png"
    parser.add_argument("--annotations-out", type=Path, default=annotations)
    parser.add_argument("--scenario", type=Path, default=ROOT / "examples" / "scenarios" / "refund-after-500.yaml")
    parser.add_argument("--agent", default="examples.plain.agents:naive")
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)  # Phoenix's python, in the namespace
    args = parser.parse_args(argv)
    out, scenario, annotations_out = args.out.resolve(), args.scenario.resolve(), args.annotations_out.resolve()
    if args.inside is not None:
        _inside(out, scenario, args.agent, args.inside, annotations_out)
        return 0
    problem = namespace_problem()
    if problem is not None:
        raise SystemExit(f"Phoenix runs inside a network namespace with only loopback: {problem}")
    try:
        python = ensure_phoenix_venv()
    except PhoenixUnavailable as exc:
        raise SystemExit(str(exc)) from None
    child = [sys.executable, "-m", "examples.phoenix.screenshot", "--inside", str(python), "--out", str(out)]
    child += ["--scenario", str(scenario), "--agent", args.agent, "--annotations-out", str(annotations_out)]
    code, output = run_in_namespace(child, timeout=300, cwd=ROOT)
    print(output.strip())
    for png in (out, annotations_out) if code == 0 else ():
        if png.stat().st_size > MAX_BYTES:
            print(f"warning: {png} is {png.stat().st_size} bytes, more than {MAX_BYTES}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
