"""The ``cascading_failure`` fault type: an outage of one tool that its dependent tools share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import PrivateAttr, model_validator

from chaoskit.plan._fault_registry import _FaultBase
from chaoskit.plan._fields import HTTPStatus, PositiveInt, Seconds, ToolSelector
from chaoskit.plan._triggers import CallState, Trigger, all_of, tool_matches, trigger_of

__all__ = ["CascadingFailureFault"]


@dataclass(frozen=True, slots=True)
class _upstream(Trigger):
    """Holds on calls of the upstream tool of a cascade (its dependents are targeted only to share the outage)."""

    selector: str | tuple[str, ...]

    def __call__(self, state: CallState) -> bool:
        return tool_matches(self.selector, state.tool)


class CascadingFailureFault(_FaultBase):
    """HTTP ``status`` (503) on the upstream ``tool``, shared by its ``dependents`` as a dependency outage: once
    it fires, each dependent's next ``for_calls`` calls fail too; without ``for_calls``, until a call of the
    upstream on which this fault does not fire. The dependents' spans name the upstream (``cascaded_from``).

    ``tool: "*"`` with ``dependents: "*"`` (the form the background mix uses, where the tools are not known
    beforehand) starts at whichever tool it fires on, and every *other* tool is a dependent; it needs
    ``for_calls``, so that the outage ends."""

    type: Literal["cascading_failure"] = "cascading_failure"
    dependents: ToolSelector
    for_calls: PositiveInt = None
    status: HTTPStatus = 503
    retry_after: Seconds = None
    error: str | None = None
    after_write: ClassVar[bool] = False

    # set on the copy the engine hands to a dependent's call: the upstream tool whose outage it shares
    _cascaded_from: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _dependents_apart(self) -> CascadingFailureFault:
        if self.anywhere:
            if self.for_calls is None:
                raise ValueError("a cascade on every tool (tool and dependents '*') needs for_calls, e.g. for_calls: 1")
            return self
        if self.tool == "*":
            raise ValueError(
                "give the upstream tool: a cascade starts at one tool, e.g. tool: search_flights (or tool and "
                "dependents both '*', with for_calls: any tool, and every other tool shares its outage)"
            )
        deps = (self.dependents,) if isinstance(self.dependents, str) else self.dependents
        if "*" in deps or not deps:
            raise ValueError("dependents must name the tools that depend on the upstream tool, e.g. [hold_flight]")
        same = [d for d in deps if tool_matches(self.tool, d)]
        if same:
            raise ValueError(
                f"dependent {same[0]!r} is the upstream tool itself; list only the tools that depend on it"
            )
        return self

    def model_post_init(self, __context: Any) -> None:
        """Build the trigger: it fires on the upstream only; the dependents' calls fail through the outage."""
        own = trigger_of(self)
        up = _upstream(self.tool)
        self._trigger = up if own is None else all_of(up, own)

    def targets(self, tool: str) -> bool:
        """Whether ``tool`` is the upstream or one of its dependents."""
        return tool_matches(self.tool, tool) or tool_matches(self.dependents, tool)

    @property
    def anywhere(self) -> bool:
        """Whether this is the cascade on every tool (``tool`` and ``dependents`` both ``*``)."""
        return self.tool == "*" and self.dependents == "*"

    def depends(self, tool: str) -> bool:
        """Whether ``tool`` is one of the dependents (on every tool: any tool but the upstream it fired on)."""
        if self.anywhere:
            return self._cascaded_from is not None and tool != self._cascaded_from
        return tool_matches(self.dependents, tool)

    def tool_names(self) -> tuple[str, ...]:
        """Exact tool names of the upstream and the dependents (patterns excluded)."""
        deps = (self.dependents,) if isinstance(self.dependents, str) else self.dependents
        return super().tool_names() + tuple(n for n in deps if not any(c in n for c in "*?["))

    def cascaded(self, upstream: str) -> CascadingFailureFault:
        """The copy a dependent's call gets while ``upstream`` is down (its spans say so)."""
        copy = self.model_copy()
        copy._cascaded_from = upstream
        return copy

    @property
    def cascaded_from(self) -> str | None:
        """The upstream tool on a dependent's copy (see :meth:`cascaded`); None on the plan's own fault."""
        return self._cascaded_from

    def params(self) -> dict[str, Any]:
        """The fault's own parameters, and ``cascaded_from`` on a dependent's copy."""
        p = super().params()
        if self._cascaded_from is not None:
            p["cascaded_from"] = self._cascaded_from
        return p
