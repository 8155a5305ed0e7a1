"""Model steps as read from exported ``chat`` spans (SDK spans, or OTLP-JSON through the traces' one decoder)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoskit.grading._result import leaves
from chaoskit.semconv import (
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    OP_CHAT,
)
from chaoskit.traces._build import TraceBuilder
from chaoskit.traces._decode import nanos, otlp_attributes, otlp_id, otlp_spans
from chaoskit.traces._readers import file_documents, guarded

__all__ = ["StepRecord", "ToolCall", "read_steps", "step_from_attributes", "steps_from_spans"]

#: what the engine's capping leaves at the end of a cut text: such a text is incomplete
CUT_MARK = "…[+"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call a model step asked for (from its captured content)."""

    name: str
    arguments: Any
    id: str | None = None


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One model step (``chat`` span). ``text`` is None when its content was not captured (then ``tool_calls``
    and ``tool_results`` are empty because unknown, not because there were none: see ``captured``)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    start_time: float
    end_time: float
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[str, ...] = ()
    captured: bool = False
    #: the model name the step asked for (``gen_ai.request.model``); ``model`` is the name that answered
    request_model: str | None = None

    @property
    def document(self) -> str:
        """The step as one text for similarity: its text, then each requested call's name and argument values."""
        words = [self.text or ""]
        for call in self.tool_calls:
            words.append(call.name)
            # argument values 8 levels deep at most, booleans left out
            words.extend(str(v) for v in leaves(call.arguments, limit=8) if not isinstance(v, bool))
        return " ".join(w for w in words if w)


def _messages(raw: Any) -> list[Any] | None:
    """GenAI message JSON as a list; None when absent or cut (a capped attribute is not valid JSON)."""
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, list) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def step_from_attributes(
    attrs: Mapping[str, Any], *, trace_id: str, span_id: str, parent_id: str | None, start: float, end: float
) -> StepRecord:
    """A :class:`StepRecord` from a ``chat`` span's attributes and ids (times in epoch seconds)."""
    out = _messages(attrs.get(GEN_AI_OUTPUT_MESSAGES))
    text: str | None = None
    calls: list[ToolCall] = []
    if out is not None:
        texts: list[str] = []
        for message in out:
            for part in message.get("parts", ()) if isinstance(message, Mapping) else ():
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "text" and isinstance(part.get("content"), str):
                    texts.append(part["content"])
                elif part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                    cid = part.get("id")
                    calls.append(ToolCall(part["name"], part.get("arguments"), cid if isinstance(cid, str) else None))
        text = "\n".join(texts)
    results: list[str] = []
    for message in _messages(attrs.get(GEN_AI_INPUT_MESSAGES)) or ():
        for part in message.get("parts", ()) if isinstance(message, Mapping) else ():
            if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                response = part.get("response")
                results.append(response if isinstance(response, str) else json.dumps(response, default=str))
    model = attrs.get(GEN_AI_RESPONSE_MODEL) or attrs.get(GEN_AI_REQUEST_MODEL)
    request = attrs.get(GEN_AI_REQUEST_MODEL)
    return StepRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        start_time=start,
        end_time=end,
        model=model if isinstance(model, str) else None,
        input_tokens=_int(attrs.get(GEN_AI_USAGE_INPUT_TOKENS)),
        output_tokens=_int(attrs.get(GEN_AI_USAGE_OUTPUT_TOKENS)),
        text=text,
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        captured=out is not None,
        request_model=request if isinstance(request, str) else None,
    )


def _is_step(name: str, attrs: Mapping[str, Any]) -> bool:
    return attrs.get(GEN_AI_OPERATION_NAME) == OP_CHAT and (name == OP_CHAT or name.startswith(OP_CHAT + " "))


def steps_from_spans(spans: Iterable[Any]) -> list[StepRecord]:
    """The model steps among OpenTelemetry SDK spans (``ReadableSpan``), in start-time order."""
    steps: list[StepRecord] = []
    for span in spans:
        attrs = dict(span.attributes or {})
        if not _is_step(span.name, attrs):
            continue
        ctx = span.context
        parent = span.parent
        steps.append(
            step_from_attributes(
                attrs,
                trace_id=f"{ctx.trace_id:032x}",
                span_id=f"{ctx.span_id:016x}",
                parent_id=f"{parent.span_id:016x}" if parent is not None else None,
                start=(span.start_time or 0) / 1e9,
                end=(span.end_time or span.start_time or 0) / 1e9,
            )
        )
    steps.sort(key=lambda s: (s.start_time, s.end_time))
    return steps


def read_steps(source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> list[StepRecord]:
    """The model steps of OTLP-JSON: a file (one document or JSON Lines, read by the trace file reader), or parsed
    documents. Spans that are not ``chat`` steps are skipped; a step span without valid ids or times, or a
    document that is not OTLP-JSON, raises :class:`TraceReadError` naming the file, the line and the span."""
    steps: list[StepRecord] = []

    def take(doc: Any, fmt: str | None, builder: TraceBuilder) -> None:
        for one in doc if isinstance(doc, list) else (doc,):
            if not isinstance(one, Mapping):
                continue  # (as before: a document that is not an object holds no steps)
            if not {"resourceSpans", "result", "data", "traceID"} & one.keys():
                # a document of another shape is refused, not read as "no steps" (a trajectory JSON gave [] before)
                hint = " (a trajectory JSON: read it with chaoskit.metrics.read_trajectories)" if "steps" in one else ""
                keys = sorted(one)[:6]
                raise builder.error(f'not OTLP-JSON: no "resourceSpans" in a document with keys {keys}{hint}')
            if "resourceSpans" not in one and "result" not in one:
                continue  # Jaeger UI JSON: it carries no model steps chaoskit reads
            steps.extend(_otlp_steps(one, builder))

    if isinstance(source, str | os.PathLike):
        builder = TraceBuilder(str(source))
        with guarded(builder, "otlp"):
            for _ in file_documents(Path(source), "otlp", builder, take):
                pass
    else:
        builder = TraceBuilder("<otlp>")
        for doc in [source] if isinstance(source, Mapping) else list(source):
            take(doc, "otlp", builder)
    steps.sort(key=lambda s: (s.start_time, s.end_time))
    return steps


def _otlp_steps(doc: Mapping[str, Any], builder: TraceBuilder) -> Iterator[StepRecord]:
    for scope, k, sp in otlp_spans(doc, builder):
        name = sp.get("name")
        # only a span named like a step has its attributes decoded: the others cost one string compare
        if isinstance(name, str) and (name == OP_CHAT or name.startswith(OP_CHAT + " ")):
            step = _otlp_step(sp, name, f"{scope}.spans[{k}] ({name})", builder)
            if step is not None:
                yield step


def _otlp_step(sp: Mapping[str, Any], name: str, where: str, builder: TraceBuilder) -> StepRecord | None:
    attrs = otlp_attributes(sp.get("attributes"), where, None, builder)
    if not _is_step(name, attrs):
        return None
    trace_id, span_id = otlp_id(sp.get("traceId"), 32), otlp_id(sp.get("spanId"), 16)
    start, end = nanos(sp.get("startTimeUnixNano")), nanos(sp.get("endTimeUnixNano"))
    if trace_id is None or span_id is None or start is None or end is None or end < start:
        raise builder.error(f"model step span {name!r} has no valid traceId, spanId or start/end times")
    return step_from_attributes(
        attrs,
        trace_id=trace_id,
        span_id=span_id,
        parent_id=otlp_id(sp.get("parentSpanId"), 16),
        start=start / 1e9,
        end=end / 1e9,
    )
