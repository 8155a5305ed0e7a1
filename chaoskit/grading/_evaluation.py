"""Grades on the trace: ``gen_ai.evaluation.result`` events, and writing them back to Jaeger or Phoenix.

One check result is one event (the GenAI conventions' evaluation event): ``gen_ai.evaluation.name`` (the check),
``gen_ai.evaluation.score.value`` (1.0 passed, 0.0 not), ``gen_ai.evaluation.score.label`` (``pass``, ``warn``
or ``fail``), ``gen_ai.evaluation.explanation`` (its message) and ``chaoskit.evaluation.evidence`` (the span ids
of the attempts that prove it). ``chaoskit run`` adds them to the episode's span before it ends. A span that
has been exported cannot change, so ``chaoskit check --from-jaeger --write-back`` sends a new span,
``chaoskit.evaluation {episode}``, in the episode's trace and parented to its span, carrying the same events,
through the official OTel SDK and the exporter the standard ``OTEL_EXPORTER_OTLP_*`` variables describe.
``--from-phoenix --write-back`` sends span annotations on the episode's span instead (Phoenix's REST API).
The readers ignore both: a trace holding them grades exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chaoskit._errors import ChaoskitError
from chaoskit._version import __version__
from chaoskit.semconv import (
    EVALUATION_EVENT,
    EVALUATION_EVIDENCE,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    SPAN_EVALUATION,
)
from chaoskit.telemetry._otlp import exporter_from_env
from chaoskit.traces._records import EpisodeRecord, TraceReadError

__all__ = ["add_evaluation_events", "evaluation_attributes", "phoenix_annotations", "write_back_otlp"]

#: Phoenix's annotation ``identifier``: sending the grades again updates them instead of adding copies
ANNOTATION_IDENTIFIER = "chaoskit"


def evaluation_attributes(check: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of the ``gen_ai.evaluation.result`` event for one check result (``CheckResult.to_dict()``
    or a runner criterion: ``name``, ``passed``, ``severity``, ``message``, ``evidence``)."""
    attrs: dict[str, Any] = {
        GEN_AI_EVALUATION_NAME: str(check["name"]),
        GEN_AI_EVALUATION_SCORE_VALUE: 1.0 if check["passed"] else 0.0,
        GEN_AI_EVALUATION_SCORE_LABEL: str(check["severity"]),
        GEN_AI_EVALUATION_EXPLANATION: str(check["message"]),
    }
    evidence = tuple(str(e) for e in check.get("evidence") or ())
    if evidence:
        attrs[EVALUATION_EVIDENCE] = evidence
    return attrs


def add_evaluation_events(span: trace.Span, checks: Iterable[Mapping[str, Any]]) -> None:
    """One ``gen_ai.evaluation.result`` event per check on ``span`` (an open, recording span)."""
    if span.is_recording():
        for check in checks:
            span.add_event(EVALUATION_EVENT, evaluation_attributes(check))


def _parent(ep: EpisodeRecord) -> trace.SpanContext:
    if not ep.trace_id or not ep.span_id:
        raise ChaoskitError(f"episode {ep.name or ep.id!r} has no trace or span id to write its grades under")
    return trace.SpanContext(int(ep.trace_id, 16), int(ep.span_id, 16), is_remote=True, trace_flags=trace.TraceFlags(1))


def write_back_otlp(graded: Sequence[tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]], service: str) -> str:
    """Send, for each graded episode, a ``chaoskit.evaluation {episode}`` span with one evaluation event per
    check, in the episode's trace under its span, as service ``service``, over OTLP as the standard variables
    say (the SDK's default, http://localhost:4318, when none is set); where it went. A TraceReadError when the
    export fails."""
    exporter, where = exporter_from_env()
    # a provider of its own, never the global one: the spans are built by the SDK, collected, then exported once
    collected = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({SERVICE_NAME: service}))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("chaoskit", __version__)
    for ep, checks in graded:
        ctx = trace.set_span_in_context(trace.NonRecordingSpan(_parent(ep)))
        with tracer.start_as_current_span(f"{SPAN_EVALUATION} {ep.name or ep.id}", context=ctx) as span:
            add_evaluation_events(span, checks)
    spans: Sequence[ReadableSpan] = collected.get_finished_spans()
    try:
        result = exporter.export(spans) if spans else SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
        provider.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise TraceReadError(f"could not send the grades of {len(graded)} episode(s)", source=where)
    return where


def phoenix_annotations(graded: Sequence[tuple[EpisodeRecord, Sequence[Mapping[str, Any]]]]) -> list[dict[str, Any]]:
    """Phoenix span annotations (``SpanAnnotationData``) for each check of each graded episode, on its span."""
    out = []
    for ep, checks in graded:
        span_id = _parent(ep).span_id
        for check in checks:
            attrs = evaluation_attributes(check)
            out.append(
                {
                    "span_id": f"{span_id:016x}",
                    "name": attrs[GEN_AI_EVALUATION_NAME],
                    "annotator_kind": "CODE",
                    "identifier": ANNOTATION_IDENTIFIER,
                    "result": {
                        "label": attrs[GEN_AI_EVALUATION_SCORE_LABEL],
                        "score": attrs[GEN_AI_EVALUATION_SCORE_VALUE],
                        "explanation": attrs[GEN_AI_EVALUATION_EXPLANATION],
                    },
                    "metadata": {"evidence": list(attrs.get(EVALUATION_EVIDENCE, ())), "trace_id": ep.trace_id},
                }
            )
    return out
