"""chaoskit: chaos-testing for LLM agents at the tool layer."""

from . import faults, telemetry
from ._config import configure, reset
from ._context import active_plan
from ._decorator import chaos
from ._engine import Attempt, AttemptInfo, ToolSpec, begin, call_async, call_sync
from ._episode import Episode, episode
from ._errors import ChaoskitError, ChaosWarning, PlanError, ToolHTTPError, ToolTimeout
from ._plan import FAULT_TYPES, Plan
from ._version import __version__

__all__ = [
    "FAULT_TYPES",
    "Attempt",
    "AttemptInfo",
    "ChaosWarning",
    "ChaoskitError",
    "Episode",
    "Plan",
    "PlanError",
    "ToolHTTPError",
    "ToolSpec",
    "ToolTimeout",
    "__version__",
    "active_plan",
    "begin",
    "call_async",
    "call_sync",
    "chaos",
    "configure",
    "episode",
    "faults",
    "reset",
    "telemetry",
]
