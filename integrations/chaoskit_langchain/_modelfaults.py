"""Model faults as LangChain shows them: provider errors as ``langchain_core``'s model errors, faulted messages."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import langchain_core.exceptions as _lce
from langchain_core.messages import AIMessage

from chaoskit import ModelHTTPError, ModelTimeout
from chaoskit.engine import Completion, ModelCall, fault_completion

__all__ = [
    "ModelAPIError",
    "ModelAuthenticationError",
    "ModelInvalidRequestError",
    "ModelRateLimitError",
    "ModelTimeoutError",
    "fault_response",
    "lc_error",
]


def _mixed(name: str, ours: type[Exception]) -> Any:
    # LangChain's provider integrations raise errors that are both the provider SDK's type and langchain_core's
    # ModelError subclass; ours are both chaoskit's type and that subclass, which is what ModelRetryMiddleware's
    # default retry_on reads (is_retryable). A langchain-core without them: chaoskit's type alone.
    theirs = getattr(_lce, name, None)
    if theirs is None:
        return ours
    return type(name, (ours, theirs), {"__module__": __name__, "__qualname__": name, "__doc__": theirs.__doc__})


#: HTTP 429, retried by ``ModelRetryMiddleware`` (``is_retryable``)
ModelRateLimitError: type[ModelHTTPError] = _mixed("ModelRateLimitError", ModelHTTPError)
#: HTTP 5xx (overloaded 529/503 included), retried
ModelAPIError: type[ModelHTTPError] = _mixed("ModelAPIError", ModelHTTPError)
#: HTTP 401, not retried
ModelAuthenticationError: type[ModelHTTPError] = _mixed("ModelAuthenticationError", ModelHTTPError)
#: other HTTP 4xx, not retried
ModelInvalidRequestError: type[ModelHTTPError] = _mixed("ModelInvalidRequestError", ModelHTTPError)
#: a timeout, retried
ModelTimeoutError: type[ModelTimeout] = _mixed("ModelTimeoutError", ModelTimeout)


def lc_error(exc: BaseException) -> BaseException:
    """chaoskit's model error ``exc`` as the ``langchain_core`` model error of the same kind."""
    if isinstance(exc, ModelTimeout):
        return ModelTimeoutError(str(exc))
    if isinstance(exc, ModelHTTPError):
        status = exc.status
        if status == 429:
            cls = ModelRateLimitError
        elif status >= 500:
            cls = ModelAPIError
        elif status == 401:
            cls = ModelAuthenticationError
        else:
            cls = ModelInvalidRequestError
        return cls(status, exc.message, retry_after=exc.retry_after)
    return exc


def _faulted(call: ModelCall, message: AIMessage) -> AIMessage:
    assert call.fault is not None
    calls = [{"name": c["name"], "args": c.get("args"), "id": c.get("id")} for c in message.tool_calls]
    finish = str(message.response_metadata.get("finish_reason") or ("tool_calls" if calls else "stop"))
    out = fault_completion(call.fault, message.text, calls, finish)
    if not isinstance(out, Completion):
        call.skip(out)
        return message
    return AIMessage(
        content=out.text,
        tool_calls=[{**c, "type": "tool_call"} for c in out.tool_calls],
        invalid_tool_calls=[{**c, "type": "invalid_tool_call"} for c in out.invalid_tool_calls],
        response_metadata={**message.response_metadata, "finish_reason": out.finish_reason},
        usage_metadata=message.usage_metadata,
        id=message.id,
        name=message.name,
    )


def fault_response(call: ModelCall, response: Any) -> Any:
    """The model handler's ``response`` (a ``ModelResponse``, or an ``AIMessage``) with the call's completion
    fault applied to its model message; unchanged when the call has no completion fault."""
    if call.fault is None or call.fault.type in ("latency", "rate_limit", "http", "overloaded", "timeout"):
        return response
    if isinstance(response, AIMessage):
        return _faulted(call, response)
    result = getattr(response, "result", None)
    if not isinstance(result, list) or not dataclasses.is_dataclass(response):
        call.skip(f"the model handler returned {type(response).__name__}, not a message chaoskit can change")
        return response
    for i in range(len(result) - 1, -1, -1):
        if isinstance(result[i], AIMessage):
            changed = [*result[:i], _faulted(call, result[i]), *result[i + 1 :]]
            return dataclasses.replace(cast(Any, response), result=changed)
    call.skip("the model handler returned no AIMessage")
    return response
