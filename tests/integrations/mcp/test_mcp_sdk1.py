"""chaoskit_mcp on mcp 1.x: the MCP test files again, in a virtualenv where `pip install chaoskit[mcp,langgraph]
langchain-mcp-adapters` resolved mcp to the 1.x the adapters require (the dev venv has mcp 2.x).

The virtualenv is made on first use and cached outside the repo (~/.cache/chaoskit-test/venv-mcp1-<key>, the key
naming this checkout and its pyproject.toml); it holds this checkout editable, so the sub-run tests the code here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _mcp_real import CACHE, _install

ROOT = Path(__file__).resolve().parents[3]
ADAPTERS = "langchain-mcp-adapters==0.3.2"
#: the test files run again on mcp 1.x (small: the sub-run's time adds to the suite's)
FILES = [
    "tests/integrations/mcp/test_mcp_adapters.py",
    "tests/integrations/mcp/test_mcp_real_servers.py",
    "tests/integrations/mcp/test_mcp_episodes.py::test_a_session_per_call_counts_one_two_three",
    # the example agent and server, as `chaoskit run` starts them (over stdio and Streamable HTTP)
    "tests/integrations/mcp/test_mcp_runner.py::test_the_example_mcp_agent_runs_through_the_proxy",
]
SUBRUN_TIMEOUT_S = 900


def _venv() -> Path:
    key = hashlib.sha256(
        b"\0".join(
            [str(ROOT).encode(), (ROOT / "pyproject.toml").read_bytes(), ADAPTERS.encode(), sys.version.encode()]
        )
    ).hexdigest()[:12]
    target = CACHE / f"venv-mcp1-{key}"
    py = target / "bin" / "python"
    _install(
        f"a virtualenv with chaoskit[mcp,langgraph] and {ADAPTERS}",
        target,
        [
            [sys.executable, "-m", "venv", str(target)],
            [
                str(py),
                "-m",
                "pip",
                "install",
                "-q",
                "-e",
                f"{ROOT}[mcp,langgraph]",
                ADAPTERS,
                "pytest>=8",
                "pytest-asyncio>=0.23",
            ],
        ],
        cwd=ROOT,
    )
    return py


def test_the_mcp_tests_pass_on_mcp_1x() -> None:
    py = _venv()
    version = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; print(m.version('mcp'), m.version('langchain-mcp-adapters'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    # the extra's range admits the mcp the adapters require: the resolver chose a 1.x beside them
    assert version[0].startswith("1.") and version[1] == ADAPTERS.split("==")[1], version
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(py.parent), env.get("PATH", "")])
    done = subprocess.run(
        [str(py), "-m", "pytest", *FILES, "-q", "-p", "no:cacheprovider", "-rs", "--durations=5"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBRUN_TIMEOUT_S,
    )
    tail = "\n".join(done.stdout.splitlines()[-25:])
    assert done.returncode == 0, f"the MCP tests failed on mcp {version[0]}:\n{tail}\n{done.stderr[-2000:]}"
    assert " passed" in tail and " skipped" not in tail, tail  # nothing skipped: the adapters ran too


def test_the_supported_range_admits_the_adapters_mcp() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")
    from chaoskit_mcp import _compat

    _compat.check_version("1.30.0")  # what langchain-mcp-adapters 0.3.2 resolves to
    _compat.check_version("2.3.0")
    with pytest.raises(ImportError, match=r"mcp>=1\.24,<3"):
        _compat.check_version("1.23.0")
    assert '"mcp>=1.24,<3"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
