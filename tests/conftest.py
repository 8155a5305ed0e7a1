from __future__ import annotations

from collections.abc import Iterator

import pytest

from chaoskit import testing


@pytest.fixture(autouse=True)
def _clean_chaoskit(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # a test that leaves a plan, hook or sink behind would change the next test's faults
    monkeypatch.delenv("CHAOSKIT_PLAN", raising=False)
    monkeypatch.delenv("CHAOSKIT_DISABLE", raising=False)
    monkeypatch.delenv("CHAOSKIT_TRACES_FILE", raising=False)
    testing.reset()
    yield
    testing.reset()
