from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import context as otel_context

from chaoskit import testing


@pytest.fixture(autouse=True)
def _clean_chaoskit(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # a test that leaves a plan, hook or sink behind would change the next test's faults
    monkeypatch.delenv("CHAOSKIT_PLAN", raising=False)
    monkeypatch.delenv("CHAOSKIT_DISABLE", raising=False)
    monkeypatch.delenv("CHAOSKIT_TRACES_FILE", raising=False)
    testing.reset()
    # every test starts with no current span: a test that exits an episode in another thread leaves the ended
    # episode current in this one, and clients that propagate the current trace (the MCP SDK puts it in
    # params._meta) would carry it into the next test
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)
        testing.reset()
