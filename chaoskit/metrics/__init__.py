"""Long-horizon trajectory metrics (CDI, SVR, RIC, DAF, argument hallucination) and the failure taxonomy, from traces.

The metrics read the model steps (``chat`` spans, written by ``Episode.step`` and the LangChain/LangGraph
integrations) and the tool attempts of each episode: :func:`trajectories` pairs them, :func:`trajectory_metrics`
computes every metric, :func:`failure_modes` labels a failed episode, :func:`episode_cost` gives tokens, cost and
time; :func:`generate` makes seeded synthetic trajectories to try them on. scikit-learn (the ``metrics`` extra) is
imported only when a similarity-based metric (CDI, RIC) is computed. docs/metrics.md gives each formula and its
blind spots.
"""

from chaoskit.metrics._aggregate import (
    AGGREGATED,
    Aggregate,
    MetricComparison,
    aggregate,
    compare_metrics,
    compare_values,
)
from chaoskit.metrics._compute import (
    CDI_BANDS,
    CLAIM_PATTERNS,
    CYCLE_MIN_GAP,
    CYCLE_SIMILARITY,
    CYCLE_WINDOW,
    DELEGATION_TEXT,
    DELEGATION_TOOLS,
    Hallucinations,
    TrajectoryMetrics,
    cdi_band,
    claims,
    context_drift_index,
    delegation_amplification_factor,
    hallucinated_arguments,
    recursive_instability_coefficient,
    silent_verification_rate,
    text_delegations,
    tool_argument_hallucination_rate,
    trajectory_metrics,
)
from chaoskit.metrics._cost import EpisodeCost, Price, Prices, episode_cost, load_prices
from chaoskit.metrics._model_steps import StepRecord, ToolCall, read_steps, steps_from_spans
from chaoskit.metrics._reader import TASK_KEYS, read_trajectories
from chaoskit.metrics._similarity import cosine_matrix
from chaoskit.metrics._stats import (
    MeanSummary,
    WelchTest,
    cohens_d,
    mean_summary,
    t_critical,
    t_two_sided_p,
    welch_t_test,
)
from chaoskit.metrics._synthetic import Generated, ModelSpec, generate, write_generated
from chaoskit.metrics._taxonomy import (
    BENCHMARK_CODES,
    MODES,
    UNMAPPED_CODES,
    Mode,
    Thresholds,
    failed_checks,
    failure_modes,
    persistent_tools,
)
from chaoskit.metrics._trajectory import Trajectory, trajectories, trajectories_from_spans

#: the short names
cdi = context_drift_index
svr = silent_verification_rate
ric = recursive_instability_coefficient
daf = delegation_amplification_factor

__all__ = [
    "AGGREGATED",
    "BENCHMARK_CODES",
    "CDI_BANDS",
    "CLAIM_PATTERNS",
    "CYCLE_MIN_GAP",
    "CYCLE_SIMILARITY",
    "CYCLE_WINDOW",
    "DELEGATION_TEXT",
    "DELEGATION_TOOLS",
    "MODES",
    "TASK_KEYS",
    "UNMAPPED_CODES",
    "Aggregate",
    "EpisodeCost",
    "Generated",
    "Hallucinations",
    "MeanSummary",
    "MetricComparison",
    "Mode",
    "ModelSpec",
    "Price",
    "Prices",
    "StepRecord",
    "Thresholds",
    "ToolCall",
    "Trajectory",
    "TrajectoryMetrics",
    "WelchTest",
    "aggregate",
    "cdi",
    "cdi_band",
    "claims",
    "cohens_d",
    "compare_metrics",
    "compare_values",
    "context_drift_index",
    "cosine_matrix",
    "daf",
    "delegation_amplification_factor",
    "episode_cost",
    "failed_checks",
    "failure_modes",
    "generate",
    "hallucinated_arguments",
    "load_prices",
    "mean_summary",
    "persistent_tools",
    "read_steps",
    "read_trajectories",
    "recursive_instability_coefficient",
    "ric",
    "silent_verification_rate",
    "steps_from_spans",
    "svr",
    "t_critical",
    "t_two_sided_p",
    "text_delegations",
    "tool_argument_hallucination_rate",
    "trajectories",
    "trajectories_from_spans",
    "trajectory_metrics",
    "welch_t_test",
    "write_generated",
]
