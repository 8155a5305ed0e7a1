"""Grading: the checks over a ``Trace``, their results and the 0-100 recovery score (traces: ``chaoskit.traces``)."""

from typing import TYPE_CHECKING, Any

from chaoskit.grading._result import CheckResult, Severity
from chaoskit.grading._score import WEIGHTS, Score, ScorePart, score
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, run_checks
from chaoskit.traces._build import LateSpanError
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, TraceReadError
from chaoskit.traces._trace import Trace

if TYPE_CHECKING:
    from chaoskit.traces._phoenix import fetch_phoenix

__all__ = [
    "DEFAULT_CHECKS",
    "REGISTRY",
    "WEIGHTS",
    "AttemptRecord",
    "CheckResult",
    "EpisodeRecord",
    "LateSpanError",
    "Score",
    "ScorePart",
    "Severity",
    "Trace",
    "TraceReadError",
    "fetch_phoenix",
    "run_checks",
    "score",
]


def __getattr__(name: str) -> Any:
    """``fetch_phoenix`` is ``chaoskit.traces``' own, imported there on first use (off ``chaoskit check FILE``)."""
    if name == "fetch_phoenix":
        import chaoskit.traces

        globals()[name] = found = chaoskit.traces.fetch_phoenix
        return found
    raise AttributeError(f"module 'chaoskit.grading' has no attribute {name!r}")
