"""Fault types other packages register (entry-point group ``chaoskit.faults``): the MCP protocol faults.

``chaoskit validate`` accepts them, a typo is rejected with the list of types, bad parameters name their field,
a plan naming one without the ``mcp`` extra says what to install, the core never fires them, and plans that
hold them keep their indices through the runner's plan files and the proxy's loader.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit import Plan, PlanError
from chaoskit.cli import main as cli_main
from chaoskit.plan import ExtensionFault, registered_types

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'chaoskit[mcp]')")

PROTOCOL = ("list_changed", "malformed_result", "slow_initialize", "tool_disappears")
PROTOCOL_ORDER = ("list_changed", "tool_disappears", "slow_initialize", "malformed_result")  # as in MCP_PLAN
MCP_PLAN = """\
seed: 3
faults:
  - {type: http, tool: refund_order, on_call: [1], status: 503}
  - {type: list_changed, tool: lookup_order, on_call: [2], drop: [refund_order]}
  - {type: tool_disappears, tool: search, on_call: [3]}
  - {type: slow_initialize, delay_s: 0.5}
  - {type: malformed_result, tool: search, on_call: [2], shape: missing_content}
  - {type: latency, tool: search, delay_s: 0.01}
"""


def _validate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text, encoding="utf-8")
    code = cli_main(["validate", str(plan)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_mcp_protocol_faults_are_registered() -> None:
    assert set(PROTOCOL) <= set(registered_types())


def test_validate_accepts_each_protocol_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _validate(tmp_path, MCP_PLAN, capsys)
    assert code == 0, err
    assert "6 fault(s)" in out
    for kind in PROTOCOL:
        assert f"] {kind}" in out


def test_validate_rejects_a_typo_with_the_types_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _validate(tmp_path, "faults:\n  - {type: tool_disapears, tool: search}\n", capsys)
    assert code == 2
    assert "plan.yaml:2: faults[0]: unknown fault type 'tool_disapears'" in err
    assert "did you mean 'tool_disappears'?" in err
    assert "allowed: error, timeout, http" in err and "list_changed" in err and "malformed_result" in err


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        (
            "{type: malformed_result, tool: s, shape: round}",
            "plan.yaml:3: faults[1].shape: fault type 'malformed_result'",
        ),
        (
            "{type: list_changed, tool: s, dorp: [a]}",
            "faults[1].dorp: fault type 'list_changed' has no parameter 'dorp'",
        ),
        ("{type: slow_initialize, delay_s: -1}", "faults[1].delay_s: fault type 'slow_initialize': must be a number"),
        ("{type: tool_disappears, on_call: [1]}", "faults[1].tool: fault type 'tool_disappears': name the tool"),
    ],
)
def test_bad_parameters_name_their_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, needle: str
) -> None:
    code, _, err = _validate(tmp_path, f"faults:\n  - {{type: http, tool: a}}\n  - {entry}\n", capsys)
    assert code == 2 and needle in err, err


def test_without_the_mcp_extra_the_error_says_what_to_install(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(MCP_PLAN, encoding="utf-8")
    hide = "import sys; sys.modules['mcp'] = None\nfrom chaoskit.cli import main\nsys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", hide, "validate", str(plan)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert f"{plan}:4: faults[1]: fault type 'list_changed' comes from chaoskit_mcp" in done.stderr
    assert "install chaoskit[mcp]" in done.stderr
    assert "allowed without it: error, timeout, http" in done.stderr


def test_a_plan_of_core_faults_loads_no_plugin() -> None:
    code = "import sys\nfrom chaoskit import Plan\nPlan.from_dict({'faults': [{'type': 'http'}]})\n"
    code += "print(sorted(m for m in sys.modules if m.startswith(('chaoskit_mcp', 'mcp'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_core_never_fires_them_and_indices_hold(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(MCP_PLAN, encoding="utf-8")
    plan = Plan.from_yaml(path)
    kinds = [f.type for f in plan.faults]
    assert kinds == ["http", "list_changed", "tool_disappears", "slow_initialize", "malformed_result", "latency"]
    assert all(isinstance(plan.faults[i], ExtensionFault) for i in (1, 2, 3, 4))
    # search call 3: tool_disappears (index 2) is the package's to act on; the core picks the latency at 5
    decided = plan.decide("search", 3, {}, {})
    assert decided is not None and decided[0] == 5
    assert plan.decide("lookup_order", 2, {}, {}) is None
    assert plan.faults[2].params() == {"notify": True}
    # a plan file written from it (the runner's) and a pickled copy (its workers') hold the same faults
    again = Plan.from_dict(plan.to_dict())
    assert again.to_dict() == plan.to_dict() == pickle.loads(pickle.dumps(plan)).to_dict()


def test_the_proxy_loads_them_at_their_index_after_the_core_checked_them(tmp_path: Path) -> None:
    from chaoskit_mcp import load_plan

    path = tmp_path / "plan.yaml"
    path.write_text(MCP_PLAN, encoding="utf-8")
    core, _, protocol = load_plan(path)
    assert [(f.index, f.type) for f in protocol] == [(i, kind) for i, kind in enumerate(PROTOCOL_ORDER, 1)]
    decided = core.decide("refund_order", 1, {}, {})
    assert decided is not None and decided[0] == 0
    path.write_text("faults:\n  - {type: malformed_result, tool: s, shape: round}\n", encoding="utf-8")
    with pytest.raises(PlanError, match=r"plan.yaml:2: faults\[0\]\.shape"):
        load_plan(path)


def test_validate_checks_the_protocol_faults_of_an_mcp_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = Path(__file__).resolve().parents[3] / "examples/mcp/scenarios/refund-over-mcp.yaml"
    assert cli_main(["validate", str(example)]) == 0
    out = capsys.readouterr().out
    assert "2 fault(s)" in out and "[1] list_changed on lookup_order call 1" in out
    typo = tmp_path / "scenario.yaml"
    typo.write_text(example.read_text(encoding="utf-8").replace("type: list_changed", "type: list_chanjed"))
    assert cli_main(["validate", str(typo)]) == 2
    err = capsys.readouterr().err
    # checked when the scenario loads: the file, the line of the mcp block's faults, the field and the fix
    assert f"{typo}:8: mcp.faults: faults[0]: unknown fault type 'list_chanjed' (did you mean 'list_changed'?)" in err
