"""Run Arize Phoenix locally and safely: its own cached venv, a network namespace with only loopback, free ports.

Phoenix is a test-time backend, never a dependency of chaoskit: its pins clash with ours, so it lives in a venv
of its own, ``~/.cache/chaoskit-test/phoenix-venv-<version>`` (``CHAOSKIT_PHOENIX_VENV`` overrides the path),
created on first use. The venv is used only once its ``.complete`` marker exists, written after a successful
install, so an interrupted install is redone, not trusted. ``python -m examples.phoenix.local`` creates it.

Phoenix's gRPC server binds every interface whatever ``PHOENIX_HOST`` says, so Phoenix and the process that
exports to it run inside a network namespace of their own that has only loopback (``unshare -n``, as root):
:func:`namespace_problem` says whether one can be made here, :func:`run_in_namespace` runs a Python script in
one, and :class:`Phoenix` (used inside it) starts ``phoenix serve`` on 127.0.0.1 with free HTTP and gRPC
ports (never 4317), waits for ``/healthz`` and always stops it by its process group id.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

__all__ = [
    "PHOENIX_VERSION",
    "Phoenix",
    "PhoenixUnavailable",
    "ensure_phoenix_venv",
    "free_port",
    "loopback_up",
    "namespace_problem",
    "run_in_namespace",
    "venv_dir",
]

#: the version the facts in docs/phoenix.md were checked on; change it and the venv is made anew
PHOENIX_VERSION = "20.26.1"
_PACKAGES = [f"arize-phoenix=={PHOENIX_VERSION}"]
_MARKER = ".complete"


class PhoenixUnavailable(Exception):
    """Phoenix cannot be installed or run here; the message says why (for a test's skip reason)."""


# --- the venv, outside the namespace --------------------------------------------------------------------


def venv_dir() -> Path:
    """The cached venv's folder: ``$CHAOSKIT_PHOENIX_VENV`` or ``~/.cache/chaoskit-test/phoenix-venv-<version>``."""
    override = os.environ.get("CHAOSKIT_PHOENIX_VENV")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chaoskit-test" / f"phoenix-venv-{PHOENIX_VERSION}"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _registry_problem(python: Path) -> str | None:
    """None when pip can resolve Phoenix from its index; else why not, for the skip message."""
    probe = subprocess.run(
        [str(python), "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed", "-q", _PACKAGES[0]],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if probe.returncode == 0:
        return None
    tail = " | ".join((probe.stderr or probe.stdout).strip().splitlines()[-2:])
    return f"the package registry is unreachable (pip cannot get {_PACKAGES[0]}): {tail}"


def ensure_phoenix_venv(*, log: bool = True) -> Path:
    """The cached venv's python with Phoenix installed, creating the venv first (minutes, once).

    Raises PhoenixUnavailable when the package registry cannot be reached; any other install failure raises
    RuntimeError with pip's output, a real problem that a test must not skip over.
    """
    venv = venv_dir()
    if (venv / _MARKER).exists() and _python(venv).exists():
        return _python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second process waits here, then finds the marker
        if (venv / _MARKER).exists() and _python(venv).exists():
            return _python(venv)
        shutil.rmtree(venv, ignore_errors=True)
        started = time.monotonic()
        if log:
            print(f"[phoenix] creating {venv} (arize-phoenix {PHOENIX_VERSION}); the first time takes minutes")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        python = _python(venv)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *_PACKAGES],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if install.returncode != 0:
            problem = _registry_problem(python)
            shutil.rmtree(venv, ignore_errors=True)
            if problem is not None:
                raise PhoenixUnavailable(problem)
            raise RuntimeError(f"pip install {' '.join(_PACKAGES)} failed:\n{install.stdout}\n{install.stderr}")
        took = time.monotonic() - started
        (venv / _MARKER).write_text(f"{' '.join(_PACKAGES)}\ninstalled in {took:.0f} s\n")
        if log:
            print(f"[phoenix] venv ready in {took:.0f} s")
        return python


# --- the namespace --------------------------------------------------------------------------------------


def namespace_problem() -> str | None:
    """None when a network namespace with only loopback can be made here; else why not."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "making a network namespace (unshare -n) needs root"
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (util-linux / iproute2)"
    probe = subprocess.run(
        ["unshare", "-n", "--", "ip", "link", "set", "lo", "up"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"unshare -n failed: {(probe.stderr or probe.stdout).strip() or probe.returncode}"
    return None


def loopback_up() -> None:
    """Bring up loopback in this (new) network namespace: it starts down."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def run_in_namespace(
    argv: list[str], *, timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int, str]:
    """Run ``argv`` (a command) in a new network namespace; its exit status and output (stdout and stderr).

    The command runs in a process group of its own: on timeout it gets SIGTERM (to stop Phoenix by its PID),
    then SIGKILL, and TimeoutError is raised with the output so far.
    """
    proc = subprocess.Popen(
        ["unshare", "-n", "--", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc.pid, proc)
        out, _ = proc.communicate()
        raise TimeoutError(f"{' '.join(argv)} did not finish within {timeout:g} s:\n{out}") from None
    return proc.returncode, out


def _stop_group(pgid: int, proc: subprocess.Popen[str] | subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM to the process group ``pgid``, SIGKILL after ``grace`` seconds if ``proc`` is still alive."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        proc.wait()


# --- Phoenix itself, inside the namespace ---------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (never OTLP's 4317 or 4318)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in (4317, 4318):
            return port


class Phoenix:
    """``phoenix serve`` on 127.0.0.1 with free ports and a working dir of its own; a context manager.

    ``url`` is its UI and REST API (and OTLP/HTTP at ``url + "/v1/traces"``), ``grpc_endpoint`` its OTLP/gRPC
    endpoint. On exit, or at interpreter exit if the block is never left, its process group gets SIGTERM, then
    SIGKILL. ``pid_file``, when given, receives its PID as soon as it starts, for a last-resort kill.
    """

    def __init__(self, python: Path, workdir: Path, *, pid_file: Path | None = None, ready_timeout: float = 120.0):
        self.python = python
        self.workdir = workdir
        self.pid_file = pid_file
        self.ready_timeout = ready_timeout
        self.port = free_port()
        self.grpc_port = free_port()
        while self.grpc_port == self.port:
            self.grpc_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.grpc_endpoint = f"http://127.0.0.1:{self.grpc_port}"
        self.log_path = workdir / "phoenix.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Phoenix:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": str(self.workdir),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        # Phoenix must not export its own spans anywhere, nor pick up the exporter settings meant for chaoskit
        for key in [k for k in env if k.startswith("OTEL_")]:
            del env[key]
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(self.python), "-m", "phoenix.server.main", "serve"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        atexit.register(self.stop)
        if self.pid_file is not None:
            self.pid_file.write_text(str(self.proc.pid))
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_ready(self, started: float) -> None:
        assert self.proc is not None
        while time.monotonic() - started < self.ready_timeout:
            if self.proc.poll() is not None:
                raise PhoenixUnavailable(f"phoenix serve exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            time.sleep(0.25)
        raise PhoenixUnavailable(f"Phoenix did not answer /healthz within {self.ready_timeout:g} s:\n{self.log()}")

    def log(self, tail: int = 4000) -> str:
        """The end of Phoenix's own output (for failure messages)."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-tail:]
        return ""

    def stop(self) -> None:
        """Stop Phoenix by its process group id: SIGTERM, then SIGKILL after 10 s. Safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _stop_group(proc.pid, proc)
        elif proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # any child it left behind

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


if __name__ == "__main__":
    print(ensure_phoenix_venv())
