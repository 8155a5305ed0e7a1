"""The ``chaoskit`` command: the parser, with one module per subcommand, each defining ``add_parser(subparsers)``."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__

# each module defines add_parser(subparsers) and sets a ``func(args) -> int`` default
_COMMAND_MODULES = (
    "chaoskit.cli._validate",
    "chaoskit.cli._check",
    "chaoskit.cli._run",
    "chaoskit.cli._replay",
    "chaoskit.cli._merge_command",
    "chaoskit.cli._compare_command",
    "chaoskit.cli._generate_command",
    "chaoskit.cli._report",
    "chaoskit.cli._suggest_command",
    "chaoskit.cli._judge_command",
)

#: the entry-point group of subcommands other packages add (the MCP and HTTP proxies): each entry point names
#: a function ``add_parser(subparsers)`` that adds one subcommand, as the modules above do
ENTRY_POINT_GROUP = "chaoskit.commands"

#: subcommands that come with an extra, so that without it the command says what to install
_EXTRA_COMMANDS = {"mcp-proxy": "mcp"}


def _missing(name: str, extra: str, why: str) -> Any:
    def func(args: argparse.Namespace) -> int:
        raise ChaoskitError(f"chaoskit {name} needs the {extra!r} extra ({why}): pip install 'chaoskit[{extra}]'")

    return func


def _add_missing(sub: Any, name: str, extra: str, why: str) -> None:
    p = sub.add_parser(name, help=f"(needs: pip install 'chaoskit[{extra}]')", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_missing(name, extra, why))


def _add_plugins(sub: Any) -> None:
    """The subcommands registered under ``chaoskit.commands``; a known one that is absent or broken says
    which extra to install instead of vanishing."""
    import importlib.metadata  # only here: it costs a tenth of the start-up of `chaoskit check`

    added: set[str] = set()
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in sub.choices:
            continue
        try:
            add = ep.load()
            add(sub)
        except Exception as exc:
            if ep.name not in _EXTRA_COMMANDS or ep.name in sub.choices:
                # another package's broken command must not take the others down with it
                print(
                    f"chaoskit: warning: cannot load the {ep.name!r} command from {ep.value} "
                    f"({type(exc).__name__}: {exc}); it is left out",
                    file=sys.stderr,
                )
                continue
            _add_missing(sub, ep.name, _EXTRA_COMMANDS[ep.name], f"{type(exc).__name__}: {exc}")
        added.add(ep.name)
    for name, extra in _EXTRA_COMMANDS.items():
        if name not in added and name not in sub.choices:
            _add_missing(sub, name, extra, "its package is not installed")


def _check_installed(names: Sequence[str]) -> None:
    """Every command module is there (found, not imported): a broken install says so whatever command runs."""
    import importlib.util

    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            raise ChaoskitError(
                f"cannot load the command module {name} (ModuleNotFoundError: No module named {name!r}); "
                "reinstall chaoskit"
            )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``chaoskit`` parser with every subcommand; a command module that cannot be imported is an error.
    Given the ``argv`` of a run whose first word is a built-in command (``check``), only that one is loaded."""
    parser = argparse.ArgumentParser(
        prog="chaoskit",
        description="Chaos-test LLM agents at the tool layer, and grade their recovery from traces.",
    )
    parser.add_argument("--version", action="version", version=f"chaoskit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # a command's own module only: the others pull in the runner, the engine and rich (most of a check's start-up)
    first = argv[0] if argv else None
    only = [m for m in _COMMAND_MODULES if first and m.rpartition("._")[2] == first]
    if only:
        _check_installed(_COMMAND_MODULES)
    for name in only or _COMMAND_MODULES:
        # a command module that fails to import is a broken install: say so, rather than drop the subcommand
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ChaoskitError(
                f"cannot load the command module {name} ({type(exc).__name__}: {exc}); reinstall chaoskit"
            ) from exc
        module.add_parser(sub)
    if only and first not in sub.choices:
        return build_parser()
    if not only:
        _add_plugins(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chaoskit`` command on ``argv`` (default: ``sys.argv[1:]``); its exit status."""
    try:
        parser = build_parser(sys.argv[1:] if argv is None else argv)
    except ChaoskitError as exc:
        print(f"chaoskit: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
        return status
    except ChaoskitError as exc:
        print(f"chaoskit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chaoskit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `chaoskit check ... | head`: stop quietly, as commands in a pipeline do (128 + SIGPIPE)
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
