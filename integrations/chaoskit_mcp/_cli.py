"""``chaoskit mcp-proxy``: the subcommand this package registers in the ``chaoskit.commands`` group.

It imports no part of the ``mcp`` SDK until it runs, so that ``chaoskit --help`` works without the extra
and ``chaoskit mcp-proxy`` without it says which extra to install.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from typing import Any

from chaoskit import ChaoskitError, ConfigError

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  chaoskit mcp-proxy --plan plan.yaml --traces spans.jsonl -- python my_server.py
  chaoskit mcp-proxy --plan plan.yaml --listen 127.0.0.1:8765 --upstream http://127.0.0.1:9000/mcp
  chaoskit mcp-proxy --plan plan.yaml --listen 127.0.0.1:8765 -- npx -y @modelcontextprotocol/server-everything

Errors and timeouts the plan injects come back as tool results with isError: true. JSON-RPC errors are used
only where the protocol needs them: a tool the server does not have (the tool_disappears fault), a request
other than tools/call while the upstream is gone, and a line that is not JSON-RPC. See docs/proxies.md.
"""


def add_parser(subparsers: Any) -> None:
    """Add ``mcp-proxy`` to the ``chaoskit`` command (the ``chaoskit.commands`` entry point)."""
    p = subparsers.add_parser(
        "mcp-proxy",
        help="serve an MCP server's tools through chaoskit's faults (stdio or Streamable HTTP)",
        description="An MCP server that mirrors a real one and injects the plan's faults into its tool calls, "
        "with one execute_tool span per call.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--plan", help="the fault plan (YAML); default: $CHAOSKIT_PLAN, else no faults")
    p.add_argument("--traces", help="append spans to this OTLP-JSON Lines file as each call ends")
    p.add_argument("--listen", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    p.add_argument("--upstream", metavar="URL", help="the real server's Streamable HTTP URL (instead of a command)")
    p.add_argument("--ready-file", help=argparse.SUPPRESS)
    p.add_argument(
        "--run-dir",
        help="where one episode's call counts are shared by the proxies serving it (a session per call); "
        "default: $CHAOSKIT_RUN_DIR, else a folder in the temporary directory",
    )
    p.add_argument("--irreversible", default="", help="comma-separated tools that write (duplicate-write check)")
    p.add_argument("--idempotent", default="", help="comma-separated tools whose repeats change nothing")
    p.add_argument(
        "--idempotency-arg", action="append", default=[], metavar="TOOL=ARG", help="the argument holding a key"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command that starts the real server")
    p.set_defaults(func=run)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen: expected HOST:PORT such as 127.0.0.1:8765, got {value!r}")
    host = host.strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        print(
            f"chaoskit mcp-proxy: WARNING: listening on {host}, not on 127.0.0.1: anyone who can reach this "
            "address can call the real server's tools through the proxy",
            file=sys.stderr,
        )
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    """Run the proxy until the client goes (stdio) or SIGTERM/SIGINT (HTTP); the exit status."""
    try:
        from . import _compat

        _compat.check_installed()
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ChaoskitError(
            f"chaoskit mcp-proxy needs the MCP SDK ({exc}); install the extra: pip install 'chaoskit[mcp]'"
        ) from None
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == bool(args.upstream):
        raise ConfigError(
            "chaoskit mcp-proxy: give the real server either as a command after -- (stdio) or as --upstream URL"
        )
    if args.upstream and not args.listen:
        raise ConfigError("--upstream URL needs --listen HOST:PORT (the proxy then serves Streamable HTTP)")
    if args.upstream and not str(args.upstream).startswith(("http://", "https://")):
        raise ConfigError(f"--upstream: expected an http:// or https:// URL, got {args.upstream!r}")
    listen = _listen(args.listen) if args.listen else None
    args_of: dict[str, str] = {}
    for item in args.idempotency_arg:
        tool, sep, arg = item.partition("=")
        if not sep or not tool or not arg:
            raise ConfigError(f"--idempotency-arg: expected TOOL=ARG, got {item!r}")
        args_of[tool] = arg
    from ._main import main

    return main(
        plan=args.plan or os.environ.get("CHAOSKIT_PLAN"),
        traces=args.traces or os.environ.get("CHAOSKIT_TRACES_FILE"),
        command=command,
        upstream=args.upstream,
        listen=listen,
        ready_file=args.ready_file,
        irreversible=_names(args.irreversible),
        idempotent=_names(args.idempotent),
        idempotency_args=args_of,
        state_dir=args.run_dir,
    )
