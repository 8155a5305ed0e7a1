"""``chaoskit check`` grades a trace file larger than the memory it is allowed, and gives the verdicts the
whole-file reader gives on the same data (peak resident memory measured with ``resource`` in a subprocess)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from test_streaming import _by_id, _episodes, _graded

from chaoskit import Trace

_PROBE = r"""
import resource, subprocess, sys
p = subprocess.run([sys.executable, "-m", "chaoskit", "check", "--json", *sys.argv[1:]], stdout=open(sys.argv[-1] + ".out", "w"))
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

_MB = 1 << 20


def _big_file(path: Path, copies: int, padding_mb: int) -> int:
    """``copies`` lines, each twelve real episodes with fresh ids and a foreign span carrying ``padding_mb`` MB."""
    spans, res, scope = _episodes(12)
    text = json.dumps(spans)
    ids = set(re.findall(r'"(?:traceId|spanId|parentSpanId)": "([0-9a-f]+)"', text))
    ids |= {
        a["value"]["stringValue"] for s in spans for a in s.get("attributes", []) if a["key"] == "chaoskit.episode.id"
    }
    pattern = re.compile("|".join(sorted(ids, key=len, reverse=True)))
    pad = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat model",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "llm.prompt", "value": {"stringValue": "x" * padding_mb * _MB}}],
    }
    head = json.dumps({"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": scope, "spans": []}]}]})
    before, after = head.rsplit("[]", 1)
    with path.open("w", encoding="utf-8") as fh:
        for k in range(copies):
            fresh = pattern.sub(lambda m, k=k: f"{k:06x}" + m.group(0)[6:], text)
            fh.write(before + fresh[:-1] + ", " + json.dumps(pad) + "]" + after + "\n")
    return path.stat().st_size


def test_a_file_larger_than_the_allowed_memory_is_graded_as_a_whole_read_grades_it(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    size = _big_file(path, copies=40, padding_mb=4)
    allowed = 140 * _MB
    assert size > allowed
    probe = subprocess.run([sys.executable, "-c", _PROBE, "--workers", "1", str(path)], capture_output=True, text=True)
    rc, peak_kb = map(int, probe.stdout.split())
    assert rc == 1, probe.stderr
    assert peak_kb * 1024 < allowed, f"peak RSS {peak_kb / 1024:.0f} MB for a {size / _MB:.0f} MB file"
    report = json.loads(Path(str(path) + ".out").read_text())
    whole = Trace.load(path).episodes
    assert len(report["episodes"]) == len(whole) == 40 * 12 + 1  # the attempts outside any episode are one
    assert _by_id(report) == [(e, n, tuple(v)) for e, n, v in _graded(whole)]
