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
#: the call's arguments (the same redacted, capped JSON as ``chaoskit.args``, which it supersedes)
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
#: the conversation (LangGraph's ``thread_id``) an episode, attempt or model step belongs to
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
#: the model's provider on a ``chat`` span (``openai``, ``anthropic``, ...)
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
ERROR_TYPE: Final = "error.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_TYPE: Final = "exception.type"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
#: the span event OpenTelemetry's ``record_exception`` adds, holding ``exception.message`` (deprecated by OTEP 4430;
#: with ``gen_ai_latest_experimental`` chaoskit writes ``exception.type`` / ``exception.message`` on the span instead)
EXCEPTION_EVENT: Final = "exception"
#: the environment variable the GenAI conventions ask instrumentations to honour, and the value that selects the
#: latest experimental conventions (docs/semconv.md says what it changes)
SEMCONV_OPT_IN_ENV: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
SEMCONV_GENAI_LATEST: Final = "gen_ai_latest_experimental"

#: ``gen_ai.operation.name`` values and the span names built from them (``execute_tool search``)
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"

# --- one model step (the ``chat {model}`` span, a child of the episode's span; no ``chaoskit.*`` attribute) -----
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
#: opt-in content: the messages new to the model at this step (tool results) and the message it produced
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
#: the environment variable that turns content capture on for model steps (``true``)
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

#: every chaoskit attribute name starts with this
CHAOSKIT_PREFIX: Final = "chaoskit."

# --- one tool attempt (the ``execute_tool {tool}`` span) ------------------------------------------------------
ATTEMPT: Final = "chaoskit.attempt"
OUTCOME: Final = "chaoskit.outcome"
ARGS: Final = "chaoskit.args"
ARGS_HASH: Final = "chaoskit.args.hash"
#: the arguments ``chaoskit.args`` shows as ``[REDACTED]``, as a JSON object of dotted path -> a digest keyed by a
#: per-episode salt that is never recorded (``chaoskit.engine._digests``): matchable, never readable
ARGS_REDACTED_DIGESTS: Final = "chaoskit.args.redacted_digests"
IDEMPOTENCY_KEY: Final = "chaoskit.idempotency_key"
RETRY_AFTER: Final = "chaoskit.retry_after"
TOOL_EXECUTED: Final = "chaoskit.tool.executed"
TOOL_IRREVERSIBLE: Final = "chaoskit.tool.irreversible"
TOOL_IDEMPOTENT: Final = "chaoskit.tool.idempotent"
TOOL_REFUSED: Final = "chaoskit.tool.refused"
#: the recorded result (gen_ai.tool.call.result) is the JSON of a value, not the text the tool returned
TOOL_RESULT_JSON: Final = "chaoskit.tool.result.json"
#: what a refused attempt returned (the tool's error value), recorded as results are; the conventions keep
#: ``gen_ai.tool.call.result`` for successful executions
TOOL_REFUSAL: Final = "chaoskit.tool.refusal"

# --- one model call (the ``chat {model}`` span of a step) ------------------------------------------------------
#: the call's number among the calls of its model in the episode (what a model fault's triggers count)
MODEL_CALL: Final = "chaoskit.model.call"
#: what the step was for, when not acting: ``reflection`` (a Reflexion agent's self-reflection on a failure)
STEP_KIND: Final = "chaoskit.step.kind"
#: what a fault targets: ``tool`` (the default) or ``model``
FAULT_TARGET: Final = "chaoskit.fault.target"

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
#: the digests, under the episode's salt, of the words and quoted stretches of an injected text
FAULT_TEXT_DIGESTS: Final = "chaoskit.fault.text_digests"
FAULT_ASKS_FOR: Final = "chaoskit.fault.asks_for"
FAULT_HTTP_STATUS: Final = "chaoskit.fault.http.status"
FAULT_RETRY_AFTER: Final = "chaoskit.fault.retry_after"
FAULT_AFTER_WRITE: Final = "chaoskit.fault.after_write"
#: a model fault that cut a streamed answer: the number of chunks (server-sent events) sent before the cut
FAULT_AFTER_CHUNKS: Final = "chaoskit.fault.after_chunks"
FAULT_EXCEPTION: Final = "chaoskit.fault.exception"
FAULT_STALE: Final = "chaoskit.fault.stale"
FAULT_OFF_BY_ONE: Final = "chaoskit.fault.off_by_one"
FAULT_CASCADED_FROM: Final = "chaoskit.fault.cascaded_from"
#: the span event an attempt gets when its fault was applied (raising or not), holding the fault's parameters
FAULT_EVENT: Final = "chaoskit.fault"
#: on that event: the fault in a few words, as in the status description of an attempt it failed
FAULT_SUMMARY: Final = "chaoskit.fault.summary"
#: the start of the status description of an attempt failed by an injected fault: ``injected: http 429 (...)``
INJECTED_PREFIX: Final = "injected: "

# --- one episode (the ``invoke_agent {agent}`` root span) -----------------------------------------------------
EPISODE_PREFIX: Final = "chaoskit.episode."
EPISODE_ID: Final = "chaoskit.episode.id"
EPISODE_OUTPUT: Final = "chaoskit.episode.output"
EPISODE_OUTCOME: Final = "chaoskit.episode.outcome"
EPISODE_ERROR: Final = "chaoskit.episode.error"
EPISODE_ATTEMPTS: Final = "chaoskit.episode.attempts"
EPISODE_SUCCESS: Final = "chaoskit.episode.success"
EPISODE_TASK: Final = "chaoskit.episode.task"
#: the digests, under the episode's salt, of the task's words: a redacted value the user gave is the user's
EPISODE_TASK_DIGESTS: Final = "chaoskit.episode.task_digests"
EPISODE_REQUIRED_TOOLS: Final = "chaoskit.episode.required_tools"
#: the tool calls the model asked for at the steps recorded through chaoskit (``Episode.step``): a JSON object of
#: tool name -> count, written whatever the content capture; evidence that tools ran, for "cannot grade"
EPISODE_TOOL_CALLS: Final = "chaoskit.episode.tool_calls"
#: the model calls chaoskit saw (``ChaosMiddleware``'s model hook), as a JSON list, for the model-call checks
EPISODE_MODEL_CALLS: Final = "chaoskit.episode.model_calls"
#: the agent that ran the episode (the runner's agent ref: ``module:factory`` or a command line)
EPISODE_AGENT: Final = "chaoskit.episode.agent"
#: the episode's seed (the runner's grid point; the plan's own seed is ``chaoskit.plan.seed``)
EPISODE_SEED: Final = "chaoskit.episode.seed"
#: the runner's grid point of the episode: its repetition, fault intensity (lambda), task perturbation (epsilon)
#: and fault profile
EPISODE_REPETITION: Final = "chaoskit.episode.repetition"
EPISODE_INTENSITY: Final = "chaoskit.episode.intensity"
EPISODE_PERTURBATION: Final = "chaoskit.episode.perturbation"
EPISODE_PROFILE: Final = "chaoskit.episode.profile"
#: once graded in-process by the runner: ``pass`` or ``fail`` (every criterion and check), and the 0-100 score
EPISODE_VERDICT: Final = "chaoskit.episode.verdict"
EPISODE_SCORE: Final = "chaoskit.episode.score"
#: the ``chaoskit.episode.verdict`` values
VERDICT_PASS: Final = "pass"
VERDICT_FAIL: Final = "fail"
SCENARIO: Final = "chaoskit.scenario"
PLAN: Final = "chaoskit.plan"
PLAN_SEED: Final = "chaoskit.plan.seed"
#: on a cassette's episode span (``chaoskit.replay``): what the spans do not hold, as a JSON object: the model
#: replies (``models``: request hash, message hashes, redacted reply) and, on an episode that ``on_miss="record"``
#: added to a cassette, the tool answers it recorded live (``tools``)
REPLAY_ANSWERS: Final = "chaoskit.replay.answers"
#: on an episode appended to a cassette by ``on_miss="record"``: the id of the recorded episode it adds to
REPLAY_ADDS_TO: Final = "chaoskit.replay.adds_to"

# --- the battery runner's own spans ---------------------------------------------------------------------------
#: the ``run_episode {scenario}`` span around a command-line agent's process
SPAN_RUN_EPISODE: Final = "run_episode"
#: the episode's grid point and task on that span: ``chaoskit.run.task``, ``chaoskit.run.seed``, ...
RUN_PREFIX: Final = "chaoskit.run."
RUN_KEY: Final = "chaoskit.run.key"
RUN_OUTCOME: Final = "chaoskit.run.outcome"

# --- tags Jaeger adds when it converts OTLP spans to its UI JSON (read to tell them from span attributes) ------
OTEL_SCOPE_NAME: Final = "otel.scope.name"
OTEL_SCOPE_VERSION: Final = "otel.scope.version"
OTEL_LIBRARY_NAME: Final = "otel.library.name"
OTEL_LIBRARY_VERSION: Final = "otel.library.version"
OTEL_STATUS_CODE: Final = "otel.status_code"
OTEL_STATUS_DESCRIPTION: Final = "otel.status_description"
JAEGER_SPAN_KIND: Final = "span.kind"
JAEGER_ERROR: Final = "error"
JAEGER_SPAN_FORMAT: Final = "internal.span.format"
JAEGER_TRACESTATE: Final = "w3c.tracestate"
#: the log field holding a span event's name in Jaeger's UI JSON
JAEGER_LOG_EVENT: Final = "event"

# --- the proxies' execute_tool spans (OpenTelemetry MCP and HTTP conventions) -------------------------------
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
NETWORK_TRANSPORT: Final = "network.transport"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
HTTP_REQUEST_METHOD: Final = "http.request.method"
HTTP_ROUTE: Final = "http.route"
URL_PATH: Final = "url.path"

# --- grades written on the trace (the GenAI ``gen_ai.evaluation.result`` event) ------------------------------
#: one event per check on the episode's span (by ``chaoskit run``), or on a span written back under it
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
#: on that event: the span ids of the attempts that prove the result (a check's evidence)
EVALUATION_EVIDENCE: Final = "chaoskit.evaluation.evidence"
#: the span ``chaoskit check --write-back`` adds under an episode's span in a backend that cannot annotate
SPAN_EVALUATION: Final = "chaoskit.evaluation"

# --- MCP: the proxy's ``tools/call {tool}`` CLIENT span toward the upstream server (issue 27) -----------------
# (the MCP conventions of semantic-conventions-genai, docs/gen-ai/mcp.md; mcp.method.name, mcp.session.id,
# jsonrpc.request.id, network.transport and rpc.response.status_code are above, with the proxies' names)
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
NETWORK_PROTOCOL_NAME: Final = "network.protocol.name"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
#: ``error.type`` of a tools/call the server answered with ``isError: true``
MCP_TOOL_ERROR: Final = "tool_error"
