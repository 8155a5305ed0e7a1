"""The five policies applied to the agent's model calls: a LangChain middleware that retries a failed model call.

:class:`PolicyModelRetry` wraps each model call of a ``create_agent`` graph. A provider error (429, 5xx, 529
overloaded, a timeout) is handled as the policy handles a tool's: ``careful`` retries at most 3 times with
backoff and waits the Retry-After it was given; ``naive`` retries 4 times at once; ``give_up`` stops at the first
error. When the tries run out, the run ends with the policy's answer to the failure (an honest report, a
made-up success from the bluffer, "Done!" from the naive agent); a refused request (another 4xx) ends it at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from examples.agentkit._agent import MAX_WAIT_S, Failure, Policy
from examples.agentkit._transport import classify

__all__ = ["PolicyModelRetry"]


class PolicyModelRetry(AgentMiddleware):
    """Retry failed model calls as ``policy`` does; ``answer(task, failure)`` is the final answer when it stops."""

    def __init__(self, policy: Policy, answer: Callable[[str, Failure], str]) -> None:
        super().__init__()
        self.policy = policy
        self.answer = answer

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Call the model; on a provider error wait and call it again, or end the run with the policy's answer."""
        p = self.policy
        for i in range(p.tries):
            try:
                return handler(request)
            except Exception as exc:
                kind, retry_after = classify(exc)
                stop = kind in ("client", "auth") or i + 1 >= p.tries
                if p.honours_retry_after and retry_after is not None and retry_after > MAX_WAIT_S:
                    stop = True
                if stop:
                    return self._give_up(request, i + 1, exc)
                if p.honours_retry_after and (retry_after is not None or kind == "rate_limit"):
                    time.sleep(retry_after if retry_after is not None else 0.05)
                elif p.backoff_s:
                    time.sleep(p.backoff_s * 2**i)
        raise AssertionError("unreachable: the last try returns")  # pragma: no cover

    def _give_up(self, request: Any, tries: int, exc: BaseException) -> ModelResponse:
        task = next((m.text for m in getattr(request, "messages", ()) if isinstance(m, HumanMessage)), "")
        cause = f"the language model service failed {tries} time(s), last: {exc}"
        text = self.answer(task, Failure("finish the task", cause))
        return ModelResponse(result=[AIMessage(content=text)])
