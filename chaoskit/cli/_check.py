"""``chaoskit check TRACES...``: grade recovery from exported traces (files, a running Jaeger or Phoenix).

Exit status: 0 when every check passed (warnings allowed), 1 when the traces were graded and a check failed,
2 when they could not be graded (unreadable, untrustworthy, nothing to grade, an episode chaos did not reach,
the backend unreachable) or on a usage error. A trace that cannot be graded is never a pass. The verdicts come
from ``checks.run_checks`` and ``score`` alone.

Trace files are graded as they are read, one episode at a time (``Trace.iter_episodes``), in memory bounded by
the largest episode; a large JSON Lines file is cut into parts graded in parallel processes (``--workers``), and
the episodes that straddle parts are joined and graded at the end. The report is kept in a temporary file and
printed only once every file was read, so a file found ungradable at its end prints nothing but the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from chaoskit._errors import ChaoskitError
from chaoskit.cli._check_files import PARALLEL_BYTES, expand_traces, grade_files, grade_shards
from chaoskit.cli._check_sources import add_source_options, backend_episodes, check_sources, write_back
from chaoskit.cli._judge_options import add_judge_options, judge_and_gate
from chaoskit.grading._evidence import CANNOT_GRADE
from chaoskit.grading._result import CheckResult
from chaoskit.grading._score import Score, score
from chaoskit.grading.checks import DEFAULT_CHECKS, REGISTRY, run_checks
from chaoskit.traces._build import LateSpanError, TraceBuilder
from chaoskit.traces._chunks import split_jsonl
from chaoskit.traces._readers import FORMATS, nothing_to_grade, read_with_builder
from chaoskit.traces._records import EpisodeRecord, TraceReadError
from chaoskit.traces._stream import EpisodeStream
from chaoskit.traces._trace import Trace

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
