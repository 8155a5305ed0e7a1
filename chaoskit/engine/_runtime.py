"""The engine's run state as one thing: the plan runtime it installs, and the one reset that clears it all."""

from __future__ import annotations

from contextlib import AbstractContextManager

import chaoskit.engine._config as _config
import chaoskit.telemetry as telemetry
from chaoskit.engine._context import activate_plan, forget_counters
from chaoskit.plan._model import Plan, set_runtime

__all__ = ["RUNTIME", "reset"]


class _Runtime:
    """:class:`chaoskit.plan._model.PlanRuntime` for this engine: ``plan.activate()`` and ``plan.reset()``."""

    def activate(self, plan: Plan) -> AbstractContextManager[Plan]:
        """Make ``plan`` active in the current context (thread / asyncio task), with fresh call counters."""
        return activate_plan(plan)

    def reset(self, plan: Plan) -> None:
        """Forget the call counters kept for uses of ``plan`` outside any episode or activation."""
        reset(plan)


RUNTIME = _Runtime()
set_runtime(RUNTIME)


def reset(plan: Plan | None = None, *, sinks: bool = False) -> None:
    """Clear chaoskit's run state: the one reset behind ``chaoskit.reset()``, ``chaoskit.testing.reset()``
    and ``plan.reset()``.

    With a ``plan``: forget only the call counters kept for that plan's calls outside any episode or
    activation. Without: restore the default settings (``configure``), forget the ``CHAOSKIT_PLAN`` plan and
    every plan's counters; with ``sinks=True`` also drop every span sink and cached tracer (the
    application's own provider is left as it was). The names of wrapped tools are kept.
    """
    if plan is not None:
        forget_counters(plan)
        return
    _config.restore_defaults()
    forget_counters()
    if sinks:
        telemetry.reset()
