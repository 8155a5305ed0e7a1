"""Wall time and peak memory of ``chaoskit check FILE`` on OTLP-JSON Lines files of 10k, 100k (and 1M) spans.

    python benchmarks/bench_check.py                    # 10k, 100k spans, default options
    python benchmarks/bench_check.py --full             # also 1M spans (about 1.6 GB in a temporary folder),
                                                        # --workers 1 and 2, and linearity 10k -> 1M
    python benchmarks/bench_check.py --workers 1,2      # compare --workers values (default: the default)
    python benchmarks/bench_check.py --sizes 10000,50000 --keep /tmp/files   # reuse generated files
    python benchmarks/bench_check.py --floor            # also where the time goes, in one process (CPU s)

Each file is made from the spans of one real episode (chaoskit tools under a fault plan, plus a foreign LLM
span, see ``bench_trace.py``), copied with fresh trace, span and episode ids. ``chaoskit check`` runs in a
subprocess, start-up included; peak RSS is ``ru_maxrss`` of that process and of its worker processes (the
largest one, and their sum as an upper bound). Goals (issues 16, 30): 1M spans < 10 s wall on 2 cores, start-up
included; peak RSS flat across sizes and < 300 MB; time linear from 10k to 1M; 2 workers >= 1.7x one. The load
average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace import write_file

# runs `chaoskit check`, then prints its exit status and the peak RSS (KiB) of it and of each worker it started
_PROBE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "chaoskit", "check", *sys.argv[1:]], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
wall = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall": wall, "maxrss_kb": r.ru_maxrss, "cpu": r.ru_utime + r.ru_stime,
                  "err": p.stderr.decode()[-300:]}))
"""


def measure(path: Path, workers: int | None) -> dict[str, float]:
    """One run of ``chaoskit check`` on ``path`` in a fresh process."""
    extra = [] if workers is None else ["--workers", str(workers)]
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path), *extra], capture_output=True, text=True, check=True)
    r: dict[str, float] = json.loads(out.stdout)
    if r["rc"] not in (0, 1):
        raise SystemExit(f"chaoskit check failed (exit {r['rc']}): {r['err']}")
    return r


_FLOOR = r"""
import gc, json, sys, time
from pathlib import Path
import orjson
path = Path(sys.argv[1])
gc.disable()  # as the readers do while they read
t = time.process_time()
with path.open("rb") as fh:
    for line in fh:
        orjson.loads(line)
parse = time.process_time() - t
gc.enable()
t = time.process_time()
from chaoskit.traces._readers import EpisodeStream
from chaoskit.grading._score import score
from chaoskit.traces._trace import Trace
from chaoskit.grading.checks import run_checks
imports = time.process_time() - t
typed = None
try:  # the typed decoding of the reader alone (msgspec, only the fields grading uses)
    from chaoskit.traces._decode import _decode
except ImportError:
    pass
else:
    gc.disable()
    t = time.process_time()
    with path.open("rb") as fh:
        for line in fh:
            _decode(line)
    typed = time.process_time() - t
    gc.enable()
t = time.process_time()
episodes = list(EpisodeStream(path))
read = time.process_time() - t
t = time.process_time()
for ep in episodes:
    one = Trace([ep])
    score(one, checks=run_checks(one))
checks = time.process_time() - t
print(json.dumps({"parse": parse, "typed": typed, "imports": imports, "read": read, "checks": checks,
                  "episodes": len(episodes)}))
"""


def floor(path: Path) -> dict[str, float]:
    """CPU seconds, in one process: orjson parsing the file alone, the reader's typed decoding (msgspec) alone,
    the grading imports, reading it into episodes (decoding included) and checking them; what bounds
    ``chaoskit check`` whatever the rest of it does."""
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(path)], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="also 1,000,000 spans")
    parser.add_argument("--sizes", help="comma-separated span counts (overrides the defaults)")
    parser.add_argument("--workers", help="comma-separated --workers values; 'd' for the default (default: d)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is shown")
    parser.add_argument("--keep", metavar="DIR", help="write (and reuse) the files in DIR instead of a temp folder")
    parser.add_argument("--floor", action="store_true", help="also the CPU time of each stage, in one process")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [10_000, 100_000]
    if args.full and not args.sizes:
        sizes.append(1_000_000)
    default_workers = "1,2" if args.full else "d"
    workers = [None if w == "d" else int(w) for w in (args.workers or default_workers).split(",")]
    print(f"{os.cpu_count()} CPU(s); python {sys.version.split()[0]}; load average {_load()}")
    walls: dict[tuple[int, int | None], float] = {}
    print(f"{'spans':>9} {'MB':>7} {'workers':>8} {'wall s':>7} {'cpu s':>7} {'us/span':>8} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            path = folder / f"check-{n}.jsonl"
            if not path.exists():
                write_file(path, n)
            size_mb = path.stat().st_size / 1e6
            for w in workers:
                runs = [measure(path, w) for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r["wall"])
                walls[(n, w)] = best["wall"]
                peak = max(r["maxrss_kb"] for r in runs) / 1024
                print(
                    f"{n:>9,} {size_mb:>7.1f} {'default' if w is None else w:>8} {best['wall']:>7.2f} "
                    f"{best['cpu']:>7.2f} {best['wall'] / n * 1e6:>8.1f} {peak:>8.0f}"
                )
            if args.floor:
                f = floor(path)
                typed = "" if f["typed"] is None else f"; typed decoding alone {f['typed']:.2f}"
                print(
                    f"{'':>9} one process, CPU s: orjson parse alone {f['parse']:.2f}{typed}; imports "
                    f"{f['imports']:.2f}; read into {f['episodes']:,} episodes {f['read']:.2f} (decoding "
                    f"included); checks {f['checks']:.2f}"
                )
    _summary(sizes, workers, walls)
    print(f"load average after: {_load()}")
    print("wall = `chaoskit check FILE` start to exit (start-up included); cpu = user + system of it and its")
    print("workers; peak MB = ru_maxrss of the largest of those processes")
    return 0


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _summary(sizes: list[int], workers: list[int | None], walls: dict[tuple[int, int | None], float]) -> None:
    """Linearity (wall per span against the smallest size's) and what a second worker gives."""
    for w in workers:
        base = walls[(sizes[0], w)] / sizes[0]
        growth = ", ".join(f"{n:,}: {walls[(n, w)] / n / base:.2f}" for n in sizes[1:])
        if growth:
            label = "default" if w is None else w
            print(f"workers {label}: wall per span against {sizes[0]:,} spans (1.00 = linear): {growth}")
    if 1 in workers and 2 in workers:
        print("2 workers against 1: " + ", ".join(f"{n:,}: {walls[(n, 1)] / walls[(n, 2)]:.2f}x" for n in sizes))


if __name__ == "__main__":
    raise SystemExit(main())
