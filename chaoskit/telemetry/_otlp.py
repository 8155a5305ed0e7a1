"""The OTLP span exporter that the standard ``OTEL_EXPORTER_OTLP_*`` variables ask for: over gRPC or HTTP."""

from __future__ import annotations

import logging
import os

from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["PROTOCOLS", "exporter_from_env", "protocol_from_env"]

#: the values of ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` that chaoskit's own exporter honours
PROTOCOLS = ("http/protobuf", "grpc")

log = logging.getLogger("chaoskit")


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


def exporter_from_env() -> SpanExporter:
    """An OTLP span exporter set up by the standard variables (endpoint, headers, timeout, protocol).

    The SDK's exporters read the endpoint and the rest themselves: with ``grpc`` an ``http://`` endpoint is
    a plain-text connection, ``https://`` a TLS one (``OTEL_EXPORTER_OTLP_INSECURE`` too)."""
    if protocol_from_env() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()
