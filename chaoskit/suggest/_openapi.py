"""An OpenAPI 3 file's operations as tools, named as the HTTP proxy names them (operationId, else ``METHOD /path``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.plan._yaml import load_yaml
from chaoskit.suggest._model import Param, SuggestError, ToolInfo

__all__ = ["read_openapi"]

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _flag(op: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = op.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise SuggestError(f"{where}.{key}: expected true or false, got {value!r}")


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


def _parse(text: str, src: str) -> Any:
    """The file's document. JSON (what large public specs ship as) is read by ``json``, with no limit on how many
    values it holds; YAML by chaoskit's safe loader, which refuses more than its limit of values (alias bombs)."""
    if src.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            if src.lower().endswith(".json"):
                raise SuggestError(f"{src}: cannot parse the OpenAPI file as JSON: {exc}") from None
    try:
        return load_yaml(text, src)[0]
    except ChaoskitError as exc:
        if "values" in str(exc) and "limited" in str(exc):
            raise SuggestError(
                f"{src}: the OpenAPI file holds more values than the YAML reader takes ({exc}); give the same "
                "spec as JSON (e.g. the provider's openapi.json), which is read without that limit"
            ) from None
        raise SuggestError(f"cannot parse the OpenAPI file: {exc}") from None


def read_openapi(path: str | os.PathLike[str]) -> list[ToolInfo]:
    """The operations of an OpenAPI file as tools. ``x-chaoskit-irreversible`` / ``x-chaoskit-idempotent`` on
    an operation are explicit marks; the method is the next-best declaration (as the HTTP proxy reads it)."""
    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuggestError(f"{src}: cannot read the OpenAPI file: {type(exc).__name__}: {exc}") from None
    doc = _parse(text, src)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("paths"), Mapping):
        raise SuggestError(
            f"{src}: not an OpenAPI file: expected a mapping with 'openapi' and 'paths' (path -> method -> operation)"
        )
    tools: list[ToolInfo] = []
    for route, item in doc["paths"].items():
        if not isinstance(item, Mapping):
            raise SuggestError(f"{src}: paths.{route}: expected a mapping of HTTP methods to operations")
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            where = f"{src}: paths.{route}.{method}"
            if not isinstance(op, Mapping):
                raise SuggestError(f"{where}: expected an operation (a mapping), got {type(op).__name__}")
            name = op.get("operationId") or f"{method.upper()} {route}"
            if not isinstance(name, str):
                raise SuggestError(f"{where}.operationId: expected a string, got {name!r}")
            tools.append(
                ToolInfo(
                    name=name,
                    description=op.get("summary") or op.get("description"),
                    params=_params(doc, op, item.get("parameters"), where),
                    result=_result(doc, op, where),
                    irreversible=_flag(op, "x-chaoskit-irreversible", where),
                    idempotent=_flag(op, "x-chaoskit-idempotent", where),
                    http=f"{method.upper()} {route}",
                    statuses=tuple(str(s) for s in (op.get("responses") or {})),
                    source=f"openapi:{src}",
                )
            )
    if not tools:
        raise SuggestError(f"{src}: the OpenAPI file has no operations under 'paths'")
    return tools
