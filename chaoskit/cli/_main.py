"""The ``chaoskit`` command: the parser, with one module per subcommand, each defining ``add_parser(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__

# each module defines add_parser(subparsers) and sets a ``func(args) -> int`` default
_COMMAND_MODULES = (
    "chaoskit.cli._validate",
    "chaoskit.cli._check",
    "chaoskit.cli._run",
    "chaoskit.cli._merge",
    "chaoskit.cli._compare",
    "chaoskit.cli._report",
)


def build_parser() -> argparse.ArgumentParser:
    """The ``chaoskit`` parser with every subcommand; a command module that cannot be imported is an error."""
    parser = argparse.ArgumentParser(
        prog="chaoskit",
        description="Chaos-test LLM agents at the tool layer, and grade their recovery from traces.",
    )
    parser.add_argument("--version", action="version", version=f"chaoskit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        # a command module that fails to import is a broken install: say so, rather than drop the subcommand
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ChaoskitError(
                f"cannot load the command module {name} ({type(exc).__name__}: {exc}); reinstall chaoskit"
            ) from exc
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chaoskit`` command on ``argv`` (default: ``sys.argv[1:]``); its exit status."""
    try:
        parser = build_parser()
    except ChaoskitError as exc:
        print(f"chaoskit: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except ChaoskitError as exc:
        print(f"chaoskit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chaoskit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
