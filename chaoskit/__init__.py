"""chaoskit: chaos-testing for LLM agents at the tool layer.

The public names are imported when first used (a module ``__getattr__``), so that ``chaoskit check`` and other
commands load only the layers they need, not the engine, the runner and the OpenTelemetry SDK of the others.
``from chaoskit import X`` and ``chaoskit.X`` work as if everything were imported up front.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from chaoskit._version import __version__ as __version__


def _public_names() -> dict[str, str]:
    """Each public name and the module that defines it ("" for a submodule of the same name), read from the
    stub beside this file (``__init__.pyi``), where each public name is written once, as ``from MODULE import
    NAME as NAME`` (read word by word, not with ``ast`` or ``re``: ``import chaoskit`` stays light)."""
    with open(os.path.join(os.path.dirname(__file__), "__init__.pyi"), encoding="utf-8") as stub:
        words = stub.read().split('"""')[-1].replace("(", " ").replace(")", " ").replace(",", " ").split()
    where: dict[str, str] = {}
    module = ""
    for i, word in enumerate(words):
        if word == "from":
            module = words[i + 1]
        elif word == "as":
            where[words[i + 1]] = "" if module == "chaoskit" else module
    return where


_WHERE = _public_names()
_WHERE.pop("__version__")

__all__ = sorted([*_WHERE, "__version__"])


def _hook_trace_reader() -> None:
    # the telemetry layer sits below the readers: its captures read spans as a Trace through this hook
    from chaoskit.telemetry import set_trace_builder
    from chaoskit.traces._trace import Trace

    set_trace_builder(Trace.from_spans)


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the module, as an eager import would have."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'chaoskit' has no attribute {name!r}")
    if "_trace_reader_hooked" not in globals():
        # any public name may lead to telemetry's captures (an episode records spans): hook before handing it out
        _hook_trace_reader()
        globals()["_trace_reader_hooked"] = True
    value = importlib.import_module(f"chaoskit.{name}") if not where else getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
