"""Layer 2, the attempt engine: decide a fault, record the attempt as a span, run or fake the call."""
