"""The run report's trajectory metrics carry each mean's SD and 95% t interval per agent, beside the mean."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chaoskit.report._text import metrics_lines
from chaoskit.runner._metrics import metrics_summary


def _ep(agent: str, rep: int, ric: float, svr: float | None) -> dict[str, Any]:
    return {
        "scenario": "long-refund",
        "agent": agent,
        "epsilon": 0.0,
        "intensity": 0.0,
        "passed": True,
        "duration_s": 1.0,
        "metrics": {
            "steps": 12,
            "cdi": None,
            "svr": svr,
            "ric": ric,
            "daf": 0.0,
            "hallucination": None,
            "modes": [],
            "cost": {"input_tokens": 100, "output_tokens": 10, "cost": None, "tool_s": 0.1},
        },
    }


def test_spread_per_agent_and_in_the_text() -> None:
    eps = [_ep("react", i, r, None) for i, r in enumerate([0.1, 0.2, 0.3])]
    eps += [_ep("reflexion", i, r, s) for i, (r, s) in enumerate([(0.0, 0.5), (0.0, 0.5), (0.3, None)])]
    summary = metrics_summary(eps)
    assert summary is not None
    ric = summary["agents"]["react"]["spread"]["ric"]
    assert ric["n"] == 3 and ric["mean"] == pytest.approx(0.2) and ric["sd"] == pytest.approx(0.1)
    half = 4.303 * 0.1 / math.sqrt(3)  # t(0.975, 2) = 4.303
    assert ric["low"] == pytest.approx(0.2 - half, abs=1e-3) and ric["high"] == pytest.approx(0.2 + half, abs=1e-3)
    assert summary["agents"]["react"]["spread"]["svr"]["n"] == 0  # never defined: no interval, not zeros
    assert summary["agents"]["reflexion"]["spread"]["svr"] == {
        "n": 2,
        "mean": 0.5,
        "sd": 0.0,
        "low": 0.5,
        "high": 0.5,
    }
    text = "\n".join(metrics_lines(summary))
    assert "  react: RIC 0.20 ± 0.10 [-0.05-0.45] n=3" in text
    assert "SVR" not in text.split("  react:")[1].splitlines()[0]
