"""chaoskit: chaos-testing for LLM agents at the tool layer.

The public names are imported when first used (a module ``__getattr__``), so that ``chaoskit check`` and other
commands load only the layers they need, not the engine, the runner and the OpenTelemetry SDK of the others.
``from chaoskit import X`` and ``chaoskit.X`` work as if everything were imported up front.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from chaoskit._version import __version__

if TYPE_CHECKING:
    from chaoskit import checks, faults, telemetry
    from chaoskit._errors import (
        ChaoskitError,
        ChaosWarning,
        ConfigError,
        ModelHTTPError,
        ModelTimeout,
        PlanError,
        ToolHTTPError,
        ToolTimeout,
    )
    from chaoskit.adapters._decorator import chaos
    from chaoskit.engine._attempt import Attempt, begin, call_async, call_sync
    from chaoskit.engine._config import configure
    from chaoskit.engine._context import active_plan
    from chaoskit.engine._episode import Episode, current_episode
    from chaoskit.engine._info import AttemptInfo
    from chaoskit.engine._runtime import reset
    from chaoskit.engine._spec import ToolSpec
    from chaoskit.grading._build import LateSpanError
    from chaoskit.grading._model import AttemptRecord, EpisodeRecord, TraceReadError
    from chaoskit.grading._phoenix import fetch_phoenix
    from chaoskit.grading._result import CheckResult
    from chaoskit.grading._score import Score, score
    from chaoskit.grading._trace import Trace
    from chaoskit.plan._model import Plan
    from chaoskit.replay import ReplayMiss, episode
    from chaoskit.runner._battery import run_battery
    from chaoskit.runner._results import BatteryResult, EpisodeResult
    from chaoskit.runner._scenario import Scenario, load_battery, load_scenario

#: every fault type a plan accepts (defined in ``chaoskit.plan``; imported on first use, as every name here)
FAULT_TYPES: tuple[str, ...]

#: each public name and the module that defines it ("" for a submodule of the same name)
_WHERE = {
    "checks": "",
    "faults": "",
    "telemetry": "",
    "ChaoskitError": "chaoskit._errors",
    "ChaosWarning": "chaoskit._errors",
    "ConfigError": "chaoskit._errors",
    "PlanError": "chaoskit._errors",
    "ModelHTTPError": "chaoskit._errors",
    "ModelTimeout": "chaoskit._errors",
    "ToolHTTPError": "chaoskit._errors",
    "ToolTimeout": "chaoskit._errors",
    "chaos": "chaoskit.adapters._decorator",
    "Attempt": "chaoskit.engine._attempt",
    "begin": "chaoskit.engine._attempt",
    "call_async": "chaoskit.engine._attempt",
    "call_sync": "chaoskit.engine._attempt",
    "configure": "chaoskit.engine._config",
    "active_plan": "chaoskit.engine._context",
    "Episode": "chaoskit.engine._episode",
    "current_episode": "chaoskit.engine._episode",
    "episode": "chaoskit.replay._episode",
    "ReplayMiss": "chaoskit.replay._models",
    "AttemptInfo": "chaoskit.engine._info",
    "reset": "chaoskit.engine._runtime",
    "ToolSpec": "chaoskit.engine._spec",
    "LateSpanError": "chaoskit.grading._build",
    "AttemptRecord": "chaoskit.grading._model",
    "EpisodeRecord": "chaoskit.grading._model",
    "TraceReadError": "chaoskit.grading._model",
    "fetch_phoenix": "chaoskit.grading._phoenix",
    "CheckResult": "chaoskit.grading._result",
    "Score": "chaoskit.grading._score",
    "score": "chaoskit.grading._score",
    "Trace": "chaoskit.grading._trace",
    "FAULT_TYPES": "chaoskit.plan._faults",
    "Plan": "chaoskit.plan._model",
    "run_battery": "chaoskit.runner._battery",
    "BatteryResult": "chaoskit.runner._results",
    "EpisodeResult": "chaoskit.runner._results",
    "Scenario": "chaoskit.runner._scenario",
    "load_battery": "chaoskit.runner._scenario",
    "load_scenario": "chaoskit.runner._scenario",
}

__all__ = [
    "FAULT_TYPES",
    "Attempt",
    "AttemptInfo",
    "AttemptRecord",
    "BatteryResult",
    "ChaosWarning",
    "ChaoskitError",
    "CheckResult",
    "ConfigError",
    "Episode",
    "EpisodeRecord",
    "EpisodeResult",
    "LateSpanError",
    "ModelHTTPError",
    "ModelTimeout",
    "Plan",
    "PlanError",
    "ReplayMiss",
    "Scenario",
    "Score",
    "ToolHTTPError",
    "ToolSpec",
    "ToolTimeout",
    "Trace",
    "TraceReadError",
    "__version__",
    "active_plan",
    "begin",
    "call_async",
    "call_sync",
    "chaos",
    "checks",
    "configure",
    "current_episode",
    "episode",
    "faults",
    "fetch_phoenix",
    "load_battery",
    "load_scenario",
    "reset",
    "run_battery",
    "score",
    "telemetry",
]


def _hook_trace_reader() -> None:
    # the telemetry layer sits below the readers: its captures read spans as a Trace through this hook
    from chaoskit.grading._trace import Trace
    from chaoskit.telemetry import set_trace_builder

    set_trace_builder(Trace.from_spans)


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the module, as an eager import would have."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'chaoskit' has no attribute {name!r}")
    if "_trace_reader_hooked" not in globals():
        # any public name may lead to telemetry's captures (an episode records spans): hook before handing it out
        _hook_trace_reader()
        globals()["_trace_reader_hooked"] = True
    value = importlib.import_module(f"chaoskit.{name}") if not where else getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
