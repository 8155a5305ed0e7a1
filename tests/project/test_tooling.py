"""The project's own hygiene as tests, so the README's one test command (and CI) also checks format, lint and types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "command", [("ruff", "format", "--check", "."), ("ruff", "check", ".")], ids=["ruff-format", "ruff-check"]
)
def test_ruff_is_clean(command: tuple[str, ...]) -> None:
    proc = _run(*command)
    assert proc.returncode == 0, f"`{' '.join(command)}` found problems:\n{proc.stdout}{proc.stderr}"


def test_mypy_strict_is_clean_over_the_core_and_the_integrations() -> None:
    # [tool.mypy] in pyproject.toml names the files: chaoskit/ and both integration packages, strict
    proc = _run("mypy")
    assert proc.returncode == 0, f"mypy found problems:\n{proc.stdout}{proc.stderr}"
