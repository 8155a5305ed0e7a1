"""Which tool an HTTP request is: routes from the plan's ``METHOD /path`` names and an OpenAPI file's operations.

A plan's ``tool:`` names a route (``POST /refunds``, ``GET /orders/{id}``) or an OpenAPI ``operationId``. The
tool name of a route is the spelling the plan uses for it; a route the plan does not name is called by its
operationId when the OpenAPI file gives one, else ``METHOD /template``. A request that matches no known route is
the tool ``METHOD /its/path`` (so a glob such as ``GET /orders/*`` still reaches it).

What a route writes is read from its method: POST and PATCH are irreversible writes; PUT and DELETE are
irreversible but idempotent (repeating one changes nothing more); GET, HEAD and OPTIONS only read. An OpenAPI
operation may say otherwise with ``x-chaoskit-irreversible`` / ``x-chaoskit-idempotent`` (booleans).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoskit import ChaoskitError, Plan, PlanError
from chaoskit.engine import ToolSpec
from chaoskit.scenarios import OpenAPIError, read_operations

__all__ = ["DATA_FAULTS", "IDEMPOTENCY_ARG", "METHODS", "Route", "RouteTable", "load_openapi", "parse_route"]

#: the HTTP methods a route may name
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
#: fault types that rewrite the upstream's answer: the proxy reads such a tool's response bodies
DATA_FAULTS = frozenset({"empty", "partial", "schema_drift", "garbage", "prompt_injection", "stale_state"})
#: the argument that carries a request's ``Idempotency-Key`` header (``chaoskit.idempotency_key`` on the span)
IDEMPOTENCY_ARG = "idempotency_key"

_ROUTE = re.compile(r"^\s*([A-Za-z]+)\s+(/\S*)\s*$")
_PARAM = re.compile(r"\{([^{}/]+)\}")
_WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_IDEMPOTENT = frozenset({"PUT", "DELETE"})
#: how many tools of unmatched paths are remembered (a path with ids in it makes a new tool per id)
_MAX_UNMATCHED = 4096


def parse_route(text: str) -> tuple[str, str] | None:
    """``("POST", "/refunds")`` for ``"POST /refunds"`` (method in any case), None when ``text`` is no route."""
    m = _ROUTE.match(text)
    if m is None or m.group(1).upper() not in METHODS:
        return None
    return m.group(1).upper(), m.group(2)


@dataclass(frozen=True, slots=True)
class Route:
    """One operation of the upstream API: its method, path template and what the OpenAPI file says of it."""

    method: str
    template: str
    operation_id: str | None = None
    summary: str | None = None
    irreversible: bool | None = None
    idempotent: bool | None = None

    @property
    def key(self) -> str:
        """``METHOD /template``."""
        return f"{self.method} {self.template}"

    def regex(self) -> re.Pattern[str]:
        """The path pattern: each ``{param}`` is one path segment."""
        parts = _PARAM.split(self.template)
        out = []
        for i, part in enumerate(parts):
            out.append(f"(?P<p{i // 2}>[^/]+)" if i % 2 else re.escape(part))
        return re.compile("^" + "".join(out) + "$")

    def params(self) -> list[str]:
        """The template's parameter names, in order."""
        return _PARAM.findall(self.template)


def load_openapi(path: str | os.PathLike[str]) -> list[Route]:
    """The operations of an OpenAPI (3.x or Swagger 2) file, JSON or YAML, read by chaoskit's one OpenAPI reader;
    a bad file is a ChaoskitError naming ``--openapi``, the file and the place."""
    try:
        operations = read_operations(path)
    except OpenAPIError as exc:
        raise ChaoskitError(f"--openapi {exc}") from None
    return [
        Route(op.method, op.template, op.operation_id, op.summary, op.irreversible, op.idempotent) for op in operations
    ]


class RouteTable:
    """The routes of one proxy and the ToolSpec of each, resolved once against the plan's tool names.

    ``refusal`` is the ToolSpec ``error_result`` every route gets: which results are the upstream's own errors.
    """

    def __init__(
        self,
        plan: Plan,
        routes: list[Route] | None = None,
        *,
        refusal: Callable[[Any], Any] | None = None,
        source: str = "<plan>",
    ) -> None:
        self.plan = plan
        self._refusal = refusal
        by_key: dict[str, Route] = {r.key: r for r in routes or ()}
        by_op = {r.operation_id: r for r in by_key.values() if r.operation_id}
        named: dict[str, str] = {}  # route key -> the spelling the plan names it by
        for name in _plan_tool_names(plan):
            route = by_op.get(name)
            if route is None:
                parsed = parse_route(name)
                if parsed is None:
                    known = ", ".join(sorted(by_op)) or "none (no --openapi file)"
                    raise PlanError(
                        f"tool {name!r} names no HTTP route: give a route such as 'POST /refunds' or "
                        f"'GET /orders/{{id}}', or an operationId of the --openapi file (known: {known})",
                        source=source,
                        field="tool",
                    )
                route = by_key.setdefault(f"{parsed[0]} {parsed[1]}", Route(*parsed))
            other = named.get(route.key)
            if other is not None and other != name:
                raise PlanError(
                    f"tools {other!r} and {name!r} name the same route ({route.key}); name each route one way",
                    source=source,
                    field="tool",
                )
            named[route.key] = name
        # concrete paths before templated ones (the OpenAPI rule), then the longer template first
        ordered = sorted(by_key.values(), key=lambda r: (len(r.params()), -len(r.template)))
        self._table: dict[str, list[tuple[re.Pattern[str], Route, ToolSpec]]] = {}
        self.specs: dict[str, ToolSpec] = {}
        for r in ordered:
            name = named.get(r.key) or r.operation_id or r.key
            spec = self._spec(name, r.method, r)
            self.specs[r.key] = spec
            self._table.setdefault(r.method, []).append((r.regex(), r, spec))
        self._unmatched: dict[str, ToolSpec] = {}

    def _spec(self, name: str, method: str, route: Route | None) -> ToolSpec:
        irreversible = method in _WRITES
        idempotent = method in _IDEMPOTENT
        if route is not None:
            irreversible = irreversible if route.irreversible is None else route.irreversible
            idempotent = idempotent if route.idempotent is None else route.idempotent
        return ToolSpec(
            name=name,
            irreversible=irreversible,
            idempotency_arg=IDEMPOTENCY_ARG,
            description=route.summary if route is not None else None,
            plan=self.plan,
            idempotent=idempotent and irreversible,
            error_result=self._refusal,
        )

    def match(self, method: str, path: str) -> tuple[ToolSpec, Route | None, dict[str, str]]:
        """The tool of a request, its route (None when unmatched) and the path parameters by name."""
        for regex, route, spec in self._table.get(method, ()):
            m = regex.match(path)
            if m is not None:
                return spec, route, dict(zip(route.params(), m.groups(), strict=True))
        key = f"{method} {path}"
        found = self._unmatched.get(key)
        if found is None:
            found = self._spec(key, method, None)
            if len(self._unmatched) < _MAX_UNMATCHED:
                self._unmatched[key] = found
        return found, None, {}


def _plan_tool_names(plan: Plan) -> list[str]:
    """The exact tool names the plan's faults name (a cascade's dependents too), in plan order."""
    out: list[str] = []
    for fault in plan.faults:
        for name in fault.tool_names():
            if name not in out:
                out.append(name)
    return out
