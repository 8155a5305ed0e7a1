"""Scenario keys naming tools that live out of process: the MCP server (``mcp:``), the HTTP API (``http:``)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from chaoskit._errors import PlanError
from chaoskit.plan._locate import _PlanErrorsInit, _suggest
from chaoskit.plan._model import Plan
from chaoskit.scenarios._openapi import operation_ids

__all__ = ["PORT", "READY_FILE", "HttpUpstream", "McpServer", "command_argv", "http_route", "on_this_python"]


def on_this_python(argv: list[str]) -> list[str]:
    """A command line of a scenario or battery file, with a leading ``python`` or ``python3`` meaning the
    interpreter the battery runs on (its virtualenv and its packages), whatever ``python`` the PATH finds."""
    return [sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3") else list(argv)


def command_argv(v: Any, what: str) -> Any:
    """A scenario's ``command:`` as an argv list (a string is split as a shell would); a ValueError naming
    ``what`` the command must start when it is not one."""
    if isinstance(v, str):
        try:
            v = shlex.split(v)
        except ValueError as exc:
            raise ValueError(f"cannot split the command line {v!r}: {exc}") from None
    if v is not None and (not isinstance(v, list) or not v or not all(isinstance(a, str) and a for a in v)):
        raise ValueError(f"must be the command that starts {what}, got {v!r}")
    return v


class McpServer(_PlanErrorsInit):
    """``mcp:``: the MCP server whose tools the agent uses; the runner puts ``chaoskit mcp-proxy`` in front.

    ``command`` starts the server (a list, or one string split like a shell; a leading ``python`` is the
    runner's own interpreter), or ``url`` is its Streamable HTTP endpoint. ``transport`` is how the agent
    reaches the proxy: ``stdio`` (the agent starts the proxy command it finds in ``CHAOSKIT_MCP_COMMAND``) or
    ``http`` (the runner starts the proxy and gives the agent ``CHAOSKIT_MCP_URL``). ``faults`` holds the MCP
    protocol faults (``list_changed``, ``tool_disappears``, ``slow_initialize``, ``malformed_result``), checked
    by the proxy; the scenario's own ``faults`` apply to the server's tool calls as to any tool.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = None
    url: str | None = None
    transport: Literal["stdio", "http"] = "stdio"
    faults: list[dict[str, Any]] = Field(default_factory=list)
    irreversible: list[str] = Field(default_factory=list)

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return command_argv(v, "the MCP server, e.g. [python, server.py]")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"must be the server's http:// or https:// Streamable HTTP URL, got {v!r}")
        return v

    @field_validator("faults", mode="before")
    @classmethod
    def _faults(cls, v: Any) -> Any:
        for i, item in enumerate(v or ()):
            if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
                raise ValueError(f"faults[{i}]: each protocol fault is a mapping with a 'type', got {item!r}")
        if v:
            # checked here, at load, by the package that registers each type (chaoskit.faults entry points):
            # a typo or a missing extra fails before the run starts, not when the proxy does
            try:
                Plan.from_dict({"faults": list(v)}, source="mcp")
            except PlanError as exc:
                raise ValueError(str(exc).removeprefix("mcp: ")) from None
        return v

    @model_validator(mode="after")
    def _one_server(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give the MCP server either as command: [...] or as url: http://...")
        if self.url is not None and self.transport == "stdio":
            raise ValueError("a server at a url is reached over http: set transport: http")
        return self


#: the placeholders of an ``http.command``: where the runner learns the upstream's address
PORT, READY_FILE = "{port}", "{ready_file}"
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_ROUTE = re.compile(r"^\s*([A-Za-z]+)\s+(/\S*)\s*$")
_OPERATION_ID = re.compile(r"^[A-Za-z_][\w.\-]*$")


def http_route(text: str) -> tuple[str, str] | None:
    """``("POST", "/refunds")`` for ``"POST /refunds"`` (the method in any case); None when ``text`` is no route."""
    m = _ROUTE.match(text)
    if m is None or m.group(1).upper() not in _METHODS:
        return None
    return m.group(1).upper(), m.group(2)


class HttpUpstream(_PlanErrorsInit):
    """``http:``: the REST API whose routes are the agent's tools; the runner puts ``chaoskit http-proxy`` in front.

    ``url`` is an API that already runs, or ``command`` starts one for each episode (a list, or one string split
    like a shell; a leading ``python`` is the runner's own interpreter). The command says where the API listens
    through a placeholder: ``{port}`` (the runner picks a free port and waits until it accepts connections) or
    ``{ready_file}`` (the API writes its URL to that file once it serves). ``openapi`` is an OpenAPI file whose
    operationIds the faults may name; ``irreversible`` lists routes (``POST /send``) or operationIds that are
    irreversible writes besides POST, PATCH, PUT and DELETE. Paths are relative to the current directory, as
    for ``command``. The agent finds the proxy's URL in ``CHAOSKIT_HTTP_URL``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = None
    url: str | None = None
    openapi: str | None = None
    irreversible: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        # checked here, not by extra="forbid": the scenario's error would list the keys of the fault type `http`
        allowed = list(cls.model_fields)
        if not isinstance(data, Mapping):
            raise ValueError(f"must be a mapping with url or command (and optionally {', '.join(allowed[2:])})")
        for key in data:
            if key not in allowed:
                hint = _suggest(str(key), allowed)
                raise ValueError(f"unknown key {key!r}{hint}; allowed here: {', '.join(allowed)}")
        return data

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        v = command_argv(v, "the API, e.g. [python, api.py, --port, '{port}']")
        if v is not None and not any(PORT in a or READY_FILE in a for a in v):
            raise ValueError(
                "the runner cannot tell where the API listens: put {port} in the command (the runner picks a "
                "free port and waits until it accepts connections) or {ready_file} (the API writes its URL "
                f"there once it serves), got {v!r}"
            )
        return v

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"must be the API's http:// or https:// base URL, got {v!r}")
        return v

    @field_validator("openapi")
    @classmethod
    def _openapi(cls, v: str | None) -> str | None:
        if v is not None:
            if not Path(v).is_file():
                raise ValueError(f"no such file {v!r} (relative to the current directory, {os.getcwd()})")
            operation_ids(v)
        return v

    @field_validator("irreversible", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("irreversible")
    @classmethod
    def _tools(cls, v: list[str]) -> list[str]:
        for item in v:
            if http_route(item) is None and not _OPERATION_ID.match(item):
                raise ValueError(
                    f"{item!r} is neither a route ('POST /refunds', methods {', '.join(_METHODS)}) nor an operationId"
                )
        return v

    @model_validator(mode="after")
    def _one_api(self) -> HttpUpstream:
        if (self.command is None) == (self.url is None):
            raise ValueError("give the API either as command: [...] (the runner starts it) or as url: http://...")
        ids = [t for t in self.irreversible if http_route(t) is None]
        if ids:
            known = operation_ids(self.openapi) if self.openapi else {}
            unknown = [t for t in ids if t not in known]
            if unknown:
                where = (
                    f"operationIds of {self.openapi}: {', '.join(sorted(known)) or 'none'}"
                    if self.openapi
                    else ("no openapi file is given")
                )
                raise ValueError(
                    f"irreversible: {unknown[0]!r} is no route ('POST /refunds') and no known operationId ({where})"
                )
        return self
