"""Layer 3, entry points onto the engine: the ``@chaos`` decorator and the registry of framework adapters.

A framework's adapter package (``chaoskit_langchain``, a third party's) takes over ``@chaos`` for that
framework's tool objects through the ``chaoskit.adapters`` entry-point group; the contract is in the
docstring of ``chaoskit.adapters._registry`` (and :func:`register_adapter` does the same in-process).

:func:`spec_of` and :class:`ArgBinder` are public for other adapters (the LangChain tool wrapper uses them):
the :class:`~chaoskit.engine.ToolSpec` a wrapped callable carries, and binding a call's arguments by name.
"""

from chaoskit.adapters._binding import ArgBinder
from chaoskit.adapters._decorator import chaos, spec_of
from chaoskit.adapters._registry import ENTRY_POINT_GROUP, AdapterFactory, register_adapter

__all__ = ["ENTRY_POINT_GROUP", "AdapterFactory", "ArgBinder", "chaos", "register_adapter", "spec_of"]
