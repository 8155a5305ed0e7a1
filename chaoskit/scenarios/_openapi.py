"""OpenAPI files, read once for all: the document and its operations, for the HTTP proxy, suggest and the runner."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.plan._yaml import load_yaml

__all__ = ["METHODS", "OpenAPIError", "Operation", "operation_ids", "read_document", "read_operations"]

#: the HTTP methods an OpenAPI path item may hold operations under (other keys: parameters, summary, x-...)
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


class OpenAPIError(ChaoskitError, ValueError):
    """An OpenAPI file that cannot be read or is not an OpenAPI document; the message names the file and the
    place (``paths./refunds.post.operationId``) and what is allowed."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of an OpenAPI document: its method and path, and the marks chaoskit reads from it."""

    method: str  # upper case
    template: str
    operation_id: str | None
    summary: str | None
    irreversible: bool | None
    idempotent: bool | None
    #: the operation's mapping and its path item's (``parameters`` shared by the item's operations)
    op: Mapping[str, Any]
    item: Mapping[str, Any]
    #: ``FILE: paths./refunds.post``, to prefix a message about this operation
    where: str

    @property
    def name(self) -> str:
        """The tool name the HTTP proxy gives it: the operationId, else ``METHOD /path``."""
        return self.operation_id or f"{self.method} {self.template}"


def read_document(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """An OpenAPI file's document (JSON or YAML), with a ``paths`` mapping; :class:`OpenAPIError` if not.

    JSON (what large public specs ship as) is read by ``json``, with no limit on how many values it holds; YAML by
    chaoskit's safe loader, which rejects duplicate keys and refuses more than its limit of values (alias bombs).
    """
    src = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
        raise OpenAPIError(f"{src}: cannot read the OpenAPI file ({reason})") from None
    doc = _parse(text, src)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("paths"), Mapping):
        raise OpenAPIError(
            f"{src}: not an OpenAPI file: expected a mapping with 'openapi' and 'paths' (path -> method -> operation)"
        )
    return doc


def _parse(text: str, src: str) -> Any:
    if src.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            if src.lower().endswith(".json"):
                raise OpenAPIError(f"{src}: cannot parse the OpenAPI file as JSON: {exc}") from None
    try:
        return load_yaml(text, src)[0]
    except ChaoskitError as exc:
        if "values" in str(exc) and "limited" in str(exc):
            raise OpenAPIError(
                f"{src}: the OpenAPI file holds more values than the YAML reader takes ({exc}); give the same "
                "spec as JSON (e.g. the provider's openapi.json), which is read without that limit"
            ) from None
        raise OpenAPIError(f"{src}: cannot parse the OpenAPI file: {exc}") from None


def read_operations(path: str | os.PathLike[str], doc: Mapping[str, Any] | None = None) -> list[Operation]:
    """Every operation of the OpenAPI file ``path`` (``doc``: its document, already read), checked: each a
    mapping, operationIds non-empty and unique, ``x-chaoskit-irreversible`` / ``x-chaoskit-idempotent`` true or
    false."""
    src = os.fspath(path)
    doc = read_document(path) if doc is None else doc
    found: list[Operation] = []
    seen: dict[str, str] = {}
    for template, item in doc["paths"].items():
        if not isinstance(template, str) or not template.startswith("/") or not isinstance(item, Mapping):
            raise OpenAPIError(
                f"{src}: paths: {template!r} must be a path starting with '/', mapping HTTP methods to operations"
            )
        for method, op in item.items():
            if not isinstance(method, str) or method.lower() not in METHODS:
                continue  # parameters, summary, servers, x-...: not operations
            where = f"{src}: paths.{template}.{method}"
            if not isinstance(op, Mapping):
                raise OpenAPIError(f"{where}: expected an operation (a mapping), got {type(op).__name__}")
            op_id = op.get("operationId")
            if op_id is not None and (not isinstance(op_id, str) or not op_id):
                raise OpenAPIError(f"{where}.operationId: expected a non-empty string, got {op_id!r}")
            key = f"{method.upper()} {template}"
            if op_id is not None and op_id in seen:
                raise OpenAPIError(f"{where}.operationId: {op_id!r} is also the operationId of {seen[op_id]}")
            if op_id is not None:
                seen[op_id] = key
            found.append(
                Operation(
                    method.upper(),
                    template,
                    op_id,
                    _summary(op),
                    _flag(op, "x-chaoskit-irreversible", where),
                    _flag(op, "x-chaoskit-idempotent", where),
                    op,
                    item,
                    where,
                )
            )
    return found


def operation_ids(path: str | os.PathLike[str]) -> dict[str, tuple[str, str]]:
    """The operationIds of an OpenAPI file -> (METHOD, path template)."""
    return {op.operation_id: (op.method, op.template) for op in read_operations(path) if op.operation_id}


def _summary(op: Mapping[str, Any]) -> str | None:
    for key in ("summary", "description"):
        text = op.get(key)
        if isinstance(text, str) and text.strip():
            return text.strip().splitlines()[0]
    return None


def _flag(op: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = op.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise OpenAPIError(f"{where}.{key}: expected true or false, got {value!r}")
