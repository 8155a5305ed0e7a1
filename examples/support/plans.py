"""Fault plans for the support agent (retry_after kept small so the careful agent's waits stay short)."""

from __future__ import annotations

from chaoskit import Plan

__all__ = ["DOWN", "FLAKY"]

#: each tool fails once, in the way that tells a naive agent from a careful one
FLAKY = Plan.from_yaml(
    """
seed: 4832
name: support-flaky
faults:
  - {type: rate_limit, tool: lookup_order, on_call: 1, retry_after: 0.2}
  - {type: http, tool: issue_refund, on_call: 1, status: 500, after_write: true}
  - {type: error, tool: send_email, on_call: 1}
""",
    source="examples/support/plans.py:FLAKY",
)

#: the mail service stays down
DOWN = Plan.from_yaml(
    """
seed: 4832
name: support-mail-down
faults:
  - {type: http, tool: send_email, status: 503}
""",
    source="examples/support/plans.py:DOWN",
)
