"""chaoskit: chaos-testing for LLM agents at the tool layer."""

from chaoskit import checks, faults, telemetry
from chaoskit._errors import ChaoskitError, ChaosWarning, ConfigError, PlanError, ToolHTTPError, ToolTimeout
from chaoskit._version import __version__
from chaoskit.adapters._decorator import chaos
from chaoskit.engine._attempt import Attempt, AttemptInfo, ToolSpec, begin, call_async, call_sync
from chaoskit.engine._config import configure, reset
from chaoskit.engine._context import active_plan, current_episode
from chaoskit.engine._episode import Episode, episode
from chaoskit.grading._score import Score, score
from chaoskit.grading._trace import AttemptRecord, EpisodeRecord, Trace, TraceReadError
from chaoskit.grading.checks import CheckResult
from chaoskit.plan._model import FAULT_TYPES, Plan
from chaoskit.runner._battery import BatteryResult, EpisodeResult, run_battery
from chaoskit.runner._scenario import Scenario, load_battery, load_scenario

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
    "Plan",
    "PlanError",
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
    "load_battery",
    "load_scenario",
    "reset",
    "run_battery",
    "score",
    "telemetry",
]
