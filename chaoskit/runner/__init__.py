"""The battery runner: the run config, the (k, epsilon, lambda) grid, executors, episodes, results and the gate."""

from chaoskit.runner._agents import AgentError, CommandAgent, PythonAgent, resolve_agent
from chaoskit.runner._battery import run_battery
from chaoskit.runner._episode_runner import EpisodeRunner
from chaoskit.runner._executor import Executor, LocalExecutor
from chaoskit.runner._gate import check_gate, load_baseline, make_baseline, verdict
from chaoskit.runner._grid import EpisodePlan, RunConfig, RunOptions, derive_seed, plan_episodes, run_config
from chaoskit.runner._intensity import Profile, load_profile
from chaoskit.runner._progress import Progress
from chaoskit.runner._results import BatteryResult, Cell, EpisodeResult, Summary, Verdict
from chaoskit.runner._summary import summarize

__all__ = [
    "AgentError",
    "BatteryResult",
    "Cell",
    "CommandAgent",
    "EpisodePlan",
    "EpisodeResult",
    "EpisodeRunner",
    "Executor",
    "LocalExecutor",
    "Profile",
    "Progress",
    "PythonAgent",
    "RunConfig",
    "RunOptions",
    "Summary",
    "Verdict",
    "check_gate",
    "derive_seed",
    "load_baseline",
    "load_profile",
    "make_baseline",
    "plan_episodes",
    "resolve_agent",
    "run_battery",
    "run_config",
    "summarize",
    "verdict",
]
