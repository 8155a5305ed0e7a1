"""Layer 1, plans: fault types, triggers, the Plan model and YAML loading (pure data and decisions)."""

# The public names of the layer. Inside chaoskit, import each name from its defining module instead.
from chaoskit.plan._faults import (
    DEFAULT_INJECTION,
    FAULT_TYPES,
    AuthExpiredFault,
    CascadingFailureFault,
    EmptyFault,
    ErrorFault,
    ExtensionFault,
    Fault,
    GarbageFault,
    HTTPFault,
    LatencyFault,
    PartialFault,
    PromptInjectionFault,
    RateLimitFault,
    SchemaDriftFault,
    StaleStateFault,
    TimeoutFault,
)
from chaoskit.plan._model import Plan, PlanRuntime, set_runtime
from chaoskit.plan._registry import (
    ENTRY_POINT_GROUP,
    FaultParameterError,
    FaultType,
    registered_types,
    require_modules,
)
from chaoskit.plan._triggers import CallState, Trigger

__all__ = [
    "DEFAULT_INJECTION",
    "ENTRY_POINT_GROUP",
    "FAULT_TYPES",
    "AuthExpiredFault",
    "CallState",
    "CascadingFailureFault",
    "EmptyFault",
    "ErrorFault",
    "ExtensionFault",
    "Fault",
    "FaultParameterError",
    "FaultType",
    "GarbageFault",
    "HTTPFault",
    "LatencyFault",
    "PartialFault",
    "Plan",
    "PlanRuntime",
    "PromptInjectionFault",
    "RateLimitFault",
    "SchemaDriftFault",
    "StaleStateFault",
    "TimeoutFault",
    "Trigger",
    "registered_types",
    "require_modules",
    "set_runtime",
]
