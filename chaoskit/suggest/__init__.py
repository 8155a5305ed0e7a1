"""From an agent's tools to a fault battery: tool discovery, classification and scenario generation."""

from __future__ import annotations

__all__: list[str] = []
