"""Starting the proxy: the plan, the span file (written as each call ends), then stdio or HTTP serving."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, Sequence

import anyio

from chaoskit import telemetry

from ._calls import ProxyOptions
from ._episodes import EpisodeCounts, run_dir
from ._plan import load_plan
from ._serve import ProxySetup, serve_http, serve_stdio

__all__ = ["main"]


def main(
    *,
    plan: str | None,
    traces: str | None,
    command: Sequence[str],
    upstream: str | None,
    listen: tuple[str, int] | None,
    ready_file: str | None = None,
    irreversible: Sequence[str] = (),
    idempotent: Sequence[str] = (),
    idempotency_args: Mapping[str, str] | None = None,
    state_dir: str | None = None,
) -> int:
    """Load the plan, open the span file, serve; 0 when the client closed the session."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    sys.setswitchinterval(0.0002)
    # the proxy reads these itself: the engine must neither load the plan (it may hold protocol faults)
    # nor batch spans to the file (they are written one call at a time here)
    for name in ("CHAOSKIT_PLAN", "CHAOSKIT_TRACES_FILE"):
        os.environ.pop(name, None)
    core, shadow, protocol = load_plan(plan)
    # each span written as its call ends, before the answer leaves (a client may kill the proxy on the answer)
    writer = telemetry.SpanFileWriter(traces, at_once=True) if traces else None
    if writer is not None:
        telemetry.add_processor(writer)
    options = ProxyOptions(
        irreversible=frozenset(irreversible),
        idempotent=frozenset(idempotent),
        idempotency_args=dict(idempotency_args or {}),
        transport="tcp" if listen else "pipe",
    )
    # one episode's calls are counted together, whichever proxy process serves them (_episodes)
    counts = EpisodeCounts(run_dir(state_dir), plan, list(command) or [upstream or ""])
    setup = ProxySetup(
        core, shadow, protocol, command=list(command) or None, upstream_url=upstream, options=options, counts=counts
    )
    # uvloop, where installed (the http extra brings it), makes each relayed message cheaper
    backend = {"use_uvloop": importlib.util.find_spec("uvloop") is not None}
    try:
        if listen is None:
            anyio.run(serve_stdio, setup, backend_options=backend)
        else:
            anyio.run(lambda: serve_http(setup, listen[0], listen[1], ready_file=ready_file), backend_options=backend)
    except KeyboardInterrupt:
        return 130
    finally:
        telemetry.flush()
        if writer is not None:
            telemetry.remove_processor(writer)
    return 0
