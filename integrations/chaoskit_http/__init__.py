"""chaoskit_http: an HTTP chaos proxy for agents whose tools are REST APIs, on chaoskit's public engine interface.

``chaoskit http-proxy --plan plan.yaml --listen 127.0.0.1:8080 --upstream http://127.0.0.1:9000`` (the
``chaoskit.commands`` entry point :func:`add_parser`), or in Python::

    with chaoskit_http.serve("plan.yaml", upstream="http://127.0.0.1:9000") as url:
        ...  # point the agent at url

Each request is one attempt of :mod:`chaoskit.engine` (``execute_tool {tool}`` span, the plan's faults), the
tool being its route (``POST /refunds``) or its OpenAPI operationId. Install with ``pip install chaoskit[http]``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._cli import add_parser
from ._routes import DATA_FAULTS, IDEMPOTENCY_ARG, Route, RouteTable, load_openapi, parse_route

if TYPE_CHECKING:
    from ._app import HttpProxy, UpstreamResponse
    from ._server import ProxyServer, parse_listen, serve

# the names that need the extra (httptools, uvicorn) load on first use, so that the command itself always
# registers and can say which extra to install
_LAZY = {
    "HttpProxy": "._app",
    "UpstreamResponse": "._app",
    "ProxyServer": "._server",
    "parse_listen": "._server",
    "serve": "._server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chaoskit_http' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = [
    "DATA_FAULTS",
    "IDEMPOTENCY_ARG",
    "HttpProxy",
    "ProxyServer",
    "Route",
    "RouteTable",
    "UpstreamResponse",
    "add_parser",
    "load_openapi",
    "parse_listen",
    "parse_route",
    "serve",
]
