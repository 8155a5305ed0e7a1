"""Import a user's ``MODULE:ATTR`` reference (an agent, a judge model, an end-state check) from the project."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__all__ = ["RefError", "import_failure", "import_ref"]


class RefError(Exception):
    """A reference that does not resolve: ``error`` is what importing the module raised; else ``missing`` is the
    first part of the dotted ATTR that ``owner`` lacks. Callers turn it into their own usage error."""

    def __init__(self, *, error: BaseException | None = None, missing: str = "", owner: Any = None) -> None:
        super().__init__(str(error) if error is not None else f"no attribute {missing!r}")
        self.error = error
        self.missing = missing
        self.owner = owner


def import_ref(module_name: str, attr: str) -> Any:
    """Import ``module_name`` and walk the dotted ``attr`` on it. The current directory goes on ``sys.path`` first,
    as ``python -m`` does, so that the project's own modules import. Any exception the module raises on import (a
    missing package, a syntax error, an error in its top-level code) is a :class:`RefError`, never a traceback."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise RefError(error=exc) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RefError(missing=part, owner=obj) from None
    return obj


def import_failure(exc: BaseException) -> str:
    """What went wrong on import, for a message: an ImportError's own text ("No module named 'x'"), any other
    error with its class ("SyntaxError: invalid syntax (agent.py, line 3)")."""
    return str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
