"""An OpenAPI 3 file's operations as tools, named as the HTTP proxy names them (operationId, else ``METHOD /path``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from chaoskit.scenarios import OpenAPIError, read_document, read_operations
from chaoskit.suggest._tool_info import Param, SuggestError, ToolInfo

__all__ = ["read_openapi"]


def _ref(doc: Mapping[str, Any], schema: Any, where: str) -> Any:
    """A schema with its ``$ref`` resolved (``#/components/schemas/X``), through chains of references (a
    parameter that refers to one that refers on); an unresolvable or circular chain is an error."""
    hops: list[str] = []
    while isinstance(schema, Mapping) and "$ref" in schema:
        ref = str(schema["$ref"])
        if ref in hops:
            raise SuggestError(f"{where}: $ref {ref!r} refers back to itself ({' -> '.join([*hops, ref])})")
        hops.append(ref)
        if not ref.startswith("#/"):
            raise SuggestError(f"{where}: $ref {ref!r} points outside the file; only local '#/...' references are read")
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")  # JSON pointer escapes
            if not isinstance(target, Mapping) or part not in target:
                raise SuggestError(f"{where}: $ref {ref!r} names nothing in the file")
            target = target[part]
        schema = target
    return schema


def _params(doc: Mapping[str, Any], op: Mapping[str, Any], shared: Any, where: str) -> tuple[Param, ...]:
    out: list[Param] = []
    raw = [*(shared if isinstance(shared, list) else []), *(op.get("parameters") or [])]
    for i, p in enumerate(raw):
        p = _ref(doc, p, f"{where}.parameters[{i}]")
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
            raise SuggestError(f"{where}.parameters[{i}]: expected a mapping with a name, got {p!r}")
        schema = _ref(doc, p.get("schema") or {}, f"{where}.parameters[{i}].schema")
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        out.append(Param(p["name"], kind, bool(p.get("required")), p.get("description"), str(p.get("in") or "")))
    body = _ref(doc, op.get("requestBody") or {}, f"{where}.requestBody")
    content = body.get("content") if isinstance(body, Mapping) else None
    if isinstance(content, Mapping):
        for media in content.values():
            schema = _ref(doc, (media or {}).get("schema") or {}, f"{where}.requestBody.schema")
            props = schema.get("properties") if isinstance(schema, Mapping) else None
            required = set(schema.get("required") or []) if isinstance(schema, Mapping) else set()
            for name, prop in (props or {}).items():
                prop = _ref(doc, prop, f"{where}.requestBody.schema.properties.{name}")
                kind = prop.get("type") if isinstance(prop, Mapping) else None
                out.append(Param(str(name), kind, name in required, None, "body"))
            break
    return tuple(out)


def _result(doc: Mapping[str, Any], op: Mapping[str, Any], where: str) -> Any:
    """The JSON schema of the first 2xx response with a body, or None."""
    for status, resp in sorted((op.get("responses") or {}).items(), key=lambda kv: str(kv[0])):
        if not str(status).startswith("2"):
            continue
        resp = _ref(doc, resp, f"{where}.responses.{status}")
        for media in ((resp or {}).get("content") or {}).values():
            schema = _ref(doc, (media or {}).get("schema"), f"{where}.responses.{status}.schema")
            if isinstance(schema, Mapping):
                props = schema.get("properties")
                if isinstance(props, Mapping):
                    # properties resolved once, so the classification sees arrays behind a $ref
                    schema = {**schema, "properties": {k: _ref(doc, v, where) for k, v in props.items()}}
                if isinstance(schema.get("items"), Mapping):
                    # an array of $ref records (the usual list): the items' fields make it structured
                    schema = {**schema, "items": _ref(doc, schema["items"], f"{where}.items")}
                return dict(schema)
    return None


def read_openapi(path: str | os.PathLike[str]) -> list[ToolInfo]:
    """The operations of an OpenAPI file as tools. ``x-chaoskit-irreversible`` / ``x-chaoskit-idempotent`` on
    an operation are explicit marks; the method is the next-best declaration (as the HTTP proxy reads it)."""
    src = str(path)
    try:
        doc = read_document(path)
        operations = read_operations(path, doc)
    except OpenAPIError as exc:
        raise SuggestError(str(exc)) from None
    tools: list[ToolInfo] = []
    for op in operations:
        raw = op.op
        tools.append(
            ToolInfo(
                name=op.name,
                description=raw.get("summary") or raw.get("description"),
                params=_params(doc, raw, op.item.get("parameters"), op.where),
                result=_result(doc, raw, op.where),
                irreversible=op.irreversible,
                idempotent=op.idempotent,
                http=f"{op.method} {op.template}",
                statuses=tuple(str(s) for s in (raw.get("responses") or {})),
                source=f"openapi:{src}",
            )
        )
    if not tools:
        raise SuggestError(f"{src}: the OpenAPI file has no operations under 'paths'")
    return tools
