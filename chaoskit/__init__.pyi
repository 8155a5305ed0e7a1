"""The public names of chaoskit and where each is defined: written once, here.

``chaoskit/__init__.py`` reads this file to import each name on first use; type checkers read it for the types.
"""

from chaoskit import checks as checks
from chaoskit import faults as faults
from chaoskit import telemetry as telemetry
from chaoskit._errors import (
    ChaoskitError as ChaoskitError,
)
from chaoskit._errors import (
    ChaosWarning as ChaosWarning,
)
from chaoskit._errors import (
    ConfigError as ConfigError,
)
from chaoskit._errors import (
    ModelHTTPError as ModelHTTPError,
)
from chaoskit._errors import (
    ModelTimeout as ModelTimeout,
)
from chaoskit._errors import (
    PlanError as PlanError,
)
from chaoskit._errors import (
    ToolHTTPError as ToolHTTPError,
)
from chaoskit._errors import (
    ToolTimeout as ToolTimeout,
)
from chaoskit._version import __version__ as __version__
from chaoskit.adapters._decorator import chaos as chaos
from chaoskit.engine._attempt import (
    Attempt as Attempt,
)
from chaoskit.engine._attempt import (
    begin as begin,
)
from chaoskit.engine._attempt import (
    call_async as call_async,
)
from chaoskit.engine._attempt import (
    call_sync as call_sync,
)
from chaoskit.engine._config import configure as configure
from chaoskit.engine._context import active_plan as active_plan
from chaoskit.engine._episode import Episode as Episode
from chaoskit.engine._episode import current_episode as current_episode
from chaoskit.engine._info import AttemptInfo as AttemptInfo
from chaoskit.engine._runtime import reset as reset
from chaoskit.engine._spec import ToolSpec as ToolSpec
from chaoskit.grading._result import CheckResult as CheckResult
from chaoskit.grading._score import Score as Score
from chaoskit.grading._score import score as score
from chaoskit.plan._faults import FAULT_TYPES as FAULT_TYPES
from chaoskit.plan._model import Plan as Plan
from chaoskit.replay._model_replies import ReplayMiss as ReplayMiss
from chaoskit.replay._replay_episode import episode as episode
from chaoskit.runner._battery import run_battery as run_battery
from chaoskit.runner._grid import RunConfig as RunConfig
from chaoskit.runner._grid import run_config as run_config
from chaoskit.runner._results import BatteryResult as BatteryResult
from chaoskit.runner._results import EpisodeResult as EpisodeResult
from chaoskit.scenarios._scenario import Scenario as Scenario
from chaoskit.scenarios._scenario import load_battery as load_battery
from chaoskit.scenarios._scenario import load_scenario as load_scenario
from chaoskit.traces._build import LateSpanError as LateSpanError
from chaoskit.traces._phoenix import fetch_phoenix as fetch_phoenix
from chaoskit.traces._records import (
    AttemptRecord as AttemptRecord,
)
from chaoskit.traces._records import (
    EpisodeRecord as EpisodeRecord,
)
from chaoskit.traces._records import (
    TraceReadError as TraceReadError,
)
from chaoskit.traces._trace import Trace as Trace
