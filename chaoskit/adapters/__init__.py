"""Layer 3, in-core entry points onto the engine: the ``@chaos`` decorator."""
