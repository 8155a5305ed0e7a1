"""Layer 7, the ``chaoskit`` command: one module per subcommand."""

from chaoskit.cli._main import main

__all__ = ["main"]
