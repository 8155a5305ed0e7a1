"""Fault types, for building plans in Python: ``Plan(seed=7, faults=[faults.HTTP(tool="refund", ...)])``.

Every fault takes the triggers ``tool``, ``on_call``, ``every``, ``calls``, ``probability``, ``match`` and
``times`` (all must hold; none = every call), plus its own parameters. See the README's fault table.
"""

from ._errors import ToolHTTPError, ToolTimeout
from ._plan import (
    FAULT_TYPES,
    AuthExpiredFault,
    EmptyFault,
    ErrorFault,
    Fault,
    GarbageFault,
    HTTPFault,
    LatencyFault,
    PartialFault,
    PromptInjectionFault,
    RateLimitFault,
    SchemaDriftFault,
    TimeoutFault,
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

__all__ = [
    "FAULT_TYPES", "HTTP", "AuthExpired", "AuthExpiredFault", "Empty", "EmptyFault", "Error", "ErrorFault",
    "Fault", "Garbage", "GarbageFault", "HTTPFault", "Latency", "LatencyFault", "Partial", "PartialFault",
    "PromptInjection", "PromptInjectionFault", "RateLimit", "RateLimitFault", "SchemaDrift",
    "SchemaDriftFault", "Timeout", "TimeoutFault", "ToolHTTPError", "ToolTimeout",
]
