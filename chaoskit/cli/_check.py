"""``chaoskit check TRACES...``: grade recovery from exported traces (files, a running Jaeger or Phoenix).

Exit status: 0 when every check passed (warnings allowed), 1 when the traces were graded and a check failed,
2 when they could not be graded (unreadable, untrustworthy, nothing to grade, an episode chaos did not reach,
the backend unreachable) or on a usage error. A trace that cannot be graded is never a pass. The verdicts come
from ``checks.run_checks`` and ``score`` alone.

Trace files are graded as they are read, one episode at a time (``Trace.iter_episodes``), in memory bounded by
the largest episode; a large JSON Lines file is cut into parts graded in parallel processes (``--workers``), and
the episodes that straddle parts are joined and graded at the end. The report is kept in a temporary file and
printed only once every file was read, so a file found ungradable at its end prints nothing but the reason.

Many files (a directory, a glob) or parts of one are graded as shards in parallel. A shard is a whole file or a
part of a large JSON Lines file. Each is read by its own streaming ``TraceBuilder`` (in this process, a process
of a pool, or a Ray task reading its file where it lies) and grades the episodes complete within it; an episode
whose spans are split across shards (a rotated file) stays open in each, and the spans left open are joined here
and graded once, whole. A span of an episode a shard already graded makes the files be read again whole, as for
one file; an episode still missing spans after the join cannot be graded.

The sources are exclusive: trace files, or ``--from-jaeger URL --service NAME``, or ``--from-phoenix URL
--project NAME`` (read in pages, with progress; ``--write-back`` sends the grades to the backend they came from).
``--since``, ``--limit`` and ``--timeout`` apply to the two backends, ``--format`` to files.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import itertools
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from chaoskit._errors import ChaoskitError
from chaoskit.cli._judge_options import add_judge_options, judge_and_gate
from chaoskit.grading._evidence import CANNOT_GRADE
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import Score, score
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, run_checks
from chaoskit.semconv import EPISODE_ID
from chaoskit.traces._build import LateSpanError, TraceBuilder
from chaoskit.traces._readers import (
    FORMATS,
    EpisodeStream,
    file_documents,
    guarded,
    nothing_to_grade,
    read_part,
    read_with_builder,
    split_jsonl,
)
from chaoskit.traces._records import EpisodeRecord, TraceReadError
from chaoskit.traces._trace import Trace

__all__ = [
    "PARALLEL_BYTES",
    "add_source_options",
    "backend_episodes",
    "check_sources",
    "expand_traces",
    "grade_files",
    "grade_shards",
    "parse_duration",
    "write_back",
]


#: a shard: a file, and the bytes of it to read (``None, None``: the whole file)
Shard = tuple[str, int | None, int | None]

_GLOB_CHARS = frozenset("*?[")
#: a JSON Lines file at least this large is graded by one process per core
PARALLEL_BYTES = 48 << 20


def expand_traces(args: list[str]) -> list[str]:
    """The trace files named by ``args``: files as given, the files of a directory (not hidden, by name; empty
    ones skipped, a rotating exporter's fresh file), the files a glob matches. A directory or a glob that names
    no file is an error, as a missing file is."""
    files: list[str] = []
    for arg in args:
        if not arg.strip():
            raise TraceReadError("expected the path of a trace file, got an empty argument", source=repr(arg))
        if os.path.isdir(arg):
            found = [str(p) for p in sorted(Path(arg).iterdir()) if not p.name.startswith(".") and _nonempty(p)]
            if not found:
                raise TraceReadError("the directory holds no trace file (only empty or hidden files)", source=arg)
            files += found
        elif not os.path.exists(arg) and _GLOB_CHARS & set(arg):
            found = [p for p in sorted(glob.glob(arg)) if _nonempty(Path(p))]
            if not found:
                raise TraceReadError("no trace file matches this pattern (empty files are skipped)", source=arg)
            files += found
        else:
            files.append(arg)
    # a file named twice (a glob and a directory) is read once: its spans would be taken for copies anyway
    return list(dict.fromkeys(files))


def _nonempty(p: Path) -> bool:
    try:
        return p.is_file() and p.stat().st_size > 0
    except OSError:
        return True  # let the reader say why it cannot be read


def grade_files(
    files: list[str],
    fmt: str | None,
    workers: int | None,
    grader: Any,  # chaoskit.cli._check's _Grader: its class goes to the workers in each job
    executor: str | None,
    ray_address: str | None = None,
) -> None:
    """Grade ``files`` as one trace: each a shard (a large JSON Lines file cut into ``workers`` parts)."""
    from chaoskit.runner._executor_process import default_workers

    if workers is None:
        big = sum(os.path.getsize(f) for f in files if os.path.isfile(f)) >= PARALLEL_BYTES
        workers = min(default_workers(), 8) if (big or executor is not None) else 1
    shards: list[Shard] = []
    for f in files:
        bounds = split_jsonl(Path(f), workers) if workers > 1 and _large(f) else None
        shards += [(f, a, b) for a, b in itertools.pairwise(bounds)] if bounds else [(f, None, None)]
    mark = grader.mark()
    try:
        run_on = executor or ("process" if workers > 1 else None)
        merged = grade_shards(shards, fmt, grader, run_on, workers, ray_address)
    except LateSpanError:
        grader.rollback(mark)
        episodes, merged = read_whole(files, fmt)
        for ep in episodes:
            grader.add(_source_of(merged, ep), ep)
    if grader.n == mark[1]:
        raise nothing_to_grade(", ".join(files), merged)


def _large(path: str) -> bool:
    try:
        return os.path.getsize(path) >= PARALLEL_BYTES
    except OSError:
        return False


def read_whole(files: list[str], fmt: str | None) -> tuple[list[EpisodeRecord], TraceBuilder]:
    """Every file read whole into one builder, as ``Trace.load`` reads one: the exact reason for a late span."""
    builder = TraceBuilder(files[0])
    for f in files:
        builder.source = f
        with guarded(builder, fmt):
            for _ in file_documents(Path(f), fmt, builder):
                pass
    with guarded(builder, fmt):
        return builder.build(), builder


def _source_of(builder: TraceBuilder, ep: EpisodeRecord) -> str:
    """The file an episode's root span (else its first attempt) was read from."""
    if ep.span_id is not None and ep.trace_id is not None:
        return builder.origin((ep.trace_id, ep.span_id))
    if ep.attempts:
        return builder.origin((ep.attempts[0].trace_id, ep.attempts[0].span_id))
    return builder.source


def grade_shards(
    shards: list[Shard],
    fmt: str | None,
    grader: Any,  # chaoskit.cli._check's _Grader: its class goes to the workers in each job
    executor: str | None,
    workers: int,
    ray_address: str | None = None,
) -> TraceBuilder:
    """Grade each shard on ``executor`` (None: here, one after the other), then here the episodes whose spans
    were left open in several shards, joined; the builder that joined them, for a "nothing to grade" message."""
    jobs = [
        (type(grader), path, fmt, a, b, grader.names, grader.params, grader.json_mode, executor == "ray")
        for path, a, b in shards
    ]
    run = {None: _serial, "process": _processes, "ray": _ray_tasks}[executor]
    parts = run(jobs, workers, ray_address)
    try:
        for job, part in zip(jobs, parts, strict=True):
            if "error" in part:
                reason, line, late = part["error"]
                raise (LateSpanError if late else TraceReadError)(reason, source=job[1], line=line)
        _each_file_holds_spans(jobs, parts)
        merged = TraceBuilder(shards[0][0])
        for part in parts:
            grader.append(part)
            merged.spans_seen += part["spans_seen"]
            merged.notes += part["notes"]
        for i, (job, part) in enumerate(zip(jobs, parts, strict=True)):
            for content, line in part["open"]:
                _not_graded_elsewhere(content, line, parts, i, job[1])
            where = f"part {i + 1} of {len(parts)}" if job[3] is not None else f"file {i + 1} of {len(parts)}"
            merged.adopt(part["open"], where, job[1])
        with guarded(merged, fmt):
            episodes = merged.build()
    finally:
        for part in parts:
            if "report" in part:
                os.unlink(part["report"])
    for ep in episodes:
        grader.add(_source_of(merged, ep), ep)
    return merged


def _each_file_holds_spans(jobs: list[tuple[Any, ...]], parts: list[dict[str, Any]]) -> None:
    """A file given that holds no chaoskit span (of an episode graded there or left open) is a mistake to name."""
    met: dict[str, TraceBuilder] = {}
    holding: set[str] = set()
    for job, part in zip(jobs, parts, strict=True):
        seen = met.setdefault(job[1], TraceBuilder(job[1]))
        seen.spans_seen += part["spans_seen"]
        seen.notes += part["notes"]
        if part["n"] or part["open"]:
            holding.add(job[1])
    for path, seen in met.items():
        if path not in holding:
            raise nothing_to_grade(path, seen)


def _serial(jobs: list[tuple[Any, ...]], workers: int, address: str | None) -> list[dict[str, Any]]:
    return [grade_shard(job) for job in jobs]


def _processes(jobs: list[tuple[Any, ...]], workers: int, address: str | None) -> list[dict[str, Any]]:
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    # fork shares the imported modules (no second start-up); spawn where fork is unsafe: other platforms, or
    # other threads running (one may hold a lock the child needs, e.g. when check runs inside a test process)
    method = "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(grade_shard, jobs))


def _ray_tasks(jobs: list[tuple[Any, ...]], workers: int, address: str | None) -> list[dict[str, Any]]:
    """Each shard a Ray task that reads its file where it lies (the same path on every node: a shared volume),
    started or joined as ``chaoskit run --executor ray`` does; the reports stream back as tasks finish."""
    from chaoskit.runner._executor_ray import RayExecutor, _ray

    ray = _ray()
    ex = RayExecutor(workers, address)
    started = ex._start(ray)
    try:
        remote = ray.remote(num_cpus=1, max_retries=1)(grade_shard)
        # at most twice the cluster's CPUs in flight: the reports come back as others are read
        window = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
        todo: Iterator[tuple[int, tuple[Any, ...]]] = iter(enumerate(jobs))
        pending: dict[Any, int] = {}
        parts: list[dict[str, Any]] = [{} for _ in jobs]

        def submit(batch: Iterator[tuple[int, tuple[Any, ...]]]) -> None:
            for i, job in batch:
                pending[remote.remote(job)] = i

        submit(itertools.islice(todo, window))
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                parts[pending.pop(ref)] = ray.get(ref)
                submit(itertools.islice(todo, 1))
        return parts
    finally:
        if started:
            ray.shutdown()


def _not_graded_elsewhere(content: Any, line: int | None, parts: list[dict[str, Any]], i: int, source: str) -> None:
    """A span left open in shard ``i`` must not belong to an episode another shard already graded."""
    is_root = isinstance(content, dict)
    tid, sid = (content["trace_id"], content["span_id"]) if is_root else (content.trace_id, content.span_id)
    eid = content["attrs"].get(EPISODE_ID) if is_root else content.episode_id
    fp = bytes.fromhex(sid + tid[-16:])
    for j, other in enumerate(parts):
        if j == i:
            continue
        spans, ids, windows = other["closed"]
        at = spans.find(fp)
        while at >= 0 and at % 24:
            at = spans.find(fp, at + 1)
        if at >= 0 or (eid is not None and eid in ids):
            raise LateSpanError(f"span {sid}: episode {eid} was graded before this span", source=source, line=line)
        if eid is None and not is_root:
            # an attempt made in another process (a proxy's) for an episode that shard graded
            start, end = content.start_time * 1e6 + 0.5, content.end_time * 1e6 - 0.5
            if any(a <= start and end <= b for a, b in windows.get(tid, ())):
                raise LateSpanError(f"span {sid}: its episode was graded before this span", source=source, line=line)


def grade_shard(job: tuple[Any, ...]) -> dict[str, Any]:
    """In a worker: grade the episodes complete within one shard; their report in a file (``inline``: in the
    answer, for a worker on another machine), and what the joining needs: the spans left open, those graded."""
    grader_class, path, fmt, start, end, names, params, json_mode, inline = job
    builder = TraceBuilder(path, stream=True)
    builder.keep_closed_ids = True
    grader = grader_class(names, params, json_mode=json_mode)
    out: dict[str, Any] = {}
    try:
        for ep in read_part(Path(path), fmt, start or 0, end, builder):
            grader.add(path, ep)
        grader.out.seek(0)
        if inline:
            out["text"] = grader.out.read()
        else:
            fd, out["report"] = tempfile.mkstemp(prefix="chaoskit-check-", suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                shutil.copyfileobj(grader.out, fh, 1 << 20)
    except TraceReadError as exc:
        return {"error": (exc.reason, exc.line, isinstance(exc, LateSpanError))}
    finally:
        grader.close()
    out.update(
        n=grader.n,
        n_fail=grader.n_fail,
        n_warn=grader.n_warn,
        failed=grader.failed,
        ungradable=grader.ungradable,
        open=builder.open_spans(),
        closed=builder.closed_spans(),
        spans_seen=builder.spans_seen,
        notes=builder.notes,
    )
    return out


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
        from chaoskit.traces._jaeger import check_jaeger_url
        from chaoskit.traces._phoenix import check_phoenix_url
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
        check_phoenix_url(args.from_phoenix)
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


_dumps: Callable[..., bytes] | None = None
_INDENT = 0
with contextlib.suppress(ImportError):
    from orjson import OPT_INDENT_2 as _INDENT
    from orjson import dumps as _dumps


_EXIT_CODES = """exit status:
  0  graded: every check passed (warnings allowed)
  1  graded: at least one check failed
  2  could not grade, never a pass: a file or backend answer that cannot be read, a chaoskit span that
     cannot be graded (no ids or times, an end before its start, a tool span without chaoskit.attempt, a
     chaoskit attribute of the wrong type, a span id used twice with different content, an episode missing
     some of its attempts), nothing to grade (no chaoskit spans, no traces in Jaeger or Phoenix), an
     episode chaos did not reach (its plan's faults name tools but none was attempted through chaoskit,
     or the model asked for them and they ran without it), the backend unreachable, too slow (--timeout)
     or answering an error; or a usage error; or, with --write-back, graded (and printed) but the grades
     could not be sent back. The reason is printed as one line naming the file or URL, the line (or the
     episode) and the span."""


def add_parser(sub: Any) -> None:
    """Register ``chaoskit check`` and its options on the subcommand parsers ``sub``."""
    p = sub.add_parser(
        "check",
        help="grade agent recovery from exported traces (OTLP-JSON, JSON Lines, Jaeger JSON, Jaeger, Phoenix)",
        description="Read traces, run recovery checks per episode, print a table; exit 1 when a check fails, "
        "2 when the traces cannot be graded.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "traces",
        nargs="*",
        metavar="TRACES",
        help="trace files, directories of them (a Collector's rotating file exporter) or globs (format sniffed "
        "from content); an episode split across files is graded once, whole",
    )
    p.add_argument("--format", choices=FORMATS, help="force the file format instead of sniffing it")
    p.add_argument(
        "--checks",
        metavar="NAMES",
        help=f"comma-separated checks (default: {','.join(DEFAULT_CHECKS)}); known: {','.join(REGISTRY)}",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument(
        "--max-attempts",
        action="append",
        default=[],
        metavar="TOOL=N",
        help="also check that TOOL was attempted at most N times (repeatable)",
    )
    p.add_argument(
        "--min-attempts",
        action="append",
        default=[],
        metavar="TOOL=N",
        help="also check that TOOL was retried at least N times unless it succeeded (repeatable)",
    )
    p.add_argument(
        "--retry-storm",
        type=int,
        default=3,
        metavar="N",
        help="no_retry_storm limit: identical calls in a row allowed (default 3)",
    )
    p.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool the task needs (repeatable); default: every tool that only ever failed",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="grade a JSON Lines trace file in N processes (default: one per core, at most 8, for a file of "
        f"{PARALLEL_BYTES >> 20} MB or more; else 1)",
    )
    p.add_argument(
        "--executor",
        choices=("process", "ray"),
        help="grade the files (and the parts of large JSON Lines files) as tasks of this executor, as chaoskit run "
        "does: a pool of processes, or Ray tasks each reading its file where it lies (pip install "
        "'chaoskit[ray]'); the verdicts are the same (default: in this process, or processes for a large file)",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: join this Ray cluster (default $RAY_ADDRESS, else a local Ray in this process)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress on stderr while reading a backend's pages (shown only on a terminal)",
    )
    add_source_options(p)
    add_judge_options(p)
    p.set_defaults(func=run)


def _limits(values: list[str], flag: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        tool, sep, n = v.rpartition("=")
        if not sep or not tool or not n.isdigit():
            raise ChaoskitError(f"{flag} expects TOOL=N with N a whole number, got {v!r}")
        out[tool] = int(n)
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``chaoskit check`` with parsed arguments; returns the exit status (0 passed, 1 failed, 2 ungradable)."""
    names = [n.strip() for n in args.checks.split(",") if n.strip()] if args.checks is not None else None
    if names is not None:
        if not names:
            raise ChaoskitError(f"--checks names no check; known: {', '.join(REGISTRY)}")
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise ChaoskitError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    if args.retry_storm < 1:
        raise ChaoskitError(f"--retry-storm must be a whole number >= 1, got {args.retry_storm}")
    if args.workers is not None and args.workers < 1:
        raise ChaoskitError(f"--workers must be a whole number >= 1, got {args.workers}")
    check_sources(args)
    judge, gates = judge_and_gate(args)
    if judge is not None and (args.executor is not None or (args.workers is not None and args.workers > 1)):
        raise ChaoskitError(
            "--judge grades in one process (the model is the bottleneck): leave out --workers and --executor"
        )
    if args.ray_address is not None and args.executor != "ray":
        raise ChaoskitError("--ray-address is for --executor ray")
    if args.executor is not None and (args.from_jaeger is not None or args.from_phoenix is not None):
        raise ChaoskitError("--executor grades trace files; leave it out with --from-jaeger or --from-phoenix")
    params: dict[str, Any] = {
        "n": args.retry_storm,
        "required_tools": args.require or None,
        "max_attempts": _limits(args.max_attempts, "--max-attempts"),
        "min_attempts": _limits(args.min_attempts, "--min-attempts"),
    }
    if names is not None:
        for flag in ("max_attempts", "min_attempts"):
            if params[flag] and flag not in names:
                names.append(flag)

    grader = _Grader(names, params, json_mode=args.json, keep=args.write_back)
    grader.judge, grader.gates = judge, gates
    try:
        if args.from_jaeger is not None or args.from_phoenix is not None:
            source = args.from_jaeger or args.from_phoenix
            with PageProgress(sys.stderr, enabled=not args.quiet) as progress:
                for ep in backend_episodes(args, progress):
                    grader.add(source, ep)
        else:
            files = expand_traces(args.traces)
            if len(files) == 1 and args.executor is None:
                _grade_file(files[0], args.format, args.workers, grader)
            else:
                grade_files(files, args.format, args.workers, grader, args.executor, args.ray_address)
        grader.emit(sys.stdout)
    except TraceReadError as exc:
        print(f"chaoskit: cannot grade: {exc}", file=sys.stderr)
        return 2
    finally:
        grader.close()
    if args.write_back:
        try:
            print(f"chaoskit: {write_back(args, grader.kept)}", file=sys.stderr)
        except TraceReadError as exc:
            # graded and printed; only the copy on the backend is missing: still not a clean exit
            print(f"chaoskit: graded, but could not write the grades back: {exc}", file=sys.stderr)
            return 2
    for line in grader.ungradable:
        print(f"chaoskit: cannot grade: {line}", file=sys.stderr)
    if grader.ungradable:
        return 2  # an episode chaos did not reach is never a pass, nor a graded failure
    if grader.failed:
        return 1
    # a gating judge that could not judge an episode leaves it ungraded: never a pass
    return 2 if gates and any(j["verdict"] == "cannot_judge" for j in grader.judged) else 0


def _grade_file(path: str, fmt: str | None, workers: int | None, grader: _Grader) -> None:
    """Grade the episodes of one trace file as they are read: in parallel parts for a large JSON Lines file.
    A span of an episode already graded (see ``LateSpanError``) makes the file be read again whole."""
    if not path.strip():
        raise TraceReadError("expected the path of a trace file, got an empty argument", source=repr(path))
    file = Path(path)
    if grader.judge is not None:
        workers = 1
    if workers is None:
        try:
            large = file.is_file() and file.stat().st_size >= PARALLEL_BYTES
        except (OSError, ValueError):
            large = False
        workers = min(os.cpu_count() or 1, 8) if large else 1
    bounds = split_jsonl(file, workers) if workers > 1 else None
    mark = grader.mark()
    builder: TraceBuilder
    try:
        if bounds is not None:
            shards: list[tuple[str, int | None, int | None]] = [
                (str(file), a, b) for a, b in itertools.pairwise(bounds)
            ]
            builder = grade_shards(shards, fmt, grader, "process", len(shards))
        else:
            stream = EpisodeStream(path, fmt)
            builder = stream.builder
            for ep in stream:
                grader.add(path, ep)
    except LateSpanError:
        grader.rollback(mark)
        episodes, builder = read_with_builder(file, fmt)
        for ep in episodes:
            grader.add(path, ep)
    if grader.n == mark[1]:
        raise nothing_to_grade(path, builder)


class _Grader:
    """Grades episodes one at a time and keeps their rendered report in a temporary file, printed once every
    source was read: a trace found ungradable at its end prints nothing but the reason, never a pass."""

    def __init__(self, names: list[str] | None, params: dict[str, Any], *, json_mode: bool, keep: bool = False) -> None:
        self.names, self.params, self.json_mode = names, params, json_mode
        #: with ``keep`` (``--write-back``), each episode and its check results, to send to the backend
        self.keep = keep
        self.kept: list[tuple[EpisodeRecord, list[dict[str, Any]]]] = []
        self.out = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.n = self.n_fail = self.n_warn = 0
        self.failed = False
        #: one line for each episode that cannot be graded (``cannot_grade``): where, which, and why
        self.ungradable: list[str] = []
        #: the judge (``--judge``), whether it gates, and its entries so far
        self.judge: Any = None
        self.gates = False
        self.judged: list[dict[str, Any]] = []

    def add(self, source: str, ep: EpisodeRecord) -> None:
        """Grade one episode and render it."""
        one = Trace([ep])
        results = run_checks(one, self.names, **self.params)
        sc = score(one, checks=results, required_tools=self.params["required_tools"])
        if self.keep:
            self.kept.append((ep, [r.to_dict() for r in results]))
        bad = [r for r in results if not r.passed]
        judged = self._judge(ep, results) if self.judge is not None else None
        self.failed = self.failed or bool(bad) or (self.gates and judged is not None and judged["verdict"] == "fail")
        label = f"episode {ep.name or '(no name)'} (id {ep.id[:12] if ep.id else 'outside any episode'})"
        self.ungradable += [
            f"{source}: {label}: {r.message.removeprefix('cannot grade: ')}" for r in bad if r.name == CANNOT_GRADE
        ]
        self.n += 1
        self.n_fail += len(bad)
        self.n_warn += sum(1 for r in results if r.severity == "warn")
        if self.json_mode:
            item = _episode_json(source, ep, results, sc)
            if judged is not None:
                item["judge"] = judged
            self.out.write(",\n" + _render(item))
        else:
            self.out.write(_episode_table(source, ep, results, sc, judged))

    def _judge(self, ep: EpisodeRecord, results: list[CheckResult]) -> dict[str, Any] | None:
        from chaoskit.judge import entry

        judged = entry(self.judge.episode(ep), [r.to_dict() for r in results], gates=self.gates)
        self.judged.append(judged)
        return judged

    def mark(self) -> tuple[int, int, int, int, bool, int]:
        """Where the report stands, to go back to with :meth:`rollback`."""
        return (self.out.tell(), self.n, self.n_fail, self.n_warn, self.failed, len(self.ungradable))

    def rollback(self, mark: tuple[int, int, int, int, bool, int]) -> None:
        """Forget what was graded since ``mark``."""
        pos, self.n, self.n_fail, self.n_warn, self.failed, kept = mark
        del self.ungradable[kept:]
        self.out.seek(pos)
        self.out.truncate()

    def append(self, part: dict[str, Any]) -> None:
        """Add the report of a part graded by a worker process."""
        if "text" in part:  # from a worker on another machine
            self.out.write(part["text"])
        else:
            with open(part["report"], encoding="utf-8") as fh:
                shutil.copyfileobj(fh, self.out, 1 << 20)
        self.n += part["n"]
        self.n_fail += part["n_fail"]
        self.n_warn += part["n_warn"]
        self.failed = self.failed or part["failed"]
        self.ungradable += part["ungradable"]

    def emit(self, stream: TextIO) -> None:
        """Print the whole report."""
        if self.judge is not None:
            from chaoskit.judge import judge_line, summary_of
        self.out.seek(0)
        if self.json_mode:
            stream.write(f'{{\n  "passed": {json.dumps(not self.failed)},\n')
            if self.ungradable:  # why the exit status is 2: the episodes chaos did not reach
                stream.write(f'  "cannot_grade": {json.dumps(self.ungradable, ensure_ascii=False)},\n')
            stream.write('  "episodes": [')
            if self.n:
                self.out.read(2)  # the first episode's separator
                stream.write("\n")
                shutil.copyfileobj(self.out, stream, 1 << 20)
                stream.write("\n  ")
            stream.write("]")
            if self.judge is not None:
                totals = summary_of(self.judged, self.judge.calibration)
                stream.write(',\n  "judge": ' + json.dumps(totals, ensure_ascii=False))
            stream.write("\n}\n")
            return
        if not self.n:
            print("no chaoskit episodes found in the given traces", file=stream)
            return
        shutil.copyfileobj(self.out, stream, 1 << 20)
        if self.judge is not None:
            print(judge_line(summary_of(self.judged, self.judge.calibration)), file=stream)
        print(
            f"{self.n} episode(s): {self.n_fail} failed check(s), {self.n_warn} warning(s)"
            + (" — CANNOT GRADE" if self.ungradable else " — FAILED" if self.failed else " — ok"),
            file=stream,
        )

    def close(self) -> None:
        """Delete the temporary report."""
        self.out.close()


class PageProgress:
    """How far a backend's paged read is, on one line of stderr redrawn after each page, as ``chaoskit run``
    shows its progress: only on a terminal, and not with ``--quiet``; the line is cleared at the end, so the
    report and any error start on a clean line."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.width = 0

    def __call__(self, line: str) -> None:
        if self.enabled:
            text = f"chaoskit: {line}"
            self.stream.write("\r" + text.ljust(self.width))
            self.stream.flush()
            self.width = len(text)

    def __enter__(self) -> PageProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def _render(item: dict[str, Any]) -> str:
    """An episode's JSON, indented by two under the document's ``episodes`` list: by orjson when it writes
    exactly what ``json.dumps(indent=2, ensure_ascii=False)`` writes (whose indenting is pure Python), else by
    the latter."""
    text = None
    if _dumps is not None and all(_same_float(x) for x in _floats(item["score"])):
        with contextlib.suppress(TypeError):  # a lone surrogate, an integer past 64 bits: json writes them
            text = _dumps(item, option=_INDENT).decode()
    if text is None:
        text = json.dumps(item, indent=2, ensure_ascii=False)
    # each line of the document gets the indent (no line of indented JSON is blank: textwrap.indent's result)
    return "    " + text.replace("\n", "\n    ")


def _floats(score: dict[str, Any]) -> list[Any]:
    return [score["value"], *(p[k] for p in score["parts"] for k in ("weight", "credit", "points"))]


def _same_float(x: Any) -> bool:
    # orjson writes 2.5e-05 as 0.000025 and NaN as null; json and orjson agree on every other float
    return type(x) is not float or x == 0.0 or 1e-4 <= abs(x) < 1e16


def _episode_json(source: str, ep: EpisodeRecord, results: list[CheckResult], sc: Score) -> dict[str, Any]:
    return {
        "source": source,
        "id": ep.id,
        "name": ep.name,
        "outcome": ep.outcome,
        "output": ep.output,
        "trace_id": ep.trace_id,
        "attempts": len(ep.attempts),
        "checks": [r.to_dict() for r in results],
        "score": sc.to_dict(),
    }


def _episode_table(
    source: str, ep: EpisodeRecord, results: list[CheckResult], sc: Score, judged: dict[str, Any] | None = None
) -> str:
    label = ep.name or "(no name)"
    eid = ep.id[:12] if ep.id else "outside any episode"
    lines = [
        f"episode {label}  id {eid}  outcome {ep.outcome or '?'}  attempts {len(ep.attempts)}  "
        f"score {sc.value:.1f}/100  ({source})"
    ]
    width = max([len("CHECK"), *(len(r.name) for r in results)])
    lines.append(f"  {'CHECK':<{width}}  RESULT  MESSAGE")
    for r in results:
        lines.append(f"  {r.name:<{width}}  {r.severity.upper():<6}  {r.message}")
        if r.evidence and r.severity != "pass":
            lines.append(f"  {'':<{width}}          spans: {', '.join(r.evidence)}")
    if judged is not None:
        from chaoskit.judge import judge_rows

        lines.extend(judge_rows(judged, width))
    return "\n".join(lines) + "\n\n"
