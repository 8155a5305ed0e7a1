"""chaoskit: chaos-testing for LLM agents at the tool layer."""

from chaoskit import checks, faults, telemetry
from chaoskit._errors import ChaoskitError, ChaosWarning, ConfigError, PlanError, ToolHTTPError, ToolTimeout
from chaoskit._version import __version__
from chaoskit.adapters._decorator import chaos
from chaoskit.engine._attempt import Attempt, begin, call_async, call_sync
from chaoskit.engine._config import configure
from chaoskit.engine._context import active_plan
from chaoskit.engine._episode import Episode, current_episode, episode
from chaoskit.engine._info import AttemptInfo
from chaoskit.engine._runtime import reset
from chaoskit.engine._spec import ToolSpec
from chaoskit.grading._build import LateSpanError
from chaoskit.grading._model import AttemptRecord, EpisodeRecord, TraceReadError
from chaoskit.grading._phoenix import fetch_phoenix
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import Score, score
from chaoskit.grading._trace import Trace
from chaoskit.plan._faults import FAULT_TYPES
from chaoskit.plan._model import Plan
from chaoskit.runner._battery import run_battery
from chaoskit.runner._results import BatteryResult, EpisodeResult
from chaoskit.runner._scenario import Scenario, load_battery, load_scenario

# the telemetry layer sits below the readers: its captures read spans as a Trace through this hook
telemetry.set_trace_builder(Trace.from_spans)

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
    "fetch_phoenix",
    "load_battery",
    "load_scenario",
    "reset",
    "run_battery",
    "score",
    "telemetry",
]
