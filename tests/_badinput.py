"""What the bad-input corpus tests share: run the CLI in-process, and assert that an error is one a person can act on.

Every corpus case asserts the same three things: the documented exit code (2) or exception type, a message
that names where the problem is (file, line, field) and what is allowed, and no traceback. Imported as
``from _badinput import ...`` (``tests/`` is on ``sys.path``, as for ``_helpers``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chaoskit.cli._main import main

__all__ = ["CliResult", "assert_clear", "run_cli"]


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(argv: Sequence[str]) -> CliResult:
    """``chaoskit ARGV`` in this process; an exception escaping ``main`` fails the test (that would be a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors exit 2 by raising
            code = exc.code if isinstance(exc.code, int) else 2
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_clear(message: str, *, names: Iterable[str] = (), allowed: Iterable[str] = ()) -> None:
    """``message`` holds no traceback, and every string of ``names`` (file, ``:line``, field) and ``allowed``
    (what would have been accepted) appears in it, case-insensitively."""
    assert message.strip(), "the error message is empty"
    assert "Traceback (most recent call last)" not in message, message
    low = message.lower()
    for part in (*names, *allowed):
        assert part.lower() in low, f"{part!r} is not named in the message:\n{message}"
