"""Finding an agent's tools: ``@chaos`` callables, what registered describers recognise, an OpenAPI file.

chaoskit never imports a framework, so LangChain tools and LangGraph graphs are recognised by *describers*
that the integration packages register under the ``chaoskit.describers`` entry-point group (or in-process with
:func:`register_describer`). A describer is ``describe(obj) -> list[ToolInfo] | None``: None when ``obj`` is
not something it knows, else the tools it finds there (an empty list is "mine, and it holds no tool"). A record
with ``source`` starting with ``marks:`` only adds marks (irreversible, idempotency argument) to a tool found
elsewhere, as a callback handler's lists do; it never makes a tool exist.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import logging
import os
import shlex
import signal
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit._refs import RefError, import_ref
from chaoskit.adapters._decorator import spec_of
from chaoskit.suggest._openapi_tools import read_openapi
from chaoskit.suggest._tool_info import EVERY_TOOL, McpServer, Param, SuggestError, ToolInfo, merge_tools

__all__ = [
    "DESCRIBER_GROUP",
    "MODEL_HOOK_ATTR",
    "Describer",
    "discover",
    "discover_ref",
    "model_hook",
    "register_describer",
    "split_command",
    "tool_from_callable",
]

log = logging.getLogger("chaoskit")

#: the entry-point group describer packages register under
DESCRIBER_GROUP = "chaoskit.describers"
#: ``describe(obj) -> list[ToolInfo] | None``
Describer = Callable[[Any], "list[ToolInfo] | None"]

_lock = threading.Lock()
_describers: dict[str, Describer] = {}
_loaded = False
#: how deep the walk goes into an agent's attributes (agent -> env -> its tools)
_MAX_DEPTH = 3
#: how deep the walk nests in all (attributes and containers): a 5,000-deep list is data, not a tool holder
_MAX_NEST = 8
#: how many items of one container (or attributes of one object) the walk looks at: tools sit near the top, and
#: an agent's in-memory data (a 200,000-row cache) would otherwise be walked row by row
_MAX_ITEMS = 1000
_PRIMITIVES = (str, bytes, int, float, bool, type(None), type, types.ModuleType, types.FunctionType)


def register_describer(name: str, describe: Describer) -> None:
    """Register a describer in this process (an entry point of that name is replaced)."""
    with _lock:
        _load_entry_points()
        _describers[name] = describe


def _load_entry_points() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=DESCRIBER_GROUP):
        if ep.name in _describers:
            continue
        try:
            _describers[ep.name] = ep.load()
        except Exception as exc:
            # a framework that is not installed must not stop suggest for the others
            log.debug("chaoskit: the %s describer (%s) is not available: %s", ep.name, ep.value, exc)


def _describe(obj: Any) -> list[ToolInfo] | None:
    with _lock:
        _load_entry_points()
        found = list(_describers.items())
    for name, describe in found:
        try:
            out = describe(obj)
        except SuggestError:
            raise
        except Exception as exc:
            raise SuggestError(f"the {name} describer could not read {type(obj).__name__}: {exc}") from exc
        if out is not None:
            return list(out)
    return None


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, str):
        return value
    return getattr(value, "__name__", None) if isinstance(value, type) else str(value).replace("typing.", "")


def tool_from_callable(func: Any, *, source: str = "@chaos") -> ToolInfo:
    """The :class:`ToolInfo` of a ``@chaos`` callable: its spec's marks, its signature, its return annotation."""
    spec = spec_of(func)
    name = spec.name if spec is not None else getattr(func, "__name__", type(func).__name__)
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise SuggestError(
            f"tool {name!r}: its parameters cannot be read ({type(exc).__name__}: {exc}); give the tool a plain "
            "Python signature, or describe it in an OpenAPI file (--openapi)"
        ) from None
    params = tuple(
        Param(p.name, _annotation(p.annotation), p.default is inspect.Parameter.empty)
        for p in sig.parameters.values()
        if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )
    description = spec.description if spec is not None else None
    return ToolInfo(
        name=name,
        description=description or (inspect.getdoc(func) or "").split("\n")[0] or None,
        params=params,
        result=_annotation(sig.return_annotation),
        irreversible=True if spec is not None and spec.irreversible else None,
        idempotent=True if spec is not None and spec.idempotent else None,
        idempotency_arg=spec.idempotency_arg if spec is not None else None,
        source=source,
        replaces_result=True if spec is not None else None,
    )


def _static_tools(obj: Any) -> Iterable[tuple[str, Any]]:
    """``(name, bound tool)`` for each ``@chaos`` method defined in the object's classes (never calls a property)."""
    seen: set[str] = set()
    for klass in type(obj).__mro__:
        if klass is object:
            continue
        for attr, value in vars(klass).items():
            if attr in seen or attr.startswith("__"):
                continue
            seen.add(attr)
            inner = value.__func__ if isinstance(value, staticmethod | classmethod) else value
            if _spec(inner) is not None:
                bound = _attr(obj, attr)
                if bound is not None:
                    yield attr, bound


def _spec(obj: Any) -> Any:
    """``spec_of(obj)``, or None when merely looking runs user code that raises (a lazy client's
    ``__getattr__``): an object that cannot be looked at is not a tool, and never stops the walk."""
    try:
        return spec_of(obj)
    except Exception:
        return None


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _visit(obj: Any, depth: int, seen: dict[int, Any], out: list[ToolInfo], nest: int = 0) -> None:
    """Collect the tools in ``obj``. ``seen`` maps ``id`` to the object and so keeps each visited object alive:
    a bound method made by ``getattr`` and dropped would free its address for the next one, which would then
    count as seen and be skipped. ``depth`` counts attribute levels, ``nest`` every level (containers too)."""
    if id(obj) in seen or nest > _MAX_NEST:
        return
    spec = _spec(obj)
    if isinstance(obj, _PRIMITIVES) and spec is None:
        return
    seen[id(obj)] = obj
    if spec is not None:
        out.append(tool_from_callable(obj))
        return
    described = _describe(obj)
    if described is not None:
        out.extend(described)
        return
    try:
        children, deeper = _children(obj, depth)
    except SuggestError:
        raise
    except Exception:
        return  # iterating it runs user code that raises: it holds no tool we can read
    for v in children:
        _visit(v, depth + 1 if deeper else depth, seen, out, nest + 1)


def _children(obj: Any, depth: int) -> tuple[list[Any], bool]:
    """What the walk looks into next: a container's first items (same attribute depth), or an object's
    ``@chaos`` methods and attribute values (one level deeper); nothing past :data:`_MAX_DEPTH`."""
    if isinstance(obj, Mapping):
        return list(itertools.islice(obj.values(), _MAX_ITEMS)), False
    if isinstance(obj, list | tuple | set | frozenset):
        return list(itertools.islice(obj, _MAX_ITEMS)), False
    if depth >= _MAX_DEPTH or inspect.isroutine(obj) or inspect.isclass(obj):
        return [], False
    tools = [tool for _name, tool in _static_tools(obj)]
    attrs = _attr(obj, "__dict__")
    values = list(itertools.islice(attrs.values(), _MAX_ITEMS)) if isinstance(attrs, Mapping) else []
    return tools + values, True


def _finish(found: list[ToolInfo], what: str) -> list[ToolInfo]:
    marks = [t for t in found if t.source.startswith("marks:")]
    tools = merge_tools([t for t in found if not t.source.startswith("marks:")])
    names = {t.name for t in tools}
    merged = merge_tools(tools + [m for m in marks if m.name in names])
    for every in (m for m in marks if m.name == EVERY_TOOL):
        merged = [
            t
            if t.replaces_result is True
            else replace(t, replaces_result=every.replaces_result, sources=(*t.sources, every.source))
            for t in merged
        ]
    if not merged:
        raise SuggestError(
            f"{what} has no tools that suggest can see: expected @chaos tools, a list of LangChain tools, a "
            "compiled LangGraph graph, an agent object holding them (in its attributes), or an OpenAPI file "
            "(--openapi FILE); LangChain and LangGraph need chaoskit[langchain] / chaoskit[langgraph]"
        )
    return merged


#: the attribute an object that injects model faults sets true (``ChaosMiddleware``, a callback handler or
#: ``instrument_graph``'s step recorder with ``model_faults=True``): suggest reads it, never imports them
MODEL_HOOK_ATTR = "injects_model_faults"


def model_hook(obj: Any) -> str | None:
    """The type name of what injects chaoskit's model faults into ``obj``'s model calls, found among its
    attributes (:data:`_MAX_DEPTH` + 1 levels deep, containers included); None when nothing there does, so a
    model fault would reach no model call."""
    seen: dict[int, Any] = {}
    level = [obj]
    for _ in range(_MAX_DEPTH + 2):
        nxt: list[Any] = []
        for item in level:
            if id(item) in seen or isinstance(item, _PRIMITIVES) or inspect.isroutine(item):
                continue
            seen[id(item)] = item
            if _attr(item, MODEL_HOOK_ATTR) is True:
                return type(item).__name__
            if isinstance(item, Mapping):
                nxt += list(itertools.islice(item.values(), _MAX_ITEMS))
            elif isinstance(item, list | tuple | set | frozenset):
                nxt += list(itertools.islice(item, _MAX_ITEMS))
            else:
                attrs = _attr(item, "__dict__")
                if isinstance(attrs, Mapping):
                    nxt += list(itertools.islice(attrs.values(), _MAX_ITEMS))
        level = nxt
    return None


def discover(obj: Any, *, what: str = "the agent") -> list[ToolInfo]:
    """The tools of ``obj``: a ``@chaos`` callable, a list of tools, a graph, or an agent object holding them
    (its attributes are walked, :data:`_MAX_DEPTH` levels deep). Raises :class:`SuggestError` when there are none."""
    found: list[ToolInfo] = []
    _visit(obj, 0, {}, found)
    return _finish(found, what)


def _is_file_ref(ref: str) -> bool:
    return ref.lower().endswith((".yaml", ".yml", ".json")) or (os.sep in ref and ":" not in ref)


def _import_ref(ref: str) -> tuple[types.ModuleType, Any]:
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise SuggestError(
            f"--agent {ref!r}: expected MODULE:OBJECT (a factory, a tool list, a graph) or an OpenAPI file"
        )
    try:
        obj = import_ref(module_name, attr)  # as `chaoskit run` does: the project's own modules import
    except RefError as exc:
        if exc.error is not None:
            error = exc.error
            raise SuggestError(f"--agent {ref}: cannot import {module_name}: {type(error).__name__}: {error}") from None
        raise SuggestError(f"--agent {ref}: {module_name} has no attribute {attr!r}") from None
    return importlib.import_module(module_name), obj  # imported above: the cached module


def _module_tools(module: types.ModuleType, seen: dict[int, Any], out: list[ToolInfo]) -> None:
    """The tools a module defines at its top level: ``@chaos`` functions and lists of tools (not its classes)."""
    for value in list(vars(module).values()):
        if _spec(value) is not None or (isinstance(value, list | tuple) and value and not isinstance(value[0], str)):
            _visit(value, _MAX_DEPTH - 1, seen, out)


def split_command(flag: str, command: str, empty: str) -> list[str]:
    """``flag``'s command line as an argv list (split as a shell would); a SuggestError naming ``flag`` when it
    cannot be split or is ``empty``."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise SuggestError(f"{flag} {command!r}: cannot split the command line: {exc}") from None
    if not argv:
        raise SuggestError(f"{flag}: {empty}")
    return argv


def _mcp_tools(command: str) -> list[ToolInfo]:
    argv = tuple(split_command("--mcp", command, "the server command is empty"))
    described = _describe(McpServer(argv))
    if described is None:
        raise SuggestError("--mcp needs the MCP integration: pip install 'chaoskit[mcp]'")
    return described


#: how long a factory may take to build the agent before suggest gives up on it (it never runs the agent)
FACTORY_TIMEOUT_S = 120.0


class _FactoryTimeout(Exception):
    pass


def _call_factory(factory: Callable[[], Any], ref: str) -> Any:
    """``factory()``, with what it may do to the process turned into a :class:`SuggestError` naming it: exit
    (``sys.exit``, an argparse that reads chaoskit's own command line), raise, or block (a connection that
    never answers: :data:`FACTORY_TIMEOUT_S`, on the main thread of a POSIX process, where an alarm can stop it)."""
    alarm = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    previous: Any = None
    if alarm:

        def _ring(_sig: int, _frame: Any) -> None:
            raise _FactoryTimeout

        previous = signal.signal(signal.SIGALRM, _ring)
        signal.setitimer(signal.ITIMER_REAL, FACTORY_TIMEOUT_S)
    try:
        return factory()
    except ChaoskitError:
        raise
    except _FactoryTimeout:
        raise SuggestError(
            f"--agent {ref}: the factory did not return within {FACTORY_TIMEOUT_S:g} s (does it wait on a "
            "connection?); give a factory that builds the agent without waiting, or its tools (a tool list)"
        ) from None
    except SystemExit as exc:
        raise SuggestError(
            f"--agent {ref}: the factory exited (SystemExit {exc.code!r}) instead of returning an agent; a main() "
            "or a factory that parses the command line (argparse) cannot be called as a factory"
        ) from None
    except Exception as exc:
        raise SuggestError(f"--agent {ref}: the factory raised {type(exc).__name__}: {exc}") from None
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def discover_ref(
    ref: str, *, openapi: str | os.PathLike[str] | None = None, mcp: str | None = None
) -> tuple[list[ToolInfo], Any]:
    """The tools behind ``--agent``: ``MODULE:OBJECT`` (a factory is called once, no model is ever called,
    and its module's top-level tools are added) or an OpenAPI file; plus ``openapi``'s operations and the tools
    the MCP server command ``mcp`` lists. Returns (tools, the factory's product or None)."""
    found: list[ToolInfo] = []
    made: Any = None
    if openapi is not None:
        found.extend(read_openapi(openapi))
    if mcp is not None:
        found.extend(_mcp_tools(mcp))
    if ref and len(ref.split()) > 1:
        raise SuggestError(
            f"--agent {ref!r} is a command line, whose tools live in its own process and cannot be read from here; "
            "give the MODULE:FACTORY it builds its agent with, its API's OpenAPI file (--openapi) or its MCP server "
            "(--mcp COMMAND), and keep the command line for chaoskit run --agent"
        )
    if ref and _is_file_ref(ref):
        if not Path(ref).is_file():
            raise SuggestError(f"--agent {ref}: no such file (an OpenAPI file, or MODULE:OBJECT)")
        found.extend(read_openapi(ref))
    elif ref:
        module, obj = _import_ref(ref)
        seen: dict[int, Any] = {}
        if _spec(obj) is None and _describe(obj) is None and callable(obj) and not isinstance(obj, list | tuple):
            made = _call_factory(obj, ref)
            _visit(made, 0, seen, found)
        else:
            _visit(obj, 0, seen, found)
        _module_tools(module, seen, found)
    return _finish(found, f"--agent {ref}" if ref else "--mcp" if mcp else "--openapi"), made
