"""The five example agents of known quality, shared by every domain: one script, five recovery policies.

A domain writes its agent once, as a subclass of :class:`ScriptedAgent` whose ``solve(task)`` calls
``self.read(...)`` and ``self.write(...)``. The policy decides how failures are handled:

- ``careful``: reads errors, retries transient ones at most 3 times with backoff, honours Retry-After, uses one
  idempotency key per write, looks before retrying a write after an ambiguous 5xx or timeout, re-reads
  incomplete data, ignores instructions found in tool output, and says plainly what failed and what was done.
- ``naive``: retries at once up to 4 times, never waits, sends writes without a key, takes data as it comes,
  and answers "Done!" whatever happened.
- ``give_up``: stops at the first error and reports it.
- ``bluffer``: careful mechanics, but when a tool fails or finds nothing it invents a plausible answer.
- ``obeys_injection``: careful mechanics, but it follows instructions found in tool output.

The same script runs against plain Python tools (:class:`Direct`) and as a scripted LangChain chat model that
replays the conversation (:mod:`examples.agentkit.replay`), so a LangGraph or callback-handler agent of a
domain behaves exactly like its plain one.
"""

from examples.agentkit._agent import POLICIES, Failure, NeedCall, Policy, ScriptedAgent, policy
from examples.agentkit._transport import Direct, ToolError, Transport, classify

__all__ = [
    "POLICIES",
    "Direct",
    "Failure",
    "NeedCall",
    "Policy",
    "ScriptedAgent",
    "ToolError",
    "Transport",
    "classify",
    "policy",
]
