"""The records ``suggest`` works on: a discovered tool, its parameters, and how it was classified (with why)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from chaoskit._errors import ChaoskitError

__all__ = [
    "EVERY_TOOL",
    "Classification",
    "Decision",
    "McpServer",
    "Param",
    "SuggestError",
    "ToolInfo",
    "merge_tools",
]

#: the name of a ``marks:`` record that applies to every tool found with it that has no chaos entry point of its
#: own (``replaces_result`` not True): a callback handler reaches every plain tool of its agent, not only the ones
#: it has already seen called
EVERY_TOOL = "*"


class SuggestError(ChaoskitError):
    """``suggest`` cannot go on: an agent with no tools, an unreadable OpenAPI file, a schema it cannot read."""


@dataclass(frozen=True)
class McpServer:
    """An MCP server command (``--mcp "python server.py"``): the MCP describer starts it and lists its tools."""

    command: tuple[str, ...]
    timeout_s: float = 20.0


@dataclass(frozen=True)
class Param:
    """One parameter of a tool: its name, its type as declared (JSON-schema type or Python annotation), and
    whether the caller must give it."""

    name: str
    type: str | None = None
    required: bool = False
    description: str | None = None
    #: where the parameter travels, for an HTTP operation (path, query, header, body); None for a function
    location: str | None = None


@dataclass(frozen=True)
class ToolInfo:
    """A tool as ``suggest`` found it: the explicit marks its entry point carries, then what it says of itself.

    ``irreversible`` / ``idempotent`` / ``idempotency_arg`` are the marks (``@chaos(irreversible=True)``, an
    entry point's ``irreversible=[...]`` list, an OpenAPI ``x-chaoskit-irreversible``); None means "not
    declared", which is not the same as "declared reversible". ``result`` is what the tool says it returns: a
    Python annotation, or a JSON-schema dict for an HTTP operation. ``source`` names where it was found.
    """

    name: str
    description: str | None = None
    params: tuple[Param, ...] = ()
    result: Any = None
    irreversible: bool | None = None
    idempotent: bool | None = None
    idempotency_arg: str | None = None
    #: an HTTP operation's method and path (``POST /refunds``); None for a function
    http: str | None = None
    #: the HTTP statuses an operation documents (OpenAPI ``responses``); empty when unknown
    statuses: tuple[str, ...] = ()
    source: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)
    #: whether the entry point can replace the tool's result (data faults: empty, partial, drift): False for a
    #: tool reached only through a callback handler, which cannot change a result; None when not known
    replaces_result: bool | None = None

    def param(self, name: str) -> Param | None:
        """The parameter of that name, or None."""
        return next((p for p in self.params if p.name == name), None)


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is None:
        return b
    if b is None:
        return a
    return a or b


def merge_tools(found: list[ToolInfo]) -> list[ToolInfo]:
    """One record per tool name, in order of first sight. A tool seen twice (the function and the framework
    tool wrapping it, or a graph and the callback handler that marks it) keeps every mark any source gave:
    a mark is never lost because one entry point did not repeat it."""
    out: dict[str, ToolInfo] = {}
    for t in found:
        old = out.get(t.name)
        if old is None:
            out[t.name] = replace(t, sources=(t.source,))
            continue
        names = {p.name for p in old.params}
        out[t.name] = replace(
            old,
            description=old.description or t.description,
            params=old.params + tuple(p for p in t.params if p.name not in names),
            result=old.result if old.result is not None else t.result,
            irreversible=_or(old.irreversible, t.irreversible),
            idempotent=_or(old.idempotent, t.idempotent),
            idempotency_arg=old.idempotency_arg or t.idempotency_arg,
            http=old.http or t.http,
            statuses=old.statuses or t.statuses,
            replaces_result=_or(old.replaces_result, t.replaces_result),
            sources=old.sources + ((t.source,) if t.source not in old.sources else ()),
        )
    return list(out.values())


@dataclass(frozen=True)
class Decision:
    """One answer of the classification and the reason for it (``declared``, ``name``, ``schema``, ...)."""

    value: Any
    why: str
    basis: str

    def to_dict(self) -> dict[str, Any]:
        """The decision as a JSON-ready dict."""
        return {"value": self.value, "why": self.why, "basis": self.basis}


@dataclass(frozen=True)
class Classification:
    """What ``suggest`` decided about one tool, each with its reason.

    ``kind`` is ``read``, ``write`` or ``irreversible``; ``idempotency`` the argument that carries an
    idempotency key (None: it takes none); ``collection`` whether its result is a collection that can come
    back empty; ``structured`` whether its result is a record whose fields can be cut or renamed.
    """

    tool: ToolInfo
    kind: Decision
    idempotency: Decision
    collection: Decision
    structured: Decision

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    def to_dict(self) -> dict[str, Any]:
        """The classification as a JSON-ready dict."""
        return {
            "tool": self.tool.name,
            "source": ", ".join(self.tool.sources or (self.tool.source,)),
            "kind": self.kind.to_dict(),
            "idempotency_key": self.idempotency.to_dict(),
            "collection": self.collection.to_dict(),
            "structured": self.structured.to_dict(),
        }
