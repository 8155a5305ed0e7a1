"""The classic fault battery of the example support agent, as pytest tests (``pytest examples/tests``)."""
