"""Where ``chaoskit check`` reads its traces from: trace files, a running Jaeger, or a running Phoenix.

The three are exclusive: trace files, or ``--from-jaeger URL --service NAME``, or ``--from-phoenix URL --project
NAME``. ``--since``, ``--limit`` and ``--timeout`` apply to the two backends, ``--format`` to files. A source
that cannot be graded (unreadable, nothing to grade, the backend unreachable) raises a TraceReadError.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.traces._readers import nothing_to_grade
from chaoskit.traces._records import EpisodeRecord, TraceReadError

__all__ = ["add_source_options", "backend_episodes", "check_sources", "parse_duration", "write_back"]

_DEFAULT_SINCE = "1h"
_DEFAULT_LIMIT = 100
_DEFAULT_TIMEOUT = 30.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def add_source_options(p: argparse.ArgumentParser) -> None:
    """Add ``--from-jaeger``, ``--service``, ``--from-phoenix``, ``--project``, ``--since``, ``--limit`` and
    ``--timeout`` to the ``check`` parser ``p``."""
    g = p.add_argument_group("reading from a backend (instead of trace files)")
    g.add_argument(
        "--from-jaeger",
        metavar="URL",
        help="query a running Jaeger's query service (api_v3): an http:// or https:// URL such as "
        "http://localhost:16686",
    )
    g.add_argument("--service", metavar="NAME", help="the service to query in Jaeger (with --from-jaeger)")
    g.add_argument(
        "--from-phoenix",
        metavar="URL",
        help="read the spans of a running Arize Phoenix over its REST API: a URL such as http://localhost:6006",
    )
    g.add_argument("--project", metavar="NAME", help="the Phoenix project to read (with --from-phoenix)")
    g.add_argument(
        "--since",
        metavar="DURATION",
        help=f"how far back to query: 30m, 1h, 2d … (default {_DEFAULT_SINCE})",
    )
    g.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help=f"Jaeger: at most N traces per request (default {_DEFAULT_LIMIT}); the time range is read in windows, "
        "a full window read again in halves; Phoenix: at most N spans in all (default: no limit; read 1000 a "
        "page), a project holding more in the window is refused, not cut",
    )
    g.add_argument(
        "--write-back",
        action="store_true",
        help="send the grades back to the backend, on each episode's span: to Phoenix as span annotations; to "
        "Jaeger as a chaoskit.evaluation span under the episode's span, over OTLP as OTEL_EXPORTER_OTLP_* say",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"give up when the backend has not answered within SECONDS (default {_DEFAULT_TIMEOUT:g})",
    )


def parse_duration(text: str) -> timedelta:
    """``--since``'s value (``30m``, ``1h``, ``2d``, …) as a timedelta; a usage error otherwise."""
    m = _DURATION.match(text)
    if not m:
        raise ChaoskitError(f"--since expects a duration such as 30m, 1h or 2d, got {text!r}")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
    try:
        since = timedelta(**{unit: float(m.group(1))})
    except OverflowError:
        raise ChaoskitError(f"--since is too long, got {text!r}; give at most a few years (such as 52w)") from None
    if since <= timedelta(0):
        raise ChaoskitError(f"--since must be longer than 0, got {text!r}")
    return since


def check_sources(args: argparse.Namespace) -> None:
    """Usage errors, each naming its option: backends together or with files, a backend's option without the
    backend, bad values. Fills in the defaults of ``--since`` and ``--timeout`` (``--limit``'s: per backend)."""
    if args.limit is not None and args.limit < 1:
        raise ChaoskitError(f"--limit must be a whole number >= 1, got {args.limit}")
    if args.timeout is not None and not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise ChaoskitError(f"--timeout must be a finite number of seconds > 0, got {args.timeout:g}")
    since = parse_duration(args.since) if args.since is not None else None
    backends = [flag for flag, v in (("--from-jaeger", args.from_jaeger), ("--from-phoenix", args.from_phoenix)) if v]
    for flag, value, needs in (
        ("--service", args.service, "--from-jaeger"),
        ("--project", args.project, "--from-phoenix"),
    ):
        if value is not None and needs not in backends:
            raise ChaoskitError(f"{flag} is for {needs}; give {needs} URL {flag} NAME")
    if len(backends) > 1:
        raise ChaoskitError("--from-jaeger and --from-phoenix cannot be used together; read one backend at a time")
    if backends:
        flag = backends[0]
        if args.traces:
            raise ChaoskitError(
                f"{flag} reads traces from the backend; do not also give trace files (got {args.traces[0]!r})"
            )
        if args.format is not None:
            raise ChaoskitError(f"--format is for trace files; {flag} knows the format of its answer")
    else:
        if args.write_back:
            raise ChaoskitError("--write-back is for --from-jaeger or --from-phoenix: a trace file has no backend")
        for opt, value in (("--since", args.since), ("--limit", args.limit), ("--timeout", args.timeout)):
            if value is not None:
                raise ChaoskitError(f"{opt} is for --from-jaeger or --from-phoenix, not for trace files")
        if not args.traces:
            raise ChaoskitError(
                "give trace files, or --from-jaeger URL --service NAME, or --from-phoenix URL --project NAME"
            )
    if backends:
        # imported when used: the HTTP client is off the path of grading files
        from chaoskit.traces._jaeger import check_http_url, check_jaeger_url
    if args.from_jaeger is not None:
        check_jaeger_url(args.from_jaeger)
        if not args.service:
            raise ChaoskitError("--from-jaeger needs --service NAME (the service.name the agent exported with)")
    if args.write_back and args.from_jaeger is not None and not _otlp_endpoint_set():
        raise ChaoskitError(
            "--write-back to Jaeger sends the grades over OTLP: set OTEL_EXPORTER_OTLP_ENDPOINT to Jaeger's OTLP "
            "receiver (such as http://localhost:4318, or OTEL_EXPORTER_OTLP_PROTOCOL=grpc and port 4317)"
        )
    if args.from_phoenix is not None:
        check_http_url(args.from_phoenix, "--from-phoenix", "Phoenix", "http://localhost:6006")
        if not args.project:
            raise ChaoskitError("--from-phoenix needs --project NAME (the Phoenix project the spans went to)")
    args.since_delta = since if since is not None else parse_duration(_DEFAULT_SINCE)
    args.since = args.since if args.since is not None else _DEFAULT_SINCE
    args.jaeger_limit = args.limit if args.limit is not None else _DEFAULT_LIMIT
    args.timeout = args.timeout if args.timeout is not None else _DEFAULT_TIMEOUT


def _otlp_endpoint_set() -> bool:
    return any(
        os.environ.get(v, "").strip() for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def backend_episodes(args: argparse.Namespace, progress: Callable[[str], None] | None) -> Iterator[EpisodeRecord]:
    """The episodes of ``--from-jaeger`` or ``--from-phoenix``, read page by page (Jaeger: time windows;
    Phoenix: cursor pages) and handed out as each completes; ``progress`` gets a line after each page. A source
    that holds nothing to grade, or an episode read without its root span, raises a TraceReadError."""
    source = args.from_jaeger or args.from_phoenix
    for ep in _paged(args, progress):
        if ep.id is not None and ep.span_id is None:
            # a page never served, or an episode begun before the window: part of it only, never a verdict
            raise TraceReadError(
                f"episode {ep.id}: {len(ep.attempts)} of its tool attempt span(s) were read but not its "
                "invoke_agent span, so spans of it are missing (a page the backend did not serve, or an episode "
                "that started before the time asked for: widen --since) and the missing ones could change the "
                "verdict",
                source=source,
            )
        yield ep


def _paged(args: argparse.Namespace, progress: Callable[[str], None] | None) -> Iterator[EpisodeRecord]:
    if args.from_jaeger is not None:
        from chaoskit.traces._jaeger import JaegerPages

        jaeger = JaegerPages(
            args.from_jaeger,
            args.service,
            args.since_delta,
            limit=args.jaeger_limit,
            timeout=args.timeout,
            progress=progress,
        )
        yield from jaeger
        if not jaeger.answers:
            raise TraceReadError(
                f"nothing to grade: Jaeger has no traces for service {args.service!r} in the last {args.since}",
                source=args.from_jaeger,
            )
        if not jaeger.count:
            raise nothing_to_grade(args.from_jaeger, jaeger.builder)
        return
    from chaoskit.traces._phoenix import PhoenixPages  # imported when used: Phoenix is rarely the source

    # without --limit, no limit: pages keep memory bounded whatever the project holds
    phoenix = PhoenixPages(
        args.from_phoenix,
        args.project,
        since=args.since_delta,
        limit=args.limit,
        timeout=args.timeout,
        progress=progress,
    )
    try:
        yield from phoenix
    except TraceReadError as exc:
        if not exc.reason.startswith("nothing to grade") or not phoenix.spans:
            raise
        raise TraceReadError(
            f"nothing to grade: Phoenix project {args.project!r} holds no chaoskit spans in the last {args.since}; "
            "are the agent's tools wrapped with @chaos or a chaoskit integration, and exported to this project?",
            source=args.from_phoenix,
        ) from None


def write_back(args: argparse.Namespace, graded: Sequence[tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]]) -> str:
    """Send the grades of ``graded`` back to the backend they were read from; a sentence saying where."""
    from chaoskit.grading._evaluation import phoenix_annotations, write_back_otlp

    if args.from_phoenix is not None:
        from chaoskit.traces._phoenix import annotate_spans

        sent = annotate_spans(args.from_phoenix, phoenix_annotations(graded), timeout=args.timeout)
        return f"wrote {sent} annotation(s) on {len(graded)} episode span(s) back to Phoenix at {args.from_phoenix}"
    where = write_back_otlp(graded, args.service)
    return f"wrote the grades of {len(graded)} episode(s) back to Jaeger's trace(s), via {where}"
