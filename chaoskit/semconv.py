"""The span attribute and span names chaoskit writes and reads: one place, so writers and readers cannot drift.

GenAI and general OpenTelemetry names follow the semantic conventions; ``chaoskit.*`` names are chaoskit's own.
Users' exported traces and dashboards depend on these strings: a rename needs a deprecation period in which
the readers accept the old name too. ``docs/semconv.md`` describes each (type, meaning, example).
"""

from __future__ import annotations

from typing import Final

# --- OpenTelemetry GenAI and general conventions ------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
ERROR_TYPE: Final = "error.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_TYPE: Final = "exception.type"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"

#: ``gen_ai.operation.name`` values and the span names built from them (``execute_tool search``)
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"

# --- one tool attempt (the ``execute_tool {tool}`` span) ------------------------------------------------------
ATTEMPT: Final = "chaoskit.attempt"
OUTCOME: Final = "chaoskit.outcome"
ARGS: Final = "chaoskit.args"
ARGS_HASH: Final = "chaoskit.args.hash"
IDEMPOTENCY_KEY: Final = "chaoskit.idempotency_key"
RETRY_AFTER: Final = "chaoskit.retry_after"
TOOL_EXECUTED: Final = "chaoskit.tool.executed"
TOOL_IRREVERSIBLE: Final = "chaoskit.tool.irreversible"
TOOL_IDEMPOTENT: Final = "chaoskit.tool.idempotent"
TOOL_REFUSED: Final = "chaoskit.tool.refused"

#: ``chaoskit.outcome`` values
OUTCOME_OK: Final = "ok"
OUTCOME_ERROR: Final = "error"
OUTCOME_CANCELLED: Final = "cancelled"

# --- the fault decided for an attempt ------------------------------------------------------------------------
FAULT_PREFIX: Final = "chaoskit.fault."
FAULT_TYPE: Final = "chaoskit.fault.type"
FAULT_INDEX: Final = "chaoskit.fault.index"
FAULT_INJECTED: Final = "chaoskit.fault.injected"
FAULT_SKIPPED: Final = "chaoskit.fault.skipped"
FAULT_VALUE: Final = "chaoskit.fault.value"
FAULT_TEXT: Final = "chaoskit.fault.text"
FAULT_ASKS_FOR: Final = "chaoskit.fault.asks_for"
FAULT_HTTP_STATUS: Final = "chaoskit.fault.http.status"
FAULT_RETRY_AFTER: Final = "chaoskit.fault.retry_after"
FAULT_AFTER_WRITE: Final = "chaoskit.fault.after_write"

# --- one episode (the ``invoke_agent {agent}`` root span) -----------------------------------------------------
EPISODE_PREFIX: Final = "chaoskit.episode."
EPISODE_ID: Final = "chaoskit.episode.id"
EPISODE_OUTPUT: Final = "chaoskit.episode.output"
EPISODE_OUTCOME: Final = "chaoskit.episode.outcome"
EPISODE_ERROR: Final = "chaoskit.episode.error"
EPISODE_ATTEMPTS: Final = "chaoskit.episode.attempts"
EPISODE_SUCCESS: Final = "chaoskit.episode.success"
EPISODE_TASK: Final = "chaoskit.episode.task"
EPISODE_REQUIRED_TOOLS: Final = "chaoskit.episode.required_tools"
SCENARIO: Final = "chaoskit.scenario"
PLAN: Final = "chaoskit.plan"
PLAN_SEED: Final = "chaoskit.plan.seed"

# --- the battery runner's own spans ---------------------------------------------------------------------------
RUN_KEY: Final = "chaoskit.run.key"
RUN_OUTCOME: Final = "chaoskit.run.outcome"
