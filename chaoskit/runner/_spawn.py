"""Running a command-line agent's child process in its own process group, with a timeout that kills the group."""

from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["spawn"]


def spawn(argv: list[str], env: dict[str, str], timeout: float) -> tuple[str, str | None, str | None]:
    """Run ``argv`` in its own process group: (outcome, output, error); a timeout kills the whole group."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return "crashed", None, f"cannot start {argv[0]!r}: {exc}"
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        stdout, stderr = proc.communicate()
        return "timeout", (stdout or "").strip() or None, f"no answer within {timeout:g}s; process group killed"
    output = (stdout or "").strip() or None
    if proc.returncode != 0:
        tail = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()][-3:]
        return "crashed", output, f"exit status {proc.returncode}" + (": " + " | ".join(tail) if tail else "")
    return "completed", output, None
