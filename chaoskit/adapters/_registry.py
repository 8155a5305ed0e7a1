"""Adapters for framework tool objects (a LangChain ``BaseTool``, ...), found through an entry-point group.

chaoskit never imports a framework. A package that knows one registers an adapter, and ``@chaos`` /
``chaos(obj)`` hands it the objects it recognizes.

The contract (``chaoskit.adapters`` entry-point group)::

    # the adapter package's pyproject.toml
    [project.entry-points."chaoskit.adapters"]
    langchain = "chaoskit_langchain:chaoskit_adapter"

The entry point's name is the framework (it names the ``pip install chaoskit[<name>]`` extra in errors). It
points at a callable taking no arguments that returns ``(is_tool, wrap)``:

- ``is_tool(obj) -> bool``: whether ``obj`` is a tool object of that framework. Cheap and pure: it is asked
  of every object ``@chaos`` is given that is not a plain function.
- ``wrap(obj, *, name, description, plan, irreversible, idempotency_arg, idempotent, error_result) -> Any``:
  what ``chaos(obj, ...)`` returns for it. The keyword arguments are ``@chaos``'s, already checked (``plan``
  is a :class:`~chaoskit.plan.Plan` or None; ``name`` / ``description`` are None when not given). It raises
  :class:`chaoskit.ConfigError` for an option it cannot honour.

The callable is loaded and called once, the first time ``@chaos`` is given an object that is not a plain
function. :func:`register_adapter` does the same in-process (tests, or a package that is not installed).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "AdapterFactory", "IsTool", "Wrap", "find_adapter", "register_adapter"]

log = logging.getLogger("chaoskit")

#: the entry-point group adapter packages register under
ENTRY_POINT_GROUP = "chaoskit.adapters"

#: ``is_tool(obj) -> bool``
IsTool = Callable[[Any], bool]
#: ``wrap(obj, *, name, description, plan, irreversible, idempotency_arg, idempotent, error_result) -> Any``
Wrap = Callable[..., Any]
#: what an entry point names: a callable with no arguments returning ``(is_tool, wrap)``
AdapterFactory = Callable[[], tuple[IsTool, Wrap]]

# frameworks recognized without importing them, to name the missing extra when no adapter is installed:
# (framework, module prefix of the base class, base class name)
_KNOWN = (("langchain", "langchain_core", "BaseTool"),)

_lock = threading.Lock()
_adapters: dict[str, tuple[IsTool, Wrap]] = {}
_loaded = False


def register_adapter(name: str, factory: AdapterFactory) -> None:
    """Register the adapter for framework ``name`` in this process (an entry point of that name is replaced)."""
    adapter = factory()
    with _lock:
        _load_entry_points()
        _adapters[name] = adapter


def _load_entry_points() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _adapters:
            continue
        try:
            _adapters[ep.name] = ep.load()()
        except Exception as exc:
            # a broken adapter package must not break @chaos on plain functions; its objects get a ConfigError
            log.warning(
                "chaoskit: the %s adapter (%s) could not be loaded: %s: %s", ep.name, ep.value, type(exc).__name__, exc
            )


def find_adapter(obj: Any) -> tuple[str, Wrap | None] | None:
    """``(framework, wrap)`` for a framework tool object, ``wrap`` None when its adapter is not installed;
    None for anything else."""
    with _lock:
        _load_entry_points()
        adapters = list(_adapters.items())
    for name, (is_tool, wrap) in adapters:
        if is_tool(obj):
            return name, wrap
    mro = type(obj).__mro__
    for name, module, base in _KNOWN:
        if any(c.__name__ == base and c.__module__.startswith(module) for c in mro):
            return name, None
    return None
