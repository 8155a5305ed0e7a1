"""Fault types, for building plans in Python: ``Plan(seed=7, faults=[faults.HTTP(tool="refund", ...)])``.

Every fault takes the triggers ``tool``, ``on_call``, ``every``, ``calls``, ``probability``, ``match`` and
``times`` (all must hold; none = every call), plus its own parameters. See the README's fault table.
``Partial`` and ``SchemaDrift`` also take ``path`` (``"results[*]"``) to aim them at records nested in the
result (docs/scenarios.md, "Fault types and nested results"); so does ``StaleState``.

Model faults (``target: model``, docs/faults.md) name their model with ``model`` instead of ``tool``:
``faults.Overloaded(model="gpt-*", on_call=1)``, ``faults.RateLimit(target="model", retry_after=2)``.
``RAISING_FAULTS`` are the types whose effect is an exception the caller sees; ``DATA_FAULTS`` the types that
replace or alter the data the caller gets back (an entry point that cannot touch results cannot do those).
"""

from chaoskit._errors import ToolHTTPError, ToolTimeout
from chaoskit.engine._effects import DATA as DATA_FAULTS
from chaoskit.engine._effects import RAISING as RAISING_FAULTS
from chaoskit.plan._faults import (
    FAULT_TYPES,
    MODEL_TYPES,
    AuthExpiredFault,
    CascadingFailureFault,
    EmptyCompletionFault,
    EmptyFault,
    ErrorFault,
    Fault,
    GarbageFault,
    HTTPFault,
    LatencyFault,
    MalformedToolCallFault,
    OverloadedFault,
    PartialFault,
    PromptInjectionFault,
    RateLimitFault,
    RefusalFault,
    SchemaDriftFault,
    StaleStateFault,
    TimeoutFault,
    TruncatedFault,
    UnknownToolCallFault,
)

Error = ErrorFault
Timeout = TimeoutFault
HTTP = HTTPFault
RateLimit = RateLimitFault
AuthExpired = AuthExpiredFault
Latency = LatencyFault
Empty = EmptyFault
Partial = PartialFault
SchemaDrift = SchemaDriftFault
Garbage = GarbageFault
PromptInjection = PromptInjectionFault
StaleState = StaleStateFault
CascadingFailure = CascadingFailureFault
Overloaded = OverloadedFault
EmptyCompletion = EmptyCompletionFault
Truncated = TruncatedFault
MalformedToolCall = MalformedToolCallFault
UnknownToolCall = UnknownToolCallFault
Refusal = RefusalFault

__all__ = [
    "DATA_FAULTS",
    "FAULT_TYPES",
    "HTTP",
    "MODEL_TYPES",
    "RAISING_FAULTS",
    "AuthExpired",
    "AuthExpiredFault",
    "CascadingFailure",
    "CascadingFailureFault",
    "Empty",
    "EmptyCompletion",
    "EmptyCompletionFault",
    "EmptyFault",
    "Error",
    "ErrorFault",
    "Fault",
    "Garbage",
    "GarbageFault",
    "HTTPFault",
    "Latency",
    "LatencyFault",
    "MalformedToolCall",
    "MalformedToolCallFault",
    "Overloaded",
    "OverloadedFault",
    "Partial",
    "PartialFault",
    "PromptInjection",
    "PromptInjectionFault",
    "RateLimit",
    "RateLimitFault",
    "Refusal",
    "RefusalFault",
    "SchemaDrift",
    "SchemaDriftFault",
    "StaleState",
    "StaleStateFault",
    "Timeout",
    "TimeoutFault",
    "ToolHTTPError",
    "ToolTimeout",
    "Truncated",
    "TruncatedFault",
    "UnknownToolCall",
    "UnknownToolCallFault",
]
