"""chaoskit: chaos-testing for LLM agents at the tool layer."""

from . import checks, faults, telemetry
from ._config import configure, reset
from ._context import active_plan, current_episode
from ._decorator import chaos
from ._engine import Attempt, AttemptInfo, ToolSpec, begin, call_async, call_sync
from ._episode import Episode, episode
from ._errors import ChaoskitError, ChaosWarning, ConfigError, PlanError, ToolHTTPError, ToolTimeout
from ._plan import FAULT_TYPES, Plan
from ._runner import BatteryResult, EpisodeResult, run_battery
from ._scenario import Scenario, load_battery, load_scenario
from ._score import Score, score
from ._trace import AttemptRecord, EpisodeRecord, Trace, TraceReadError
from ._version import __version__
from .checks import CheckResult

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
