"""Starting a span and setting its attributes in bulk, without the SDK's per-value cleaning where it changes nothing.

The OpenTelemetry SDK cleans every attribute value it is given (type checks, a copy, a lock per key): for the
ten attributes of a tool attempt that is about a third of the span's cost. The values chaoskit sets on its hot
path are already clean (``str``, ``bool``, ``int``, ``float``, built by chaoskit), so where the SDK provably
does nothing with them but store them, :func:`put` stores them directly in the span's attribute dict.

That uses SDK internals (``Span._attributes._dict``, the processors of a ``SynchronousMultiSpanProcessor``),
so every condition is checked, and anything unexpected takes the public path (``span.set_attributes``) with
the same result:

- the tracer is the SDK's, its sampler is ``always_on`` or the default ``parentbased_always_on`` (neither
  reads attributes), and no attribute count or value length limit could cut a value;
- every span processor does nothing when a span starts (the SDK's own ``SimpleSpanProcessor`` and
  ``BatchSpanProcessor``, and chaoskit's fan-out when its sinks are such): a processor that reads a span's
  attributes in ``on_start`` must see them there, so then the attributes go through ``start_span``;
- the span is the SDK's recording span with an attribute store of the expected shape, still empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ConcurrentMultiSpanProcessor, SpanProcessor, SynchronousMultiSpanProcessor
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import _Span as SdkSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_ON

__all__ = ["SDK_SPAN", "put", "ready", "store_of"]

#: the SDK's span type: a span of exactly this type just started by a tracer is recording
SDK_SPAN = SdkSpan

#: ``on_start`` methods known to do nothing
_IDLE_ON_START = frozenset(
    {SpanProcessor.on_start, SimpleSpanProcessor.on_start, BatchSpanProcessor.on_start},
)
#: the values :func:`put` may store as they are (exact types: a subclass could clean differently)
_PLAIN = frozenset({str, bool, int, float})

#: (tracer, sampler, processors, chaoskit's fan-out sinks, answer): the last answer of :func:`ready`
_last: tuple[Any, Any, Any, Any, bool] = (None, None, None, None, False)


def _idle(processor: Any, depth: int = 0) -> bool:
    """Whether ``processor`` does nothing when a span starts (a fan-out: when none of its parts does)."""
    sinks = getattr(processor, "sinks", None) if depth < 4 else None
    if getattr(type(processor), "chaoskit_fanout", False) and isinstance(sinks, tuple):
        return all(_idle(s, depth + 1) for s in sinks)
    if isinstance(processor, SynchronousMultiSpanProcessor | ConcurrentMultiSpanProcessor) and depth < 4:
        inner = getattr(processor, "_span_processors", None)
        return isinstance(inner, tuple) and all(_idle(p, depth + 1) for p in inner)
    return getattr(type(processor), "on_start", None) in _IDLE_ON_START


def _limits_allow(tracer: Any) -> bool:
    limits = getattr(tracer, "_span_limits", None)
    count = getattr(limits, "max_span_attributes", 0)
    length = getattr(limits, "max_span_attribute_length", 0)
    return (count is None or (isinstance(count, int) and count >= 64)) and length is None


def ready(tracer: Any, sinks: tuple[Any, ...]) -> bool:
    """Whether spans of ``tracer`` may start without attributes and get them from :func:`put` (see above).

    ``sinks`` is chaoskit's fan-out's current sinks. The answer is kept until the tracer, its sampler, its
    processors or the sinks change, so that a call pays a few identity tests."""
    global _last
    last = _last
    if last[0] is tracer and last[1] is tracer.sampler and last[3] is sinks:
        multi = tracer.span_processor
        if last[2] is getattr(multi, "_span_processors", None):
            return last[4]
    if type(tracer) is not SdkTracer:
        return False
    sampler = tracer.sampler
    multi = tracer.span_processor
    processors = getattr(multi, "_span_processors", None)
    answer = (
        (sampler is ALWAYS_ON or sampler is DEFAULT_ON)
        and type(multi) is SynchronousMultiSpanProcessor
        and isinstance(processors, tuple)
        and all(_idle(p) for p in processors)
        and _limits_allow(tracer)
    )
    _last = (tracer, sampler, processors, sinks, answer)
    return answer


def put(span: Any, attrs: Mapping[str, Any]) -> None:
    """Set ``attrs`` on a span started while :func:`ready` held: stored as they are when the span and every
    value are as expected (:func:`store_of`), else through ``span.set_attributes`` (cleaned by the SDK)."""
    target = store_of(span)
    if target is not None and _PLAIN.issuperset(map(type, attrs.values())):
        target.update(attrs)
        return
    span.set_attributes(attrs)


def store_of(span: Any) -> dict[str, Any] | None:
    """The attribute dict of a span started while :func:`ready` held, for a caller to fill in place with values
    it knows to be ``str``, ``bool``, ``int`` or ``float`` (what :func:`put` checks); None when the span or its
    store is not as expected (still empty, not frozen), and the caller goes through :func:`put` instead.

    The hot path fills it key by key: no dict of attributes is built only to be copied."""
    if type(span) is SdkSpan:
        store = span._attributes
        if type(store) is BoundedAttributes and store._immutable is False:
            target = getattr(store, "_dict", None)
            if type(target) is dict and not target:
                return target
    return None
