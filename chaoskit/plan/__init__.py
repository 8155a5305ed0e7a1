"""Layer 1, plans: fault types, triggers, the Plan model and YAML loading (pure data and decisions)."""

# The public names of the layer. Inside chaoskit, import each name from its defining module instead.
from chaoskit.plan._faults import (
    DEFAULT_INJECTION,
    FAULT_TYPES,
    AuthExpiredFault,
    CascadingFailureFault,
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
    StaleStateFault,
    TimeoutFault,
)
from chaoskit.plan._model import Plan, PlanRuntime, set_runtime
from chaoskit.plan._triggers import CallState, Trigger

__all__ = [
    "DEFAULT_INJECTION",
    "FAULT_TYPES",
    "AuthExpiredFault",
    "CallState",
    "CascadingFailureFault",
    "EmptyFault",
    "ErrorFault",
    "Fault",
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
    "set_runtime",
]
