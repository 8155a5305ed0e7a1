"""Layer 3, entry points onto the engine that need no framework: the ``@chaos`` decorator.

:func:`spec_of` and :class:`ArgBinder` are public for other adapters (the LangChain tool wrapper uses them):
the :class:`~chaoskit.engine.ToolSpec` a wrapped callable carries, and binding a call's arguments by name.
"""

from chaoskit.adapters._decorator import _Binder as ArgBinder
from chaoskit.adapters._decorator import chaos, spec_of

__all__ = ["ArgBinder", "chaos", "spec_of"]
