"""``chaoskit http-proxy``: the HTTP chaos proxy as a subcommand, registered through the ``chaoskit.commands`` group."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

_EPILOG = """\
A plan's `tool:` names a route ("POST /refunds", "GET /orders/{id}") or an operationId of --openapi.
Every request is one tool attempt: faults come back as real HTTP (status codes, Retry-After, a held
connection then 504, a body cut short, latency); `after_write` forwards the request, then answers 500.
Idempotency-Key headers are recorded, so `chaoskit check` tells keyed retries from duplicate writes.
In front of a model provider, POST .../chat/completions and .../v1/messages are model calls: the plan's
`target: model` faults come as the provider sends them (429 + Retry-After, 529/503, cut or rewritten
completions, streams cut at `after_chunks`); they are recorded inside an episode: --episode NAME
makes the proxy's whole run one (see docs/faults.md).

Safety: binds 127.0.0.1 unless --listen names another address (then a warning); forwards only to
--upstream, never to a host named by the request; credentials pass through unchanged and are redacted
in spans and log lines. SIGINT/SIGTERM stop it cleanly, with every span already in --traces.

Example:
  chaoskit http-proxy --plan plan.yaml --listen 127.0.0.1:8080 --upstream http://127.0.0.1:9000 \\
      --traces out.jsonl
  chaoskit check out.jsonl
"""


def add_parser(sub: Any) -> None:
    """Register ``chaoskit http-proxy`` on the ``sub`` subparsers."""
    p = sub.add_parser(
        "http-proxy",
        help="a chaos reverse proxy for agents whose tools are HTTP APIs",
        description="Put chaoskit between an agent and the REST API it calls: forward each request to "
        "--upstream, failing the calls the plan names.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--plan", required=True, metavar="PLAN.yaml", help="the fault plan")
    p.add_argument("--upstream", required=True, metavar="URL", help="the API to forward to, e.g. http://127.0.0.1:9000")
    p.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080; port 0 picks a free one)",
    )
    p.add_argument("--openapi", metavar="FILE", help="an OpenAPI file (JSON or YAML): routes and operationIds")
    p.add_argument("--traces", metavar="OUT.jsonl", help="append every span to this OTLP-JSON Lines file")
    p.add_argument(
        "--episode",
        metavar="NAME",
        help="record the proxy's whole run as one episode NAME (model calls are recorded only inside one)",
    )
    p.add_argument(
        "--ready-file",
        metavar="PATH",
        help="write the proxy's URL to PATH once it accepts calls (for a runner that started it)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="one line per call at info (credentials redacted); headers at debug (default info)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the proxy until SIGINT or SIGTERM; the exit status."""
    try:
        from ._server import ProxyServer
    except ImportError as exc:
        from chaoskit import ChaoskitError

        raise ChaoskitError(
            f"chaoskit http-proxy needs the http extra ({exc.name or exc} is not installed): "
            "pip install 'chaoskit[http]'"
        ) from exc

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("chaoskit http-proxy: %(message)s"))
    logger = logging.getLogger("chaoskit.http")
    logger.addHandler(handler)
    logger.setLevel(args.log_level.upper())
    logger.propagate = False
    server = ProxyServer(
        args.plan,
        upstream=args.upstream,
        listen=args.listen,
        openapi=args.openapi,
        traces=args.traces,
        episode=args.episode,
    )
    if args.ready_file:
        ready = Path(args.ready_file)
        partial = ready.with_name(ready.name + ".part")
        partial.write_text(server.url + "\n", encoding="utf-8")
        partial.replace(ready)  # whole or not at all: a reader never sees half a URL
    faults = len(server.plan.faults)
    where = f", spans to {args.traces}" if args.traces else ""
    print(
        f"chaoskit http-proxy: listening on {server.url}, forwarding to {args.upstream} "
        f"({faults} fault(s) from {args.plan}{where})",
        file=sys.stderr,
        flush=True,
    )
    server.run()
    print("chaoskit http-proxy: stopped", file=sys.stderr, flush=True)
    return 0
