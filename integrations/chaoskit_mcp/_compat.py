"""The ``mcp`` SDK releases this integration supports, checked before anything imports the SDK."""

from __future__ import annotations

import importlib.metadata
import re
import warnings
from typing import Final, NamedTuple

from chaoskit import ChaosWarning

__all__ = ["MCP", "Supported", "check_installed", "check_version"]


class Supported(NamedTuple):
    """A distribution the integration works with: ``minimum <= version < below`` (release numbers only)."""

    distribution: str
    minimum: tuple[int, ...]
    below: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.distribution}>={'.'.join(map(str, self.minimum))},<{'.'.join(map(str, self.below))}"


#: the SDK releases chaoskit_mcp works with: 2.x, and the 1.x that ``langchain-mcp-adapters`` requires (>=1.24);
#: ``_wire`` hides their differences. Tested with mcp 2.3.0 and 1.30.0
#: (tests/integrations/mcp/test_mcp_sdk1.py runs the MCP tests again on 1.x)
MCP: Final = Supported("mcp", (1, 24), (3,))

#: what to run when the SDK is missing
INSTALL: Final = "pip install 'chaoskit[mcp]'"


def _release(version: str) -> tuple[int, ...]:
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def check_version(version: str | None) -> None:
    """Refuse a missing or too old ``mcp`` (ImportError naming the extra); warn about a newer major release."""
    if version is None:
        raise ImportError(f"chaoskit_mcp needs {MCP}, which is not installed: {INSTALL}")
    release = _release(version)
    if release < MCP.minimum:
        raise ImportError(f"chaoskit_mcp needs {MCP}; mcp {version} is installed: {INSTALL}")
    if release >= MCP.below:
        warnings.warn(
            f"chaoskit_mcp is tested with {MCP}; mcp {version} is installed and may not work",
            ChaosWarning,
            stacklevel=3,
        )


def check_installed() -> None:
    """:func:`check_version` with the ``mcp`` installed in this environment."""
    try:
        version: str | None = importlib.metadata.version(MCP.distribution)
    except importlib.metadata.PackageNotFoundError:
        version = None
    check_version(version)
