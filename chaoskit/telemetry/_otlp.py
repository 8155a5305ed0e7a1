"""What the standard ``OTEL_*`` variables ask for: the OTLP span exporter (gRPC or HTTP), and the resource."""

from __future__ import annotations

import os

from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace.export import SpanExporter

from chaoskit.telemetry._sinks import log

__all__ = ["DEFAULT_SERVICE_NAME", "PROTOCOLS", "exporter_from_env", "protocol_from_env", "resource_from_env"]

#: ``service.name`` of chaoskit's private provider when neither variable names a service
DEFAULT_SERVICE_NAME = "chaoskit"

#: the values of ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` that chaoskit's own exporter honours
PROTOCOLS = ("http/protobuf", "grpc")


def protocol_from_env() -> str:
    """``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf``.

    A value other than ``grpc`` or ``http/protobuf`` (``http/json``, which the Python SDK cannot send, or a
    typo) is warned about once and ``http/protobuf`` is used."""
    for var in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = os.environ.get(var, "").strip().lower()
        if not value:
            continue
        if value in PROTOCOLS:
            return value
        log.warning(
            "chaoskit: %s=%r is not an OTLP protocol chaoskit can export with (%s); using http/protobuf",
            var,
            os.environ[var],
            " or ".join(PROTOCOLS),
        )
        return "http/protobuf"
    return "http/protobuf"


def exporter_from_env() -> tuple[SpanExporter, str]:
    """An OTLP span exporter set up by the standard variables (endpoint, headers, timeout, protocol), and
    where it sends (the endpoint and protocol, for messages).

    The SDK's exporters read the endpoint and the rest themselves: with ``grpc`` an ``http://`` endpoint is
    a plain-text connection, ``https://`` a TLS one (``OTEL_EXPORTER_OTLP_INSECURE`` too)."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if protocol_from_env() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(), f"{traces or base} (OTLP/gRPC)"
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    where = traces or (base.rstrip("/") + "/v1/traces" if base else "")
    return HttpExporter(), f"{where} (OTLP/HTTP)"


def resource_from_env() -> Resource:
    """The resource the standard variables describe (``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``), with
    ``service.name`` set to ``chaoskit`` only when neither names a service."""
    resource = Resource.create()
    named = OTELResourceDetector().detect().attributes.get(SERVICE_NAME)
    if named:
        return resource
    return resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
