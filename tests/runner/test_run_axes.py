"""Model and architecture axes in a run: labels from a battery file or the agent, and the reports broken down."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("sklearn")

import chaoskit
from chaoskit import PlanError
from chaoskit.report import compare_results, render_comparison, render_html, render_text

ROOT = Path(__file__).resolve().parents[2]
SHORT = ROOT / "examples" / "long_horizon" / "scenarios"
REACT, REFLEXION = "examples.long_horizon.agents:react", "examples.long_horizon.agents:reflexion"
CAREFUL = "examples.plain.agents:careful"


def _battery(tmp: Path, agents: str, scenarios: str = "sh-*.yaml") -> Path:
    path = tmp / "battery.yaml"
    path.write_text(f"battery:\n  - scenarios: {SHORT}/{scenarios}\n    agents:\n{agents}", encoding="utf-8")
    return path


@cache
def _declared() -> chaoskit.BatteryResult:
    """The four short tasks against both reference agents, with no label given: what the agents declare."""
    return chaoskit.run_battery([str(SHORT / "sh-*.yaml")], agents=[REACT, REFLEXION], metrics=True)


def test_the_reference_agents_declare_their_architecture_and_model() -> None:
    labels = {(e.agent_label, e.architecture, e.model) for e in _declared().episodes}
    assert labels == {("react", "react", "scripted-planner"), ("reflexion", "reflexion", "scripted-planner")}


def test_a_battery_file_labels_its_agents_and_wins_over_what_they_declare(tmp_path: Path) -> None:
    agents = (
        f"      - {{agent: {REACT}, model: gpt-4o-mini, architecture: react-v2}}\n"
        f"      - {REFLEXION}\n"
        f"      - {{agent: {CAREFUL}, architecture: rules}}\n"
    )
    result = chaoskit.run_battery([str(_battery(tmp_path, agents, "sh-clean-4.yaml"))])
    got = {e.agent_label: (e.model, e.architecture) for e in result.episodes}
    assert got == {
        "react": ("gpt-4o-mini", "react-v2"),
        "reflexion": ("scripted-planner", "reflexion"),  # not labelled: its own
        "careful": (None, "rules"),  # labels only what is given; the plain agent declares nothing
    }
    assert result.config["labels"][REACT] == {"model": "gpt-4o-mini", "architecture": "react-v2"}
    b = result.summary.breakdowns
    assert set(b["architecture"]) == {"react-v2", "reflexion", "rules"}
    assert set(b["model"]) == {"gpt-4o-mini", "scripted-planner"} and b["model"]["gpt-4o-mini"]["n"] == 1
    data = json.loads(json.dumps(result.to_dict()))
    assert {e["architecture"] for e in data["episodes"]} == {"react-v2", "reflexion", "rules"}


def test_unlabelled_runs_show_no_axis() -> None:
    result = chaoskit.run_battery([str(ROOT / "examples" / "scenarios" / "refund-after-500.yaml")], agent=CAREFUL)
    assert result.episodes[0].model is None and result.episodes[0].architecture is None
    assert result.summary.breakdowns["model"] == result.summary.breakdowns["architecture"] == {}
    text = render_text(result, verbose=True)
    assert "by model" not in text and "by architecture" not in text
    html = render_html(result.to_dict())
    assert 'id="breakdown-model"' not in html and 'id="breakdown-agent"' in html


def test_the_reports_break_down_by_model_and_architecture() -> None:
    result = _declared()
    text = render_text(result, verbose=True)
    assert "by architecture" in text and "by model" in text and "scripted-planner" in text
    assert "Per architecture (the agents' labels)" in text
    html = render_html(result.to_dict())
    assert 'id="breakdown-architecture"' in html and 'id="breakdown-model"' in html
    assert "Per architecture (mean" in html
    metrics = result.summary.metrics
    assert metrics is not None
    arch = metrics["architectures"]
    assert set(arch) == {"react", "reflexion"} and arch["react"]["episodes"] == 4
    assert arch["react"]["pass_k"] == metrics["agents"]["react"]["pass_k"]
    assert arch["react"]["spread"]["cdi"]["n"] == 4
    assert set(metrics["models"]) == {"scripted-planner"} and metrics["models"]["scripted-planner"]["episodes"] == 8


def test_compare_breaks_down_by_architecture_and_model() -> None:
    data = _declared().to_dict()
    old = {**data, "episodes": [e for e in data["episodes"] if e["architecture"] == "react"]}
    new = {**data, "episodes": [e for e in data["episodes"] if e["architecture"] == "reflexion"]}
    c = compare_results(old, new)
    (arch,) = c.axes["architecture"]
    assert (arch.old_agent, arch.new_agent) == ("react", "reflexion") and (arch.old.n, arch.new.n) == (4, 4)
    assert arch.pass_rate.new.value > arch.pass_rate.old.value and arch.reasons == []
    assert set(arch.metrics) >= {"cdi", "ric"} and arch.score is not None
    (model,) = c.axes["model"]
    assert model.old_agent == model.new_agent == "scripted-planner"
    out = c.to_dict()
    assert out["architectures"][0]["old_agent"] == "react" and out["models"][0]["episodes"] == {"old": 4, "new": 4}
    text = render_comparison(c)
    assert "Per architecture (every scenario pooled; informs, never gates):" in text
    assert "react -> reflexion" in text


@pytest.mark.parametrize(
    ("agents", "message", "field"),
    [
        (f"      - {{agent: {REACT}, modle: x}}\n", "unknown key 'modle'", "battery[0].agents[0].modle"),
        (f"      - {{agent: {REACT}, model: ''}}\n", "model is a non-empty name", "battery[0].agents[0].model"),
        ("      - {model: gpt-4o}\n", "agent is a module:factory reference", "battery[0].agents[0].agent"),
        ("      - 42\n", "agent is a module:factory reference", "battery[0].agents[0].agent"),
    ],
)
def test_a_bad_agent_mapping_is_a_clear_error(tmp_path: Path, agents: str, message: str, field: str) -> None:
    path = _battery(tmp_path, agents)
    with pytest.raises(PlanError) as err:
        chaoskit.run_battery([str(path)])
    text = str(err.value)
    assert message in text and field in text and f"{path}:4:" in text  # the file, the line of the agent, the field


def test_one_agent_with_two_labellings_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "battery.yaml"
    path.write_text(
        f"battery:\n"
        f"  - scenarios: {SHORT}/sh-clean-4.yaml\n    agents: [{{agent: {REACT}, model: a}}]\n"
        f"  - scenarios: {SHORT}/sh-timeout-once-4.yaml\n    agents: [{{agent: {REACT}, model: b}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(PlanError, match="one model and one architecture per battery") as err:
        chaoskit.run_battery([str(path)])
    assert "battery[1].agents[0]" in str(err.value)


def test_process_workers_keep_the_labels(tmp_path: Path) -> None:
    agents = f"      - {{agent: {CAREFUL}, model: m1, architecture: rules}}\n"
    path = tmp_path / "battery.yaml"
    path.write_text(
        f"battery:\n  - scenarios: {ROOT}/examples/scenarios/refund-after-500.yaml\n    agents:\n{agents}",
        encoding="utf-8",
    )
    result = chaoskit.run_battery([str(path)], executor="process", workers=1)
    assert [(e.model, e.architecture) for e in result.episodes] == [("m1", "rules")]


def test_the_label_flags_label_every_agent_over_the_battery_and_the_agents(tmp_path: Path) -> None:
    from chaoskit.cli._main import main

    agents = f"      - {{agent: {REACT}, model: from-battery}}\n      - {REFLEXION}\n"
    out = tmp_path / "r.json"
    rc = main(
        ["run", str(_battery(tmp_path, agents, "sh-clean-4.yaml")), "--label-model", "gpt-x", "--json", str(out), "-q"]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    got = {(e["agent"].rpartition(":")[2], e["model"], e["architecture"]) for e in data["episodes"]}
    assert got == {("react", "gpt-x", "react"), ("reflexion", "gpt-x", "reflexion")}  # architecture: their own
    assert data["summary"]["breakdowns"]["model"]["gpt-x"]["n"] == 2


def test_an_empty_label_flag_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chaoskit.cli._main import main

    rc = main(["run", str(SHORT / "sh-clean-4.yaml"), "--label-architecture", " ", "-q"])
    assert rc == 2 and "--label-architecture is empty" in capsys.readouterr().err
