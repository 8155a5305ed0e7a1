"""The LangChain/LangGraph integration tests at the lowest releases the declared ranges allow, in a venv of their own.

The minimums come from the integrations' ``_compat.py`` (the same ranges ``pyproject.toml`` declares): the venv
gets exactly those releases, so a range that does not hold fails here. The venv is made on first use and kept
outside the repository (``~/.cache/chaoskit-test/lowest-<hash>/``, one per set of pins and per checkout); only
the integration test files run in it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import chaoskit_langchain._compat as lc_compat
import chaoskit_langgraph._compat as lg_compat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CHAOSKIT_TEST_CACHE", Path.home() / ".cache" / "chaoskit-test"))

#: the integration tests: small enough to run again at the lowest releases
FILES = [
    "tests/integrations/test_framework_versions.py",
    "tests/integrations/langchain/test_langchain_callbacks.py",
    "tests/integrations/langchain/test_langchain_middleware.py",
    "tests/integrations/langchain/test_langchain_returned_errors.py",
    "tests/integrations/langchain/test_langchain_tool.py",
    "tests/integrations/langgraph/test_langgraph.py",
    "tests/integrations/langgraph/test_attach_changes_nothing.py",
    "tests/integrations/langgraph/test_command_results.py",
    "tests/integrations/langgraph/test_interrupt_calls.py",
    "tests/integrations/langgraph/test_tool_over_chaos.py",
    "tests/integrations/langchain/test_coroutine_only_tools.py",
]


def lowest_pins() -> dict[str, str]:
    """Each supported distribution at the minimum its integration declares."""
    return {s.distribution: ".".join(map(str, s.minimum)) for s in (*lc_compat.SUPPORTED, *lg_compat.SUPPORTED)}


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [f"{name}=={version}" for name, version in lowest_pins().items()]
    return [*pins, *project["dependencies"], "pytest>=8", "pytest-asyncio>=0.23"]


def _venv_dir(requirements: list[str]) -> Path:
    key = json.dumps([sys.version_info[:2], requirements, str(ROOT)])
    return CACHE / f"lowest-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    # two sessions at once (pytest-xdist, two checkouts) must not build the same venv together
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )


def lowest_venv() -> Path:
    """The venv's python, made on first use: the lowest releases, chaoskit's own dependencies, and this
    checkout installed editable (again whenever ``pyproject.toml`` changed)."""
    requirements = _requirements()
    venv = _venv_dir(requirements)
    python = venv / "bin" / "python"
    ready = venv / "READY"
    project = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    with _locked(venv.with_suffix(".lock")):
        if not ready.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
            done = _pip(python, *requirements)
            if done.returncode != 0:
                pytest.skip(
                    f"cannot install the lowest supported releases ({', '.join(requirements[:4])}): "
                    f"{done.stderr.strip()[-800:]}"
                )
            ready.write_text("")
        marker = venv / "chaoskit-pyproject.sha256"
        if not marker.exists() or marker.read_text() != project:
            done = _pip(python, "--no-deps", "-e", str(ROOT))
            assert done.returncode == 0, f"installing this checkout into {venv} failed:\n{done.stderr[-2000:]}"
            marker.write_text(project)
    return python


def test_the_lowest_declared_releases_are_exactly_what_the_venv_has() -> None:
    python = lowest_venv()
    names = list(lowest_pins())
    code = f"import importlib.metadata as m, json; print(json.dumps({{n: m.version(n) for n in {names!r}}}))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120, check=True)
    installed = json.loads(out.stdout)
    for name, minimum in lowest_pins().items():
        assert _trimmed(installed[name]) == _trimmed(minimum), (name, installed[name], minimum)


def _trimmed(version: str) -> tuple[int, ...]:
    # "1.6.0" and "1.6" are the same release
    release = list(lc_compat._release(version))
    while release and release[-1] == 0:
        release.pop()
    return tuple(release)


def test_the_integration_tests_pass_at_the_lowest_declared_releases() -> None:
    python = lowest_venv()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home()), "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [str(python), "-m", "pytest", *FILES, "-q", "-x", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, f"at {lowest_pins()}:\n{tail}"
    assert " passed" in proc.stdout and "failed" not in proc.stdout.splitlines()[-1], tail
