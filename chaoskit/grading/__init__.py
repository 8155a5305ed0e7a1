"""Layer 4, grading: traces in (in-memory spans, OTLP-JSON, Jaeger), verdicts and the recovery score out."""
