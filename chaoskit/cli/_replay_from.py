"""A recorded episode read from a tracing backend (Jaeger by trace id, Phoenix by project) to be replayed."""

from __future__ import annotations

import argparse
import math

from chaoskit._errors import ChaoskitError
from chaoskit.traces._records import TraceReadError
from chaoskit.traces._trace import Trace

__all__ = ["add_backend_options", "backend_trace"]


def add_backend_options(p: argparse.ArgumentParser, jaeger: str, phoenix: str) -> None:
    """Add ``jaeger`` / ``phoenix`` (the flags, e.g. ``--replay-from-jaeger``), ``--trace ID``, ``--project``."""
    p.add_argument(jaeger, metavar="URL", help="replay the episode of trace --trace ID read from Jaeger's query API")
    p.add_argument(phoenix, metavar="URL", help="replay the episode read from Phoenix project --project NAME")
    p.add_argument("--trace", metavar="ID", dest="trace_id", help=f"the trace id, for {jaeger} (or {phoenix})")
    p.add_argument("--project", metavar="NAME", help=f"the Phoenix project, for {phoenix}")
    p.add_argument("--backend-timeout", type=float, default=30.0, metavar="S", help="seconds per backend request")


def backend_trace(args: argparse.Namespace, jaeger: str, phoenix: str) -> tuple[str, Trace] | None:
    """``(source, trace)`` read from the backend the options name, None when they name none. The trace holds the
    episodes of trace ``--trace`` (Phoenix: of the project, or of that trace in it); usage errors name the option."""
    j_url = getattr(args, jaeger.lstrip("-").replace("-", "_"))
    p_url = getattr(args, phoenix.lstrip("-").replace("-", "_"))
    if j_url is None and p_url is None:
        for flag, value in (("--trace", args.trace_id), ("--project", args.project)):
            if value is not None:
                raise ChaoskitError(f"{flag} is for {jaeger} or {phoenix}")
        return None
    if j_url is not None and p_url is not None:
        raise ChaoskitError(f"{jaeger} and {phoenix}: give one")
    if not (args.backend_timeout > 0 and math.isfinite(args.backend_timeout)):  # inf overflows the HTTP wait
        raise ChaoskitError(f"--backend-timeout must be a number of seconds > 0, got {args.backend_timeout:g}")
    if j_url is not None:
        from chaoskit.traces._jaeger import fetch_jaeger_trace  # imported when used: the HTTP client

        if not args.trace_id:
            raise ChaoskitError(f"{jaeger} needs --trace ID (the trace id of the recorded episode)")
        if args.project is not None:
            raise ChaoskitError(f"--project is for {phoenix}")
        episodes = fetch_jaeger_trace(j_url, args.trace_id, timeout=args.backend_timeout)
        return f"{j_url} (trace {args.trace_id})", Trace(episodes)
    from chaoskit.traces._phoenix import fetch_phoenix

    if not args.project:
        raise ChaoskitError(f"{phoenix} needs --project NAME (the Phoenix project the episode went to)")
    trace = fetch_phoenix(p_url, args.project, timeout=args.backend_timeout)
    if args.trace_id:
        wanted = args.trace_id.lower().rjust(32, "0")
        episodes = [e for e in trace.episodes if (e.trace_id or "").lower() == wanted]
        if not episodes:
            raise TraceReadError(f"Phoenix project {args.project!r} holds no chaoskit episode in trace {wanted}",
                                 source=p_url)  # fmt: skip
        return f"{p_url} (project {args.project}, trace {wanted})", Trace(episodes)
    return f"{p_url} (project {args.project})", trace
