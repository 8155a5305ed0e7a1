"""What ``instrument_graph`` reaches from a compiled graph: its ToolNodes at any depth, and the parts it cannot."""

# A multi-agent graph hides its inner agents where a walk over graph nodes never looks: langgraph-supervisor
# wraps each worker in a RunnableCallable whose function holds the worker in its closure; deepagents runs its
# subagents inside the `task` tool, whose function holds them in its closure; users invoke subgraphs from node
# functions. So the walk follows what the agent's code holds: runnables' fields, functions' closures, defaults
# and the globals their code names, bound methods' objects, partials and containers. What it cannot see into
# (a remote graph, a node that builds its graph at run time) is reported, never skipped silently.

from __future__ import annotations

import functools
import sys
import threading
import types
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chaoskit_langchain import is_chaos_tool, unwrap_tool
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseLanguageModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode

from chaoskit import ChaosWarning
from chaoskit.adapters import spec_of

from ._compat import node_functions, tools_of

__all__ = ["MARK", "Blind", "Reach", "Unreached", "marked", "reach"]

# packages whose own functions hold no agent of the user's: their globals are not followed (their closures and
# objects still are, since those hold what the user passed in)
_LIBRARIES: Final = frozenset(
    {
        "langchain",
        "langchain_core",
        "langgraph",
        "pydantic",
        "pydantic_core",
        "typing_extensions",
        "chaoskit",
        "chaoskit_langchain",
        "chaoskit_langgraph",
        "opentelemetry",
        "wrapt",
    }
)
# a node function that names one of these and holds nothing chaoskit can see runs an agent it builds at run time
_RUNS: Final = frozenset({"invoke", "ainvoke", "stream", "astream", "batch", "abatch", "astream_events"})
_MAX_DEPTH: Final = 40
_MAX_ITEMS: Final = 500
_MAX_OBJECTS: Final = 100_000
_EVERY_RUN: Final = (
    "If it runs tools, instrument that part where it is built, or pass "
    "config={'callbacks': [ChaosCallbackHandler(plan)]} to the run (it reaches every tool of the run, error faults "
    "only)."
)


@dataclass(frozen=True)
class Blind:
    """A part of the agent whose tools ``instrument_graph`` cannot reach, and what would reach them."""

    where: str
    what: str
    how: str

    def message(self) -> str:
        return f"instrument_graph(): {self.where}: {self.what}. {self.how}"


@dataclass
class Reach:
    """The ToolNodes found (in walk order, with where each is) and the parts found unreachable."""

    nodes: list[ToolNode] = field(default_factory=list)
    where: dict[int, str] = field(default_factory=dict)
    blind: list[Blind] = field(default_factory=list)
    #: tools found outside every ToolNode (called from a node function): (where, tool)
    loose: list[tuple[str, BaseTool]] = field(default_factory=list)


def _library(obj: Any) -> bool:
    top = (getattr(obj, "__module__", None) or "").split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names or top == "builtins"


def _installed(module_name: str | None) -> bool:
    """Whether the module is the stdlib's or an installed package's (not the user's own code): what such code
    holds in its globals (pytest's session, a framework's registries) is not the user's agent."""
    top = (module_name or "").split(".")[0]
    if top in _LIBRARIES or top in sys.stdlib_module_names or top in ("builtins", ""):
        return True
    module = sys.modules.get(module_name or "")
    parts = Path(str(getattr(module, "__file__", None) or "")).parts
    return "site-packages" in parts or "dist-packages" in parts


def _is_graph(obj: Any) -> bool:
    return isinstance(getattr(obj, "nodes", None), Mapping) and hasattr(obj, "invoke") and hasattr(obj, "stream_mode")


def _is_remote(obj: Any) -> bool:
    cls = type(obj)
    return cls.__name__ == "RemoteGraph" and cls.__module__.startswith("langgraph.pregel")


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # lambdas, comprehensions and inner functions
            yield from _code_names(const)


class _Walker:
    def __init__(self) -> None:
        self.out = Reach()
        self._seen: set[int] = set()
        self._keep: list[Any] = []  # visited objects stay alive, so an id is never reused during the walk
        self._tool_ids: set[int] = set()
        self._loose: dict[int, tuple[str, BaseTool]] = {}
        self.found = 0  # runnables, tools and graphs seen so far: what explains a node's `.invoke`
        self._stopped = False

    def visit(self, obj: Any, where: str, depth: int = 0) -> None:
        if obj is None or isinstance(obj, str | bytes | int | float | bool | type | types.ModuleType):
            return
        if id(obj) in self._seen or depth > _MAX_DEPTH:
            return
        if len(self._seen) >= _MAX_OBJECTS:
            if not self._stopped:
                self._stopped = True
                self.out.blind.append(
                    Blind(
                        where,
                        f"the agent holds more than {_MAX_OBJECTS} objects, and the walk stopped there; tools past it "
                        f"run without chaoskit",
                        _EVERY_RUN,
                    )
                )
            return
        self._seen.add(id(obj))
        self._keep.append(obj)
        try:
            self._dispatch(obj, where, depth)
        except Exception as exc:  # an object that fails when looked at (a lazy proxy): say so, go on
            self.out.blind.append(
                Blind(
                    where,
                    f"a {type(obj).__name__} could not be looked into ({type(exc).__name__}: {exc}); any tools "
                    f"it runs run without chaoskit",
                    _EVERY_RUN,
                )
            )

    def _dispatch(self, obj: Any, where: str, depth: int) -> None:
        if isinstance(obj, ToolNode):
            self._tool_node(obj, where, depth)
        elif _is_remote(obj):
            self.found += 1
            self.out.blind.append(
                Blind(
                    where,
                    f"remote graph {getattr(obj, 'name', '?')!r} runs its tools in another process; they run without "
                    f"chaoskit",
                    "Attach chaoskit where that graph runs (instrument_graph there), or put `chaoskit http-proxy` "
                    "or `chaoskit mcp-proxy` in front of its tools.",
                )
            )
        elif _is_graph(obj):
            self.found += 1
            self._graph(obj, where, depth)
        elif isinstance(obj, BaseTool):
            self.found += 1
            self._tool(obj, where, depth)
        elif isinstance(obj, BaseLanguageModel):
            self.found += 1  # a chat model: holds no tool that runs
        elif isinstance(obj, Runnable):
            self.found += 1
            self._fields(obj, where, depth)
        else:
            self._other(obj, where, depth)

    def _tool_node(self, node: ToolNode, where: str, depth: int) -> None:
        self.found += 1
        if node not in self.out.nodes:
            self.out.nodes.append(node)
            self.out.where[id(node)] = where
        for name, tool in tools_of(node).items():
            self._tool_ids.add(id(unwrap_tool(tool)))
            self._tool_ids.add(id(tool))
            self._loose.pop(id(unwrap_tool(tool)), None)
            self.visit(tool, f"{where} > tool {name!r}", depth + 1)

    def _graph(self, graph: Any, where: str, depth: int) -> None:
        for name, spec in graph.nodes.items():
            bound = getattr(spec, "bound", spec)
            at = f"{where} > node {name!r}"
            # the node's own wrapper (a RunnableCallable) does not count: only what its function holds does
            before = self.found + (1 if isinstance(bound, Runnable) and not _is_graph(bound) else 0)
            self.visit(bound, at, depth + 1)
            if self.found <= before:
                self._unseen_run(node_functions(bound), at)

    def _unseen_run(self, functions: Sequence[Any], where: str) -> None:
        # a user's node or tool function that runs something (`.invoke`) while holding nothing the walk could
        # follow: it builds or looks up that agent at run time, out of reach of an attach-time walk
        for fn in functions:
            code = getattr(fn, "__code__", None)
            if code is None or _library(fn) or not _RUNS.intersection(_code_names(code)):
                continue
            self.out.blind.append(
                Blind(
                    where,
                    f"function {fn.__module__}.{fn.__qualname__} calls .invoke (or .stream, ...) on something it "
                    f"makes or finds only when it runs, which chaoskit cannot see when attaching: if that is an "
                    f"agent or a graph with tools, they run without chaoskit",
                    "Build that graph once, outside the function (instrument_graph then finds it), or call "
                    "instrument_graph on it where it is built, or pass "
                    "config={'callbacks': [ChaosCallbackHandler(plan)]} to the run (it reaches every tool of the "
                    "run, error faults only).",
                )
            )
            return

    def _tool(self, tool: BaseTool, where: str, depth: int) -> None:
        original = unwrap_tool(tool)
        if id(original) not in self._tool_ids and id(tool) not in self._tool_ids and not _goes_through(tool):
            self._loose.setdefault(id(original), (where, original))
        before = self.found
        self._fields(tool, where, depth)
        if self.found == before:  # a tool that runs a subagent it makes while it runs
            self._unseen_run([getattr(original, "func", None), getattr(original, "coroutine", None)], where)

    def _fields(self, obj: Any, where: str, depth: int) -> None:
        values = getattr(obj, "__dict__", None)
        if isinstance(values, Mapping):
            for value in list(values.values())[:_MAX_ITEMS]:
                self.visit(value, where, depth + 1)

    def _other(self, obj: Any, where: str, depth: int) -> None:
        if isinstance(obj, Mapping):
            for value in list(obj.values())[:_MAX_ITEMS]:
                self.visit(value, where, depth + 1)
        elif isinstance(obj, list | tuple | set | frozenset):
            for value in list(obj)[:_MAX_ITEMS]:
                self.visit(value, where, depth + 1)
        elif isinstance(obj, types.MethodType):
            self.visit(obj.__func__, where, depth + 1)
            self.visit(obj.__self__, where, depth + 1)
        elif isinstance(obj, functools.partial):
            self.visit(obj.func, where, depth + 1)
            self.visit(obj.args, where, depth + 1)
            self.visit(obj.keywords, where, depth + 1)
        elif isinstance(obj, types.FunctionType):
            self._function(obj, where, depth)
        elif hasattr(obj, "__wrapped__"):  # wrapt proxies, functools.wraps
            self.visit(getattr(obj, "__wrapped__", None), where, depth + 1)
        elif not _installed(type(obj).__module__):
            self._fields(obj, where, depth)  # a user's object (an agent holder)

    def _function(self, fn: types.FunctionType, where: str, depth: int) -> None:
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            self.visit(value, where, depth + 1)
        self.visit(fn.__defaults__, where, depth + 1)
        self.visit(fn.__kwdefaults__, where, depth + 1)
        self.visit(getattr(fn, "__wrapped__", None), where, depth + 1)
        if _installed(fn.__module__):
            return  # a library's function: what it holds for the user is in its closure, not its module
        names = set(_code_names(fn.__code__))
        for name in sorted(names):
            value = fn.__globals__.get(name)
            if isinstance(value, types.ModuleType):
                if _installed(value.__name__):
                    continue
                # `agents.refund_graph.invoke(...)`: the module's attributes that the code names
                for attr in sorted(names):
                    self.visit(getattr(value, attr, None), where, depth + 1)
            else:
                self.visit(value, where, depth + 1)

    def finish(self) -> Reach:
        self.out.loose = [entry for key, entry in self._loose.items() if key not in self._tool_ids]
        return self.out


def _goes_through(tool: BaseTool) -> bool:
    """Whether the tool's runs already go through chaoskit (a chaos tool, or ``@chaos`` under ``@tool``)."""
    if is_chaos_tool(tool):
        return True
    return any(spec_of(f) is not None for f in (getattr(tool, "func", None), getattr(tool, "coroutine", None)) if f)


def reach(graph: Any) -> Reach:
    """Walk ``graph`` (a compiled graph or a ToolNode) and everything its code holds."""
    walker = _Walker()
    walker.visit(graph, repr(getattr(graph, "name", None) or type(graph).__name__))
    return walker.finish()


# -- at run time: a tool that ran without chaoskit under an instrumented graph --------------------------------

#: metadata key on every tool instrument_graph / ChaosToolNode routes through chaoskit: a tool's own metadata
#: reaches its on_tool_start only (child runs do not inherit it), so a tool run without it went around chaoskit
MARK: Final = "chaoskit_attached"


def marked(tool: BaseTool) -> BaseTool:
    """A copy of ``tool`` whose runs carry :data:`MARK` in their callback metadata (the tool is unchanged)."""
    if (tool.metadata or {}).get(MARK):
        return tool
    return tool.model_copy(update={"metadata": {**(tool.metadata or {}), MARK: True}})


class Unreached(BaseCallbackHandler):
    """On an instrumented graph's callbacks (inherited by every run inside it, subagents included): warns once per
    tool name when a tool runs that does not go through chaoskit, so no part of the agent is skipped silently."""

    raise_error: bool = False
    run_inline: bool = True

    def __init__(self, graph_name: str) -> None:
        super().__init__()
        self._graph = graph_name
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def on_tool_start(
        self, serialized: dict[str, Any] | None, input_str: str, *, metadata: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if (metadata or {}).get(MARK):
            return
        name = str(kw.get("name") or (serialized or {}).get("name") or "?")
        with self._lock:
            if name in self._warned:
                return
            self._warned.add(name)
        warnings.warn(
            f"tool {name!r} ran without chaoskit inside graph {self._graph}, which instrument_graph instrumented: "
            f"it is in no ToolNode that instrument_graph found when attaching (a graph or tool made while the "
            f"agent runs, or a tool called outside a ToolNode), so no fault can fire on it and its calls are not "
            f"graded. Instrument the graph that runs it where it is built, wrap the tool with chaos_tool, or pass "
            f"config={{'callbacks': [ChaosCallbackHandler(plan)]}} to the run.",
            ChaosWarning,
            stacklevel=2,
        )
