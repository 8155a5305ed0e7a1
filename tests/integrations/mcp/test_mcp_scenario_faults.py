"""A scenario's ``mcp: faults:`` are checked when the scenario loads, by the package that registers each type."""

from __future__ import annotations

from pathlib import Path

import pytest

import chaoskit

SCENARIO = """\
name: mcp-protocol
task: "look up order 1"
agent: "python agent.py"
mcp:
  command: ["python", "server.py"]
  faults:
    - {{type: {kind}, tool: lookup, on_call: 1}}
success:
  checks: [no_bluff]
"""


def _write(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(kind=kind), encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["list_changed", "tool_disappears", "slow_initialize", "malformed_result"])
def test_every_protocol_fault_loads(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("mcp")
    scenario = chaoskit.load_scenario(_write(tmp_path, kind))
    assert scenario.mcp is not None and scenario.mcp.faults[0]["type"] == kind


def test_a_typo_fails_at_load_with_file_line_and_the_allowed_types(tmp_path: Path) -> None:
    path = _write(tmp_path, "tool_dissapears")
    with pytest.raises(chaoskit.ChaoskitError) as info:
        chaoskit.load_scenario(path)
    message = str(info.value)
    assert str(path) in message and "mcp.faults" in message and ":6:" in message
    assert "did you mean 'tool_disappears'" in message and "allowed:" in message


def test_a_core_fault_type_in_the_mcp_block_is_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(kind="http").replace("on_call: 1}", "on_call: 1, status: 99}"), encoding="utf-8")
    with pytest.raises(chaoskit.ChaoskitError, match="status"):
        chaoskit.load_scenario(path)
