"""The agent under test: ``CHAOSKIT_EXAMPLE_AGENT`` = ``careful`` (default), ``naive``, or a ``module:factory``."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from chaoskit.testing import ChaosEpisode

#: the two policies of the example support agent (examples/plain/agents.py)
AGENTS = {"careful": "examples.plain.agents:careful", "naive": "examples.plain.agents:naive"}


@pytest.fixture
def agent(chaos_episode: ChaosEpisode) -> Any:
    """A fresh agent with its own backend, named in the fault-case report by its policy."""
    name = os.environ.get("CHAOSKIT_EXAMPLE_AGENT", "careful")
    ref = AGENTS.get(name, name)
    module, _, factory = ref.partition(":")
    if not module or not factory:
        raise pytest.UsageError(
            f"CHAOSKIT_EXAMPLE_AGENT={name!r}: expected careful, naive, or a module:factory reference"
        )
    make = getattr(importlib.import_module(module), factory)
    chaos_episode.agent = ref
    return make()
