"""``python -m chaoskit_mcp ...``: the same as ``chaoskit mcp-proxy ...``."""

from __future__ import annotations

import argparse
import sys

from chaoskit import ChaoskitError

from ._cli import add_parser


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m chaoskit_mcp")
    sub = parser.add_subparsers(dest="command_name")
    add_parser(sub)
    args = parser.parse_args(["mcp-proxy", *sys.argv[1:]])
    try:
        return int(args.func(args))
    except ChaoskitError as exc:
        print(f"chaoskit mcp-proxy: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_main())
