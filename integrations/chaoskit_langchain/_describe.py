"""``chaoskit suggest`` for LangChain: a tool's name, arguments, result type and marks, read without running it.

Registered under the ``chaoskit.describers`` entry-point group. It recognises a ``BaseTool`` (a chaos tool or a
plain one) and the entry points that carry marks for tools they wrap at their first call (``ChaosCallbackHandler``,
``ChaosMiddleware``, whose ``irreversible`` / ``idempotency_args`` / ``idempotent`` lists become marks).
"""

from __future__ import annotations

import inspect
from typing import Any

from langchain_core.tools import BaseTool

from chaoskit.suggest import EVERY_TOOL, Param, SuggestError, ToolInfo

from ._callbacks import ChaosCallbackHandler
from ._common import SpecTable, tool_spec
from ._tool import unwrap_tool

__all__ = ["describe", "describe_tool"]


def _result(tool: BaseTool) -> str | None:
    """The return annotation of the function behind the tool, when it has one."""
    for attr in ("func", "coroutine"):
        fn = getattr(tool, attr, None)
        if fn is None:
            continue
        try:
            ret = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return None
        if ret is inspect.Signature.empty:
            return None
        return ret if isinstance(ret, str) else getattr(ret, "__name__", None) if isinstance(ret, type) else str(ret)
    return None


def _json_schema(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema of the arguments the model gives (injected ones left out), as ``tool.args`` builds it."""
    raw: Any = tool.args_schema if isinstance(tool.args_schema, dict) else tool.tool_call_schema
    if isinstance(raw, dict):
        return raw
    build = getattr(raw, "model_json_schema", None) or raw.schema  # pydantic 2, or a pydantic.v1 model
    schema = build()
    if not isinstance(schema, dict):
        raise TypeError(f"the schema of {tool.name!r} is a {type(schema).__name__}, not a JSON object")
    return schema


def describe_tool(tool: BaseTool, *, source: str = "langchain") -> ToolInfo:
    """One LangChain tool as ``suggest`` sees it. A tool whose argument schema cannot be built is an error
    naming the tool, never a tool with no arguments."""
    spec = tool_spec(tool)
    original = unwrap_tool(tool)
    try:
        schema = _json_schema(tool)
    except Exception as exc:
        raise SuggestError(
            f"tool {tool.name!r}: its argument schema cannot be read ({type(exc).__name__}: {exc}); "
            "give it an args_schema that pydantic can turn into JSON schema"
        ) from None
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    params = tuple(
        Param(
            str(name),
            p.get("type") if isinstance(p, dict) else None,
            name in required,
            p.get("description") if isinstance(p, dict) else None,
        )
        for name, p in props.items()
    )
    return ToolInfo(
        name=tool.name,
        description=(tool.description or "").strip().split("\n")[0] or None,
        params=params,
        result=_result(original),
        irreversible=True if spec is not None and spec.irreversible else None,
        idempotent=True if spec is not None and spec.idempotent else None,
        idempotency_arg=spec.idempotency_arg if spec is not None else None,
        source="langchain (chaos_tool)" if spec is not None else source,
        replaces_result=True if spec is not None else None,
    )


def _marks(specs: SpecTable, owner: str, *, replaces: bool) -> list[ToolInfo]:
    """Marks for the tools an entry point knows. A callback handler cannot replace a result (``replaces`` False),
    so every tool it has seen is marked so, and ``suggest`` plans no data fault on it."""
    names = set(specs.irreversible) | set(specs.idempotent) | set(specs.idempotency_args)
    # a handler builds its specs at a tool's first call, so specs.names() is empty before a run: the handler
    # reaches every plain tool of the agent, so every one of them is marked (EVERY_TOOL), not just those seen
    every = [] if replaces else [ToolInfo(name=EVERY_TOOL, source=f"marks:{owner}", replaces_result=False)]
    return every + [
        ToolInfo(
            name=n,
            irreversible=True if n in specs.irreversible else None,
            idempotent=True if n in specs.idempotent else None,
            idempotency_arg=specs.idempotency_args.get(n),
            source=f"marks:{owner}",
            replaces_result=replaces,
        )
        for n in sorted(names | set(specs.names()) if not replaces else names)
    ]


def describe(obj: Any) -> list[ToolInfo] | None:
    """The ``chaoskit.describers`` entry point: tools (or marks) of ``obj``, None when it is no LangChain object."""
    if isinstance(obj, BaseTool):
        return [describe_tool(obj)]
    try:
        specs = getattr(obj, "specs", None)
    except Exception:
        return None  # an object whose attributes raise (a lazy client) is no LangChain entry point
    if isinstance(specs, SpecTable):
        return _marks(specs, type(obj).__name__, replaces=not isinstance(obj, ChaosCallbackHandler))
    return None
