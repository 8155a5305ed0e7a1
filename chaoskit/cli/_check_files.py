"""``chaoskit check`` over many trace files (a directory, a glob) or parts of one, graded as shards in parallel.

A shard is a whole file or a part of a large JSON Lines file. Each is read by its own streaming ``TraceBuilder``
(in this process, a process of a pool, or a Ray task reading its file where it lies) and grades the episodes
complete within it; an episode whose spans are split across shards (a rotated file) stays open in each, and the
spans left open are joined here and graded once, whole. A span of an episode a shard already graded makes the
files be read again whole, as for one file; an episode still missing spans after the join cannot be graded.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chaoskit.semconv import EPISODE_ID
from chaoskit.traces._build import LateSpanError, TraceBuilder
from chaoskit.traces._chunks import read_part, split_jsonl
from chaoskit.traces._readers import file_documents, guarded, nothing_to_grade
from chaoskit.traces._records import EpisodeRecord, TraceReadError

__all__ = ["PARALLEL_BYTES", "expand_traces", "grade_files", "grade_shards"]

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
