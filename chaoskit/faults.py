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

import warnings
from typing import Any

from chaoskit._errors import ToolHTTPError, ToolTimeout
from chaoskit.engine._effects import DATA as DATA_FAULTS
from chaoskit.engine._effects import RAISING as RAISING_FAULTS
from chaoskit.plan import _faults as _classes
from chaoskit.plan._faults import FAULT_TYPES, MODEL_TYPES, Fault

# one name per fault type (the class behind it is ``chaoskit.plan.<Name>Fault``)
Error = _classes.ErrorFault
Timeout = _classes.TimeoutFault
HTTP = _classes.HTTPFault
RateLimit = _classes.RateLimitFault
AuthExpired = _classes.AuthExpiredFault
Latency = _classes.LatencyFault
Empty = _classes.EmptyFault
Partial = _classes.PartialFault
SchemaDrift = _classes.SchemaDriftFault
Garbage = _classes.GarbageFault
PromptInjection = _classes.PromptInjectionFault
StaleState = _classes.StaleStateFault
CascadingFailure = _classes.CascadingFailureFault
Overloaded = _classes.OverloadedFault
EmptyCompletion = _classes.EmptyCompletionFault
Truncated = _classes.TruncatedFault
MalformedToolCall = _classes.MalformedToolCallFault
UnknownToolCall = _classes.UnknownToolCallFault
Refusal = _classes.RefusalFault

__all__ = [
    "DATA_FAULTS",
    "FAULT_TYPES",
    "HTTP",
    "MODEL_TYPES",
    "RAISING_FAULTS",
    "AuthExpired",
    "CascadingFailure",
    "Empty",
    "EmptyCompletion",
    "Error",
    "Fault",
    "Garbage",
    "Latency",
    "MalformedToolCall",
    "Overloaded",
    "Partial",
    "PromptInjection",
    "RateLimit",
    "Refusal",
    "SchemaDrift",
    "StaleState",
    "Timeout",
    "ToolHTTPError",
    "ToolTimeout",
    "Truncated",
    "UnknownToolCall",
]


def __getattr__(name: str) -> Any:
    """The second names of earlier releases (``faults.HTTPFault``): still served, with a DeprecationWarning."""
    short = name.removesuffix("Fault")
    if name.endswith("Fault") and short in __all__ and hasattr(_classes, name):
        warnings.warn(
            f"chaoskit.faults.{name} is deprecated; use chaoskit.faults.{short} (one name per fault)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_classes, name)
    raise AttributeError(f"module 'chaoskit.faults' has no attribute {name!r}")
