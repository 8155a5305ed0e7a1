"""Run Jaeger v2 locally for tests: built once from the Go module proxy, cached, on 127.0.0.1 and free ports.

Jaeger is a test-time backend, never a dependency of chaoskit (users run Jaeger however they like). The binary
is built on first use from the Go module ``github.com/jaegertracing/jaeger`` at :data:`JAEGER_MODULE_VERSION`
(whose ``cmd/jaeger`` is the v2 line) into ``~/.cache/chaoskit-test/jaeger-<version>/jaeger``
(``CHAOSKIT_JAEGER_BIN`` overrides the path), with the Go module and build caches kept beside it
(``~/.cache/chaoskit-test/go``), so a second run, or CI on the same machine, reuses them.

``go install github.com/jaegertracing/jaeger/cmd/jaeger@v1.75.0`` does not work: the module's go.mod has a
``replace`` directive, which ``go install pkg@version`` refuses. So the module is downloaded
(``go mod download``) and ``go build ./cmd/jaeger`` runs inside it, with the module's own go.sum.

:class:`Jaeger` starts the binary with ``examples/jaeger/config.yaml`` (in-memory storage, OTLP receivers and
the query service only) and moves every listener to a free port on 127.0.0.1 with ``--set``; it waits for
``/api/services`` and always stops Jaeger by its process group id. Tests also run it inside a network namespace
that has only loopback, with the helpers of :mod:`examples.phoenix.local`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from examples.phoenix.local import _stop_group, free_port

__all__ = [
    "CONFIG",
    "JAEGER_MODULE",
    "JAEGER_MODULE_VERSION",
    "Jaeger",
    "JaegerUnavailable",
    "binary_path",
    "ensure_jaeger_binary",
    "set_keys",
]

JAEGER_MODULE = "github.com/jaegertracing/jaeger"
#: the pinned module version (its ``cmd/jaeger`` is Jaeger v2); change it and the binary is built anew
JAEGER_MODULE_VERSION = "v1.75.0"
#: the config the tests start Jaeger with (its ports are placeholders, replaced by :func:`set_keys`)
CONFIG = Path(__file__).resolve().parent / "config.yaml"
_BUILD_TIMEOUT = 1800.0


class JaegerUnavailable(Exception):
    """Jaeger cannot be built or run here (Go missing, the module proxy refusing); the message says why."""


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chaoskit-test"


def binary_path() -> Path:
    """Where the built binary is kept: ``$CHAOSKIT_JAEGER_BIN`` or ``~/.cache/chaoskit-test/jaeger-<v>/jaeger``."""
    override = os.environ.get("CHAOSKIT_JAEGER_BIN")
    if override:
        return Path(override)
    return _cache() / f"jaeger-{JAEGER_MODULE_VERSION.lstrip('v')}" / "jaeger"


def _go_env() -> dict[str, str]:
    go = _cache() / "go"
    env = {**os.environ, "GOMODCACHE": str(go / "mod"), "GOCACHE": str(go / "cache"), "GOFLAGS": "-buildvcs=false"}
    env.pop("GOBIN", None)
    return env


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def ensure_jaeger_binary(*, log: bool = True) -> Path:
    """The cached Jaeger binary, built first when missing (several minutes on 2 cores, once).

    Raises JaegerUnavailable when Go is not installed or the module proxy does not give the module; a failing
    build of a downloaded module raises RuntimeError with Go's output, a real problem a test must not skip.
    """
    binary = binary_path()
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise JaegerUnavailable("Go is not installed (the test builds Jaeger v2 from the Go module proxy)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with open(binary.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second process waits here, then finds the binary
        if binary.exists():
            return binary
        env = _go_env()
        started = time.monotonic()
        if log:
            print(f"[jaeger] building {JAEGER_MODULE}/cmd/jaeger@{JAEGER_MODULE_VERSION} into {binary}; minutes")
        got = subprocess.run(
            [go, "mod", "download", "-json", f"{JAEGER_MODULE}@{JAEGER_MODULE_VERSION}"],
            capture_output=True,
            text=True,
            env=env,
            cwd=binary.parent,
            timeout=_BUILD_TIMEOUT,
            check=False,
        )
        info = json.loads(got.stdout) if got.stdout.strip().startswith("{") else {}
        if got.returncode != 0 or not info.get("Dir"):
            reason = info.get("Error") or _tail(got.stderr or got.stdout)
            raise JaegerUnavailable(
                f"the Go module proxy did not give {JAEGER_MODULE}@{JAEGER_MODULE_VERSION}: {reason}"
            )
        partial = binary.with_name(binary.name + ".partial")
        build = subprocess.run(
            [go, "build", "-o", str(partial), "./cmd/jaeger"],
            capture_output=True,
            text=True,
            env=env,
            cwd=info["Dir"],
            timeout=_BUILD_TIMEOUT,
            check=False,
        )
        if build.returncode != 0:
            text = build.stderr or build.stdout
            if "proxy.golang.org" in text or "dial tcp" in text or "no such host" in text:
                raise JaegerUnavailable(f"the Go module proxy refused a dependency of Jaeger: {_tail(text)}")
            raise RuntimeError(f"go build ./cmd/jaeger failed:\n{text[-6000:]}")
        partial.replace(binary)  # only a complete build is ever found at the binary's path
        took = time.monotonic() - started
        (binary.parent / "BUILT").write_text(f"{JAEGER_MODULE}@{JAEGER_MODULE_VERSION} built in {took:.0f} s\n")
        if log:
            print(f"[jaeger] built in {took:.0f} s")
        return binary


def set_keys(otlp_grpc: int, otlp_http: int, query_http: int, query_grpc: int) -> list[str]:
    """The ``--set`` options (checked on v1.75.0) that put every listener of :data:`CONFIG` on 127.0.0.1."""
    keys = {
        "receivers.otlp.protocols.grpc.endpoint": otlp_grpc,
        "receivers.otlp.protocols.http.endpoint": otlp_http,
        "extensions.jaeger_query.http.endpoint": query_http,
        "extensions.jaeger_query.grpc.endpoint": query_grpc,
    }
    return [arg for key, port in keys.items() for arg in ("--set", f"{key}=127.0.0.1:{port}")]


class Jaeger:
    """Jaeger v2 on 127.0.0.1 with free ports and in-memory storage; a context manager.

    ``url`` is its query service (the UI's JSON API ``/api/traces`` and api_v3 ``/api/v3/traces``),
    ``otlp_http`` and ``otlp_grpc`` its OTLP endpoints (``http://127.0.0.1:PORT``). On exit, or at interpreter
    exit if the block is never left, its process group gets SIGTERM, then SIGKILL. ``pid_file``, when given,
    receives its PID as soon as it starts, for a last-resort kill.
    """

    def __init__(self, binary: Path, workdir: Path, *, pid_file: Path | None = None, ready_timeout: float = 60.0):
        self.binary = binary
        self.workdir = workdir
        self.pid_file = pid_file
        self.ready_timeout = ready_timeout
        ports: list[int] = []
        while len(ports) < 4:
            port = free_port()
            if port not in ports:
                ports.append(port)
        self.ports = ports
        self.url = f"http://127.0.0.1:{ports[2]}"
        self.otlp_grpc = f"http://127.0.0.1:{ports[0]}"
        self.otlp_http = f"http://127.0.0.1:{ports[1]}"
        self.log_path = workdir / "jaeger.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0

    def argv(self) -> list[str]:
        """The command line Jaeger is started with."""
        return [str(self.binary), "--config", str(CONFIG), *set_keys(*self.ports)]

    def __enter__(self) -> Jaeger:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Jaeger must not pick up the exporter settings meant for chaoskit
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
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
                raise JaegerUnavailable(f"jaeger exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/api/services", timeout=2) as resp:
                    if resp.status == 200:
                        return
            time.sleep(0.25)
        raise RuntimeError(f"Jaeger did not answer /api/services within {self.ready_timeout:g} s:\n{self.log()}")

    def log(self, tail: int = 4000) -> str:
        """The end of Jaeger's own output (for failure messages)."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-tail:]
        return ""

    def stop(self) -> None:
        """Stop Jaeger by its process group id: SIGTERM, then SIGKILL after 10 s. Safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _stop_group(proc.pid, proc)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


if __name__ == "__main__":
    print(ensure_jaeger_binary())
