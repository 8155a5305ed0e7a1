"""Scenario and battery files: what a run loads, and the out-of-process tools (MCP servers, HTTP APIs) they name.

The one place scenario YAML, battery files, harness-style success lists, scenario discovery and OpenAPI files are
read; the runner, ``chaoskit suggest``, ``chaoskit validate`` and the HTTP proxy all read them through here.
"""

from chaoskit.scenarios._openapi import OpenAPIError, Operation, operation_ids, read_document, read_operations
from chaoskit.scenarios._scenario import Scenario, Success, load_battery, load_scenario

__all__ = [
    "OpenAPIError",
    "Operation",
    "Scenario",
    "Success",
    "load_battery",
    "load_scenario",
    "operation_ids",
    "read_document",
    "read_operations",
]
