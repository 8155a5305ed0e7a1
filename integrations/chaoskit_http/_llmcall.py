"""One model call through the proxy: count and decide it with the engine's model calls, answer as the provider.

Per request to ``/chat/completions`` (OpenAI-compatible) or ``/v1/messages`` (Anthropic):
:func:`chaoskit.engine.begin_model_call` counts the call of the request's ``model`` and decides its fault, then

- no fault (or ``latency``, after its wait): the upstream's answer goes to the client byte for byte, streamed or
  whole; the proxy only reads along (usage, finish reason) for the call's span;
- ``rate_limit``, ``overloaded``, ``http``: the provider's error (status, ``Retry-After``, its JSON error body)
  before the upstream is called; ``overloaded`` is 503 on the OpenAI endpoint unless the plan gives ``status``;
- ``timeout``: the connection is held ``after_s`` without an answer, then 504;
- with ``after_chunks: N`` on a streamed call: the upstream's first ``N`` events go through, then the error
  event of the provider (an error fault) or a stall of ``after_s`` and a cut connection (``timeout``);
- ``empty_completion``, ``truncated``, ``malformed_tool_call``, ``unknown_tool_call``, ``refusal``: the upstream
  answers, and its completion is rewritten (:func:`chaoskit.engine.fault_completion`) in the provider's format,
  a stream as a fresh stream of the provider's events.

Each call is recorded as the engine records model calls, a ``chat {model}`` span of the open episode
(:meth:`chaoskit.Episode.step`, with :meth:`ModelCall.attributes`), ended before the answer leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from chaoskit import ModelHTTPError, ModelTimeout
from chaoskit import semconv as sc
from chaoskit.engine import Completion, ModelCall, begin_model_call, fault_completion

from . import _answers as answers
from . import _llm as llm
from . import _wire as wire
from ._client import CONNECT_FAILED, TIMED_OUT, Response

if TYPE_CHECKING:
    from chaoskit import Plan

    from ._client import Upstream


class _Request(Protocol):
    """What a model call needs of the request being proxied (``chaoskit_http._app._Request``)."""

    method: str
    raw_path: bytes
    query: bytes
    headers: list[tuple[bytes, bytes]]
    prefix: wire.BodyPrefix

    def body(self) -> AsyncIterator[bytes]: ...


class HttpProxy(Protocol):
    """What a model call needs of the proxy (``chaoskit_http.HttpProxy``): its plan, upstream and limits."""

    plan: Plan
    upstream: Upstream
    max_body: int
    stopping: asyncio.Event | None

    async def _hold(self, req: Any, seconds: float) -> None: ...


__all__ = ["ModelEndpoint"]

log = logging.getLogger("chaoskit.http")

#: the largest request body read to learn a model call's model (a chat request is read whole)
MAX_REQUEST = 64 * 1024 * 1024
_ERROR_FAULTS = ("rate_limit", "overloaded", "http", "timeout")
_COMPLETION_FAULTS = ("empty_completion", "truncated", "malformed_tool_call", "unknown_tool_call", "refusal")


class _Outcome:
    """What the call's span records: usage, finish reason, response model, the completion, the error."""

    __slots__ = (
        "completion",
        "error",
        "finish",
        "input_tokens",
        "output_tokens",
        "recorded",
        "response_model",
        "start",
        "status",
    )

    def __init__(self) -> None:
        self.start = time.time()
        self.recorded = False
        self.status = 0
        self.error: BaseException | None = None
        self.finish: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.response_model: str | None = None
        self.completion: Completion | None = None

    def read(self, reader: llm.StreamReader) -> None:
        self.input_tokens, self.output_tokens = reader.input_tokens, reader.output_tokens
        self.response_model = reader.head.get("model")
        self.completion = reader.completion()
        self.finish = self.completion.finish_reason


class ModelEndpoint:
    """The model endpoints of one :class:`~chaoskit_http.HttpProxy` (its upstream, plan and limits)."""

    def __init__(self, proxy: HttpProxy) -> None:
        self.proxy = proxy

    async def handle(self, req: _Request, send: Any, provider: str) -> int:
        """Serve one model call; the status answered (0: none)."""
        body = await _whole_body(req)
        if body is None:
            message = f"a model request over {MAX_REQUEST} bytes is more than this proxy reads"
            status, headers, data = llm.error_response(provider, ModelHTTPError(413, message))
            await answers.respond(send, status, headers, data)
            return status
        try:
            doc = json.loads(body) if body else None
        except ValueError:
            doc = None
        fields = doc if isinstance(doc, dict) else {}
        model = fields.get("model") if isinstance(fields.get("model"), str) else None
        stream = fields.get("stream") is True
        call = begin_model_call(model, plan=self.proxy.plan)
        out = _Outcome()
        try:
            await self._carry_out(call, req, body, stream, provider, send, out)
        except BaseException as exc:
            out.error = out.error or exc
            raise
        finally:
            _record(call, out)
        return out.status

    async def _carry_out(
        self, call: ModelCall, req: _Request, body: bytes, stream: bool, provider: str, send: Any, out: _Outcome
    ) -> None:
        fault = call.fault
        cut = fault is not None and fault.after_chunks is not None and stream
        if fault is not None and fault.type == "latency":
            await asyncio.sleep(call.delay_s)
        elif fault is not None and fault.type in _ERROR_FAULTS and not cut:
            exc = call.error(_provider_status(provider, call))
            assert exc is not None
            if isinstance(exc, ModelTimeout):
                await self.proxy._hold(req, call.delay_s)
            status, headers, data = llm.error_response(provider, exc)
            out.status, out.error = status, exc
            _record(call, out)  # the span ends before the answer leaves: a Retry-After gap is never short
            await answers.respond(send, status, headers, data)
            return
        try:
            resp = await self._forward(req, body)
        except Exception as exc:
            status = 504 if isinstance(exc, TIMED_OUT) else 502
            message = f"the upstream {self.proxy.upstream.netloc} failed: {type(exc).__name__}: {exc or 'no detail'}"
            out.status, out.error = status, ModelHTTPError(status, message)
            if fault is not None and fault.type != "latency":  # a completion fault: there is no completion
                why = "could not be reached" if isinstance(exc, CONNECT_FAILED) else "failed before it answered"
                call.skip(f"the upstream {why}")
            _record(call, out)
            await answers.respond(send, status, *llm.error_response(provider, out.error)[1:])
            return
        try:
            await self._answer(call, resp, stream, provider, send, out)
        finally:
            await resp.aclose()

    async def _forward(self, req: _Request, body: bytes) -> Response:
        target = req.raw_path + (b"?" + req.query if req.query else b"")
        headers = wire.forward_headers(req.headers, self.proxy.upstream.netloc, length=len(body))
        return await self.proxy.upstream.send(req.method, target, headers, body)

    async def _answer(
        self, call: ModelCall, resp: Response, stream: bool, provider: str, send: Any, out: _Outcome
    ) -> None:
        out.status = resp.status
        fault = call.fault
        ctype = (wire.header(resp.headers, b"content-type") or "").split(";", 1)[0].strip().lower()
        if resp.status >= 400:
            retry = wire.seconds(wire.header(resp.headers, b"retry-after"))
            out.error = ModelHTTPError(
                resp.status, f"HTTP {resp.status} {resp.reason or ''}".strip(), retry_after=retry
            )
            if fault is not None and fault.type != "latency":
                call.skip(f"the upstream answered HTTP {resp.status} itself")
            await self._pass(resp, send, None)
            return
        if ctype == "text/event-stream":
            coding = (wire.header(resp.headers, b"content-encoding") or "identity").strip().lower()
            if coding != "identity" and fault is not None and fault.type != "latency":
                # its events cannot be told apart without decoding it: it goes through as it came
                call.skip(f"the stream is compressed (Content-Encoding: {coding})")
                fault = None
            if fault is not None and fault.after_chunks is not None and stream:
                await self._cut(call, resp, provider, send, out)
            elif fault is not None and fault.type in _COMPLETION_FAULTS:
                await self._rewrite_stream(call, resp, provider, send, out)
            elif call.episode is None:  # nothing records the call: the stream is not even read along
                await self._pass(resp, send, None)
            else:
                reader = llm.StreamReader(provider)
                await self._pass(resp, send, reader)
                out.read(reader)
            return
        await self._whole(call, resp, provider, send, out)

    async def _pass(self, resp: Response, send: Any, reader: llm.StreamReader | None) -> None:
        """The upstream's answer as it came, chunk by chunk; ``reader`` reads its events along the way."""
        headers = wire.response_headers(resp.headers, rewritten=False)
        await send({"type": "http.response.start", "status": resp.status, "headers": headers})
        splitter = llm.EventSplitter() if reader is not None else None
        async for chunk in resp.aiter_stream():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if splitter is not None and reader is not None:
                for event in splitter.feed(chunk):
                    reader.read(event)
        await send({"type": "http.response.body", "body": b""})

    async def _cut(self, call: ModelCall, resp: Response, provider: str, send: Any, out: _Outcome) -> None:
        """The first ``after_chunks`` events of the stream, then the fault: an error event, or a stall and a cut."""
        fault = call.fault
        assert fault is not None and fault.after_chunks is not None
        headers = wire.response_headers(resp.headers, rewritten=False)
        await send({"type": "http.response.start", "status": resp.status, "headers": headers})
        reader = llm.StreamReader(provider)
        splitter = llm.EventSplitter()
        chunks = resp.aiter_stream()
        async for chunk in chunks:
            for event in splitter.feed(chunk):
                await send({"type": "http.response.body", "body": event, "more_body": True})
                reader.read(event)
                if reader.events >= fault.after_chunks:
                    await self._break_off(call, reader, provider, send, out)
                    return
        out.read(reader)
        call.skip(f"the stream ended after {reader.events} chunk(s), before after_chunks ({fault.after_chunks})")
        await send({"type": "http.response.body", "body": splitter.rest})

    async def _break_off(
        self, call: ModelCall, reader: llm.StreamReader, provider: str, send: Any, out: _Outcome
    ) -> None:
        exc = call.error(_provider_status(provider, call))
        assert exc is not None
        out.read(reader)
        out.error, out.finish = exc, "error"
        if isinstance(exc, ModelTimeout):
            # the stream stalls, then the connection is cut: no end of the body, no error event
            await self._stall(call.delay_s)
            return
        _record(call, out)
        await send({"type": "http.response.body", "body": llm.error_event(provider, exc)})

    async def _stall(self, seconds: float) -> None:
        stopping = self.proxy.stopping
        if stopping is None:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(stopping.wait(), seconds)
        except TimeoutError:
            pass

    async def _rewrite_stream(self, call: ModelCall, resp: Response, provider: str, send: Any, out: _Outcome) -> None:
        """Read the whole stream, apply the completion fault, and stream the provider's events of the result."""
        raw, rest = await answers.read_at_most(resp, self.proxy.max_body)
        if rest is not None:
            call.skip(f"the streamed answer is over {self.proxy.max_body} bytes (max_body)")
            reader = llm.StreamReader(provider)
            await _send_stream(resp, send, rest, reader)
            out.read(reader)
            return
        reader = llm.StreamReader(provider)
        splitter = llm.EventSplitter()
        for event in splitter.feed(raw):
            reader.read(event)
        out.read(reader)
        completion = out.completion
        assert completion is not None and call.fault is not None
        faulted = fault_completion(call.fault, completion.text, completion.tool_calls, completion.finish_reason)
        if not isinstance(faulted, Completion):
            call.skip(faulted)
            await _send_stream(resp, send, answers.chain([raw], None), None)
            return
        out.completion, out.finish = faulted, faulted.finish_reason
        headers = wire.response_headers(resp.headers, rewritten=True)
        data = llm.write_stream(reader, faulted)
        _record(call, out)
        await answers.respond(send, resp.status, headers, data)

    async def _whole(self, call: ModelCall, resp: Response, provider: str, send: Any, out: _Outcome) -> None:
        """A whole (JSON) answer: read within ``max_body``, rewritten for a completion fault, else as it came."""
        raw, rest = await answers.read_at_most(resp, self.proxy.max_body)
        fault = call.fault
        wants = fault is not None and fault.type in _COMPLETION_FAULTS
        if rest is not None:
            if wants:
                call.skip(f"the answer is over {self.proxy.max_body} bytes (max_body)")
            await _send_stream(resp, send, rest, None)
            return
        body = answers.decoded(raw, wire.header(resp.headers, b"content-encoding"), self.proxy.max_body)
        doc = _json(body)
        completion = llm.read_json(provider, doc)
        if isinstance(doc, dict):
            out.input_tokens, out.output_tokens = llm.usage_of(provider, doc)
            out.response_model = doc.get("model") if isinstance(doc.get("model"), str) else None
        if completion is not None:
            out.completion, out.finish = completion, completion.finish_reason
        if not wants:
            await answers.respond(send, resp.status, wire.response_headers(resp.headers, rewritten=False), raw)
            return
        assert fault is not None
        faulted: Completion | str = "the answer is no completion chaoskit can read"
        if completion is not None and isinstance(doc, dict):
            faulted = fault_completion(fault, completion.text, completion.tool_calls, completion.finish_reason)
        if isinstance(faulted, Completion) and provider == llm.ANTHROPIC and faulted.invalid_tool_calls:
            faulted = (
                "the Messages API sends a tool call's input as a JSON object: only a streamed answer "
                "(input_json_delta) can carry arguments that are not JSON"
            )
        if not isinstance(faulted, Completion):
            call.skip(faulted)
            await answers.respond(send, resp.status, wire.response_headers(resp.headers, rewritten=False), raw)
            return
        assert isinstance(doc, dict)
        out.completion, out.finish = faulted, faulted.finish_reason
        data = json.dumps(llm.write_json(provider, doc, faulted), ensure_ascii=False).encode()
        headers = wire.response_headers(resp.headers, rewritten=True)
        headers.append((b"content-length", str(len(data)).encode()))
        _record(call, out)
        await answers.respond(send, resp.status, headers, data)


async def _whole_body(req: _Request) -> bytes | None:
    """The whole request body (a chat request is read whole: its ``model`` names the call); None past
    :data:`MAX_REQUEST` bytes."""
    if not req.prefix.more:
        return req.prefix.data
    parts: list[bytes] = []
    size = 0
    async for chunk in req.body():
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            return None
    req.prefix = wire.BodyPrefix(b"".join(parts), False)
    return req.prefix.data


async def _send_stream(
    resp: Response, send: Any, chunks: AsyncIterator[bytes], reader: llm.StreamReader | None
) -> None:
    headers = wire.response_headers(resp.headers, rewritten=False)
    await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    splitter = llm.EventSplitter()
    async for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if reader is not None:
            for event in splitter.feed(chunk):
                reader.read(event)
    await send({"type": "http.response.body", "body": b""})


def _json(body: bytes | None) -> Any:
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _provider_status(provider: str, call: ModelCall) -> Any:
    """The conversion of the call's error to the endpoint's: ``overloaded`` is 503 at OpenAI, unless the plan
    gave its status."""
    fault = call.fault

    def convert(exc: BaseException) -> BaseException:
        if (
            provider == llm.OPENAI
            and isinstance(exc, ModelHTTPError)
            and fault is not None
            and fault.type == "overloaded"
            and "status" not in fault.model_fields_set
        ):
            message = exc.message.replace("HTTP 529", "HTTP 503")
            return ModelHTTPError(503, message, retry_after=exc.retry_after)
        return exc

    return convert


def _record(call: ModelCall, out: _Outcome) -> None:
    """The call's ``chat {model}`` span in the open episode, once (the first call records it; a later one is a
    no-op, so the span can end before the answer leaves and the ``finally`` still covers every other way out)."""
    if out.recorded:
        return
    out.recorded = True
    episode = call.episode
    if episode is None:
        return
    attrs = call.attributes()
    if out.status:
        attrs[sc.HTTP_RESPONSE_STATUS_CODE] = out.status
    c = out.completion
    calls = [] if c is None else [t for t in c.tool_calls if isinstance(t.get("name"), str) and t["name"]]
    try:
        episode.step(
            c.text if c is not None else None,
            tool_calls=calls,
            model=call.model,
            response_model=out.response_model,
            input_tokens=out.input_tokens,
            output_tokens=out.output_tokens,
            finish_reason=out.finish,
            start_time=out.start,
            attributes=attrs,
            error=out.error,
        )
    except Exception:  # recording a call must never break the agent's run
        log.exception("chaoskit http-proxy: could not record a model call; ignored")
