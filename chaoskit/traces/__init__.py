"""Traces in: exported spans (OTLP-JSON, JSON Lines, Jaeger's and Phoenix's answers) read into a ``Trace``.

The records the checks read (one attempt, one episode), the checks on every span's attributes, the readers of
each format (a typed fast path for OTLP-JSON Lines inside), streaming and chunked reading of large files, and
the Jaeger and Phoenix HTTP readers. ``chaoskit.grading`` holds the checks over a ``Trace`` and the score.
"""

from typing import TYPE_CHECKING, Any

from chaoskit.traces._build import LateSpanError
from chaoskit.traces._records import AttemptRecord, EpisodeRecord, TraceReadError
from chaoskit.traces._trace import Trace

if TYPE_CHECKING:
    from chaoskit.traces._phoenix import fetch_phoenix

__all__ = ["AttemptRecord", "EpisodeRecord", "LateSpanError", "Trace", "TraceReadError", "fetch_phoenix"]


def __getattr__(name: str) -> Any:
    """``fetch_phoenix`` is imported on first use: its HTTP client is off the path of ``chaoskit check FILE``."""
    if name == "fetch_phoenix":
        from chaoskit.traces._phoenix import fetch_phoenix

        globals()[name] = fetch_phoenix
        return fetch_phoenix
    raise AttributeError(f"module 'chaoskit.traces' has no attribute {name!r}")
