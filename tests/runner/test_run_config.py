"""The run options, once: one frozen ``RunConfig`` built from ``chaoskit run``'s flags or ``run_battery``'s
keywords, checked on construction, and a ``run_battery`` that returns what the report shows, the tools' declared
contracts included.

The agents are the billing example's (``examples/suggest/billing.py``: ``charge_invoice`` is an irreversible write
with no idempotency key), run for real.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

import chaoskit
from chaoskit.cli._main import main

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "suggest" / "scenarios"
CAREFUL = "examples.suggest.billing:careful"


#: what differs between two runs of the same config: measured times and fresh random ids (span, trace, episode)
_TIMING = re.compile(r"\d+(?:\.\d+)?\s?m?s\b")
_IDS = re.compile(r"\b[0-9a-f]{16,}\b")


def _comparable(result: Any) -> dict[str, Any]:
    """The results as JSON, less what is not a result: timings and run-wide random ids."""
    data: dict[str, Any] = json.loads(_IDS.sub("ID", _TIMING.sub("T", json.dumps(result.to_dict()))))
    data.pop("elapsed_s")
    for e in data["episodes"]:
        e.pop("duration_s")
        for t in e["attempts"]["timeline"]:
            t.pop("t_ms")
            t.pop("ms")
    return data


def test_the_keyword_form_and_a_config_give_the_same_run() -> None:
    options: dict[str, Any] = {"agent": CAREFUL, "repeat": 2, "intensities": [0.0, 0.3], "seed": 7}
    by_keywords = chaoskit.run_battery([BILLING], **options)
    config = chaoskit.run_config([BILLING], **options)
    by_config = chaoskit.run_battery(config)
    assert len(by_keywords.episodes) == 2 * 2 * len({e.scenario for e in by_keywords.episodes}) > 0
    assert _comparable(by_config) == _comparable(by_keywords)
    # the config is the one the run recorded
    assert by_config.config["seed"] == 7 and by_config.config["intensities"] == [0.0, 0.3]


def test_run_battery_returns_the_contract_findings_chaoskit_run_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = chaoskit.run_battery([BILLING], agent=CAREFUL)
    rows = {(r["tool"], r["agent"]): r for r in result.summary.readiness}
    # the declared contract: an irreversible write without an idempotency key, on the agent whose tool it is
    assert rows[("charge_invoice", "careful")]["findings"] == ["no_idempotency_key"]
    assert any(f["tool"] == "charge_invoice" and f["agents"] == [CAREFUL] for f in result.summary.contracts)
    out = tmp_path / "r.json"
    code = main(["run", str(BILLING), "--agent", CAREFUL, "--quiet", "--json", str(out)])
    assert code == 0
    cli = json.loads(out.read_text(encoding="utf-8"))["summary"]
    mine = json.loads(json.dumps({"readiness": result.summary.readiness, "contracts": result.summary.contracts}))
    # the same findings and rows; only the span ids in the evidence are fresh in every run
    assert _IDS.sub("ID", json.dumps(cli["readiness"])) == _IDS.sub("ID", json.dumps(mine["readiness"]))
    assert _IDS.sub("ID", json.dumps(cli["contracts"])) == _IDS.sub("ID", json.dumps(mine["contracts"]))
    assert len(mine["contracts"]) >= 3
    # and the terminal report counts them, as it would from the result
    main(["run", str(BILLING), "--agent", CAREFUL])
    tools = sorted({f["tool"] for f in mine["contracts"]})
    assert f"{len(mine['contracts'])} tool-contract findings on {', '.join(tools)}" in capsys.readouterr().out
    # contracts=False leaves the declarations out (the episodes' own findings stay)
    bare = chaoskit.run_battery([BILLING], agent=CAREFUL, contracts=False)
    assert not any(f["agents"] == [CAREFUL] and f["kind"] == "no_idempotency_key" for f in bare.summary.contracts)


def test_the_config_is_frozen_and_checked_naming_its_flag() -> None:
    config = chaoskit.run_config([BILLING], agent=CAREFUL, perturbations=[0.2], prices=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.repeat = 3  # type: ignore[misc]
    # the unperturbed baseline is added to a perturbed run, as before
    assert config.perturbations == (0.0, 0.2)
    for options, flag in (
        ({"repeat": 0}, "--repeat"),
        ({"repeat": 2, "k": 3}, "--k"),
        ({"intensities": [1.5]}, "--intensity"),
        ({"workers": 0}, "--workers"),
        ({"executor": "cloud"}, "--executor"),
        ({"shard": (3, 2)}, "--shard"),
        ({"timeout": 0}, "--timeout"),
        ({"timeout": float("inf")}, "--timeout"),  # was accepted, then a command agent's wait overflowed
        ({"on_miss": "skip"}, "--on-miss"),
        ({"agent": " "}, "--agent"),
        ({"agents": []}, "--agents"),
    ):
        with pytest.raises(chaoskit.ChaoskitError, match=flag):
            chaoskit.run_config([BILLING], **options)
    with pytest.raises(chaoskit.ChaoskitError, match="scenario path is empty"):
        chaoskit.run_config([""])
    # a misspelt keyword is not silently dropped
    with pytest.raises(TypeError, match="repeats"):
        chaoskit.run_battery([BILLING], agent=CAREFUL, repeats=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no options beside the config"):
        chaoskit.run_battery(config, repeat=2)


def test_the_cli_builds_one_config_from_its_flags() -> None:
    from chaoskit.cli._main import build_parser
    from chaoskit.cli._run import run_config_of

    args = build_parser().parse_args(
        ["run", str(BILLING), "--agent", CAREFUL, "--repeat", "3", "--k", "2", "--perturb", "light", "--quiet"]
    )
    config = run_config_of(args)
    assert config == chaoskit.run_config(
        [str(BILLING)], agent=CAREFUL, repeat=3, k=2, perturbations=[0.1], progress=False
    )
    bad = build_parser().parse_args(["run", str(BILLING), "--agent", CAREFUL, "--repeat", "0"])
    with pytest.raises(chaoskit.ChaoskitError, match="--repeat must be >= 1"):
        run_config_of(bad)
