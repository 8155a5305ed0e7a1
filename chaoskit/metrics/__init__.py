"""Long-horizon trajectory metrics (CDI, SVR, RIC, DAF, argument hallucination) and the failure taxonomy, from traces."""

from __future__ import annotations

__all__: list[str] = []
