"""Layer 2, the attempt engine: decide a fault, record the attempt as a span, run or fake the call, record it.

This package's names are the **adapter interface**: what an entry point onto the engine (the decorator, the
LangChain and LangGraph integrations, a third party's) uses, and all it needs. Describe the tool once with a
:class:`ToolSpec`; per call, :func:`begin` an :class:`Attempt` and either let it drive the call
(:meth:`Attempt.run_sync` / :meth:`Attempt.run_async`, or :func:`call_sync` / :func:`call_async` in one step) or,
where start and end run in different frames (callback handlers), report the halves yourself with
:meth:`Attempt.transform`, :meth:`Attempt.succeed`, :meth:`Attempt.fail` and :meth:`Attempt.skip`.

:class:`SharedScope` carries one episode's call counters from process to process (a proxy per MCP session).

:func:`injected_fault` tells an exception the engine injected (and which fault) from the tool's own;
:func:`begin_model_call` counts and decides one model call (a ``target: model`` fault), and
:func:`fault_completion` says what its completion becomes; :func:`explain_crash` tells the episode why an
exception would end the agent's run, should it end it.

Importing the engine installs its plan runtime (``plan.activate()`` / ``plan.reset()``).
"""

from chaoskit.engine._attempt import Attempt, begin, call_async, call_sync
from chaoskit.engine._config import as_plan
from chaoskit.engine._effects import crash_reason, explain_crash, injected_fault
from chaoskit.engine._info import AttemptInfo
from chaoskit.engine._modelcall import Completion, ModelCall, begin_model_call, fault_completion
from chaoskit.engine._runtime import reset
from chaoskit.engine._shared import SharedScope
from chaoskit.engine._spec import RETURNED_ERROR, ErrorResult, ToolSpec, default_refusal, refusal_check

__all__ = [
    "RETURNED_ERROR",
    "Attempt",
    "AttemptInfo",
    "Completion",
    "ErrorResult",
    "ModelCall",
    "SharedScope",
    "ToolSpec",
    "as_plan",
    "begin",
    "begin_model_call",
    "call_async",
    "call_sync",
    "crash_reason",
    "default_refusal",
    "explain_crash",
    "fault_completion",
    "injected_fault",
    "refusal_check",
    "reset",
]
