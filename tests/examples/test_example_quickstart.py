"""The README's one-episode demo runs as printed: one real booking, the faults and spans listed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_example_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "agent said: 'Booked LH 401 for Ada.'" in out
    assert "real bookings made: 1" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("execute_tool")]
    assert [(r[1], r[2], r[3]) for r in rows] == [
        ("search_flights", "1", "rate_limit"),
        ("search_flights", "2", "-"),
        ("book_flight", "1", "http"),
        ("book_flight", "2", "-"),
    ]
