"""Counting per episode, not per proxy process: the call counts every proxy serving one episode shares.

A client that opens a session per tool call (``langchain-mcp-adapters``' default ``MultiServerMCPClient``)
starts a new proxy for each call; counted per process, every call would be call 1. The episode is named by its
W3C trace id: the ``traceparent`` the client puts in the request's ``params._meta`` (the mcp 2.x SDK does, from
the current OpenTelemetry span), else the ``TRACEPARENT`` the proxy was started with. The counts of one episode
live in one small JSON file, ``<run dir>/<plan key>-<trace id>.json``, read and rewritten under an exclusive
``flock`` by whichever proxy counts a call; the lock is held while the call is counted and its fault decided,
never while the tool runs. The plan key is a digest of the plan file and the upstream, so that two proxies of
different plans in one trace do not share counts. The run directory is ``--run-dir`` or ``$CHAOSKIT_RUN_DIR``,
else ``chaoskit-mcp-proxy-<uid>`` in the temporary directory; files untouched for a day are removed at start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["EpisodeCounts", "run_dir", "trace_id_of", "traceparent_of"]

log = logging.getLogger("chaoskit.mcp")

_TRACEPARENT: Final = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
#: files of episodes untouched this long are removed when a proxy starts
_STALE_S: Final = 86_400.0

#: ``fcntl.flock`` and its exclusive mode; None where there is none (Windows: counts are kept per proxy process)
_FLOCK: tuple[Callable[[int, int], None], int] | None
try:
    import fcntl

    _FLOCK = (fcntl.flock, fcntl.LOCK_EX)
except ImportError:  # pragma: no cover
    _FLOCK = None


def traceparent_of(params: Mapping[str, Any] | None) -> str | None:
    """The W3C ``traceparent`` in a request's ``params._meta``, when it is a valid one."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    value = meta.get("traceparent") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) and trace_id_of(value) is not None else None


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id of a W3C ``traceparent`` (None when it is not one, or its ids are all zeros)."""
    found = _TRACEPARENT.fullmatch(traceparent.strip().lower()) if isinstance(traceparent, str) else None
    if found is None or not found.group(1).strip("0") or not found.group(2).strip("0"):
        return None
    return found.group(1)


def run_dir(given: str | None) -> Path:
    """Where the episodes' counts are kept: ``given``, ``$CHAOSKIT_RUN_DIR``, or a folder in the temp dir."""
    chosen = given or os.environ.get("CHAOSKIT_RUN_DIR")
    if chosen:
        return Path(chosen)
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"chaoskit-mcp-proxy-{user}"


class EpisodeCounts:
    """The shared counts of the episodes one proxy serves (see the module's docstring)."""

    def __init__(self, directory: Path, plan_file: str | None, upstream: Sequence[str]) -> None:
        self.directory = directory
        digest = hashlib.sha256()
        if plan_file is not None:
            with contextlib.suppress(OSError):
                digest.update(Path(plan_file).read_bytes())
        digest.update(json.dumps(list(upstream)).encode())
        self.key = digest.hexdigest()[:16]
        #: where no file lock exists: the counts of this process only
        self._local: dict[str, dict[str, Any]] = {}
        self._ready = False

    def _prepare(self) -> bool:
        if self._ready:
            return True
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            cutoff = time.time() - _STALE_S
            for old in self.directory.glob("*.json"):
                with contextlib.suppress(OSError):
                    if old.stat().st_mtime < cutoff:
                        old.unlink()
        except OSError as exc:
            log.warning(
                "chaoskit mcp-proxy: cannot use %s for the episodes' counts (%s): counting per process",
                self.directory,
                exc,
            )
            return False
        self._ready = True
        return True

    @contextlib.contextmanager
    def hold(self, trace_id: str) -> Iterator[dict[str, Any]]:
        """The counts of episode ``trace_id``, locked against every other proxy until the block ends (then saved)."""
        if _FLOCK is None or not self._prepare():
            yield self._local.setdefault(trace_id, {})
            return
        path = self.directory / f"{self.key}-{trace_id}.json"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # the agent's call goes on, counted in this process
            log.warning("chaoskit mcp-proxy: cannot open %s (%s): counting this episode per process", path, exc)
            yield self._local.setdefault(trace_id, {})
            return
        try:
            _FLOCK[0](fd, _FLOCK[1])
            with os.fdopen(os.dup(fd), "r+", encoding="utf-8") as fh:
                text = fh.read()
                try:
                    state = json.loads(text) if text.strip() else {}
                except ValueError:
                    log.warning("chaoskit mcp-proxy: %s is not JSON; the episode's counts start again", path)
                    state = {}
                if not isinstance(state, dict):
                    state = {}
                yield state
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps(state, separators=(",", ":")))
                fh.flush()
        finally:
            os.close(fd)  # closing the last descriptor of the file releases the lock
