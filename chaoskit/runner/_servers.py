"""Scenario keys naming tools that live out of process (``mcp:``): the server, and its protocol faults."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from chaoskit.plan._locate import _PlanErrorsInit

__all__ = ["McpServer"]


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
        if isinstance(v, str):
            try:
                v = shlex.split(v)
            except ValueError as exc:
                raise ValueError(f"cannot split the command line {v!r}: {exc}") from None
        if v is not None and (not isinstance(v, list) or not v or not all(isinstance(a, str) and a for a in v)):
            raise ValueError(f"must be the command that starts the MCP server, e.g. [python, server.py], got {v!r}")
        return v

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
        return v

    @model_validator(mode="after")
    def _one_server(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give the MCP server either as command: [...] or as url: http://...")
        if self.url is not None and self.transport == "stdio":
            raise ValueError("a server at a url is reached over http: set transport: http")
        return self
