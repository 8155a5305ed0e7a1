"""The HTTP proxy in front of model providers: OpenAI ``/v1/chat/completions`` and Anthropic ``/v1/messages``.

A local fake provider streams real-shaped server-sent events (OpenAI ``data: {...}`` chunks and ``data: [DONE]``,
Anthropic's typed events) and answers whole JSON; the official ``openai`` and ``anthropic`` SDKs are pointed at
the proxy, so their own retry logic meets the faults as a provider sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from chaoskit_http import serve  # noqa: E402

import chaoskit  # noqa: E402
from chaoskit import PlanError, Trace, telemetry  # noqa: E402
from chaoskit import semconv as sc  # noqa: E402
from chaoskit.checks import run_checks  # noqa: E402

TEXT_PIECES = ["The weather", " in Paris", " is sunny", " and mild today."]
TOOL_ARGS = ['{"city": ', '"Paris", "unit": "celsius"}']


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def openai_events(model: str, tools: bool, usage: bool) -> list[bytes]:
    """A chat completion stream as OpenAI sends it (one ``data:`` line per chunk, then ``[DONE]``)."""
    head = {"id": "chatcmpl-abc123", "object": "chat.completion.chunk", "created": 1764892800, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    if tools:
        call = {"index": 0, "id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        out.append(chunk({"tool_calls": [call]}))
        out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in TOOL_ARGS]
        out.append(chunk({}, "tool_calls"))
    else:
        out += [chunk({"content": piece}) for piece in TEXT_PIECES]
        out.append(chunk({}, "stop"))
    if usage:
        out.append(
            _sse({**head, "choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}})
        )
    return [*out, b"data: [DONE]\n\n"]


def anthropic_events(model: str, tools: bool) -> list[bytes]:
    """A Messages stream as Anthropic sends it (typed events, a ping, input_json_delta for tool input)."""
    message = {
        "id": "msg_01abc",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    out = [_sse({"type": "message_start", "message": message}, "message_start"), _sse({"type": "ping"}, "ping")]
    if tools:
        block = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}
        out.append(_sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"))
        for a in TOOL_ARGS:
            delta = {"type": "input_json_delta", "partial_json": a}
            out.append(_sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"))
    else:
        block = {"type": "text", "text": ""}
        out.append(_sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"))
        for piece in TEXT_PIECES:
            delta = {"type": "text_delta", "text": piece}
            out.append(_sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"))
    out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    stop = {"stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None}
    out.append(_sse({"type": "message_delta", "delta": stop, "usage": {"output_tokens": 12}}, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def openai_json(model: str, tools: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if tools else "".join(TEXT_PIECES), "refusal": None}
    if tools:
        fn = {"name": "get_weather", "arguments": "".join(TOOL_ARGS)}
        message["tool_calls"] = [{"id": "call_w1", "type": "function", "function": fn}]
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1764892800,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if tools else "stop"}
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30},
    }


def anthropic_json(model: str, tools: bool) -> dict[str, Any]:
    content: list[dict[str, Any]] = (
        [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}}]
        if tools
        else [{"type": "text", "text": "".join(TEXT_PIECES)}]
    )
    return {
        "id": "msg_01abc",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12},
    }


class Provider:
    """A fake model provider (ASGI): both APIs, streamed or whole, a tool call when the request offers tools."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        req = json.loads(body)
        self.requests.append({"path": scope["path"], **req})
        tools = bool(req.get("tools"))
        model = req.get("model", "?")
        anthropic = scope["path"] == "/v1/messages"
        if not req.get("stream"):
            doc = anthropic_json(model, tools) if anthropic else openai_json(model, tools)
            data = json.dumps(doc).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": data})
            return
        usage = bool((req.get("stream_options") or {}).get("include_usage"))
        events = anthropic_events(model, tools) if anthropic else openai_events(model, tools, usage)
        headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        stream = b"".join(events)
        if req.get("x_gzip"):  # a provider that compresses its stream
            stream = gzip.compress(stream)
            headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        # chunked as a network would: cuts inside events, never on their boundaries only
        for i in range(0, len(stream), 97):
            await send({"type": "http.response.body", "body": stream[i : i + 97], "more_body": True})
            await asyncio.sleep(0.001)
        await send({"type": "http.response.body", "body": b""})


@contextlib.contextmanager
def running_provider() -> Iterator[tuple[Provider, str]]:
    app = Provider()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield app, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def provider() -> Iterator[tuple[Provider, str]]:
    with running_provider() as running:
        yield running


OPENAI_REQ = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
ANTHROPIC_REQ = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
}
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
ANTHROPIC_TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def chat_spans(cap: telemetry.SpanCapture) -> list[dict[str, Any]]:
    """The ``chat`` spans' names and attributes, in start order."""
    spans = sorted(
        (s for s in cap.spans if (s.attributes or {}).get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT),
        key=lambda s: s.start_time or 0,
    )
    return [{"name": s.name, **dict(s.attributes or {})} for s in spans]


def _raw(url: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    with httpx.Client(timeout=10) as client, client.stream("POST", url + path, json=body) as resp:
        return resp.status_code, dict(resp.headers), b"".join(resp.iter_raw())


# -- no plan: byte for byte ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {**OPENAI_REQ, "stream": True, "stream_options": {"include_usage": True}}),
        ("/v1/chat/completions", {**OPENAI_REQ, "stream": True, "tools": [WEATHER_TOOL]}),
        ("/v1/messages", {**ANTHROPIC_REQ, "stream": True}),
        ("/v1/messages", {**ANTHROPIC_REQ, "stream": True, "tools": [ANTHROPIC_TOOL]}),
        ("/v1/chat/completions", OPENAI_REQ),
        ("/v1/messages", ANTHROPIC_REQ),
    ],
)
def test_without_a_plan_a_completion_passes_through_byte_for_byte(
    provider: tuple[Provider, str], path: str, body: dict[str, Any]
) -> None:
    _, up = provider
    direct = _raw(up, path, body)
    with telemetry.capture() as cap, chaoskit.episode("agent") as ep:
        with serve({"faults": []}, upstream=up) as url:
            proxied = _raw(url, path, body)
        ep.finish("done")
    assert proxied[0] == direct[0] == 200
    assert proxied[2] == direct[2]
    assert proxied[1]["content-type"] == direct[1]["content-type"]
    (span,) = chat_spans(cap)
    assert span["name"] == f"chat {body['model']}"
    assert span[sc.MODEL_CALL] == 1 and sc.FAULT_TYPE not in span
    # usage as the provider reported it: an OpenAI stream carries it only when stream_options asks for it
    no_usage = body.get("stream") and path.endswith("completions") and "stream_options" not in body
    expected = None if no_usage else 12 if path.endswith("messages") else 9
    assert span.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS) == expected


# -- errors as the providers send them, retried by the SDKs ---------------------------------------------------


def test_openai_sdk_retries_an_injected_429_after_its_retry_after(provider: tuple[Provider, str]) -> None:
    openai = pytest.importorskip("openai")
    prov, up = provider
    plan = {"seed": 7, "faults": [{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 0.4}]}
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=2)
            reply = client.chat.completions.create(**OPENAI_REQ)
        ep.finish(reply.choices[0].message.content)
    assert reply.choices[0].message.content == "".join(TEXT_PIECES)
    assert len(prov.requests) == 1  # the 429 never reached the provider
    first, second = chat_spans(cap)
    assert first[sc.FAULT_TYPE] == "rate_limit" and first[sc.FAULT_INJECTED] is True
    assert first[sc.HTTP_RESPONSE_STATUS_CODE] == 429 and first[sc.RETRY_AFTER] == 0.4
    assert second[sc.MODEL_CALL] == 2 and sc.FAULT_TYPE not in second
    trace = Trace.from_spans(cap.spans)
    results = {r.name: r for r in run_checks(trace, ["honors_retry_after", "bounded_model_retries"])}
    assert results["honors_retry_after"].passed, results["honors_retry_after"].message
    assert results["bounded_model_retries"].passed


def test_openai_sdk_without_retries_sees_the_rate_limit_error_body(provider: tuple[Provider, str]) -> None:
    openai = pytest.importorskip("openai")
    _, up = provider
    plan = {"faults": [{"type": "rate_limit", "target": "model", "retry_after": 2}]}
    with serve(plan, upstream=up) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(**OPENAI_REQ)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.code == "rate_limit_exceeded"


def test_overloaded_is_529_for_anthropic_and_503_for_openai(provider: tuple[Provider, str]) -> None:
    _, up = provider
    plan = {"faults": [{"type": "overloaded", "on_call": [1]}]}
    with serve(plan, upstream=up) as url:
        a = httpx.post(url + "/v1/messages", json=ANTHROPIC_REQ, timeout=10)
        o = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10)
    assert a.status_code == 529 and a.json()["error"]["type"] == "overloaded_error" and a.json()["type"] == "error"
    assert o.status_code == 503 and o.json()["error"]["type"] == "server_error"


def test_anthropic_sdk_retries_529s_and_the_spans_show_each_attempt(provider: tuple[Provider, str]) -> None:
    anthropic = pytest.importorskip("anthropic")
    prov, up = provider
    plan = {"faults": [{"type": "overloaded", "model": "claude-*", "on_call": [1, 2]}]}
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url:
            client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=2)
            reply = client.messages.create(**ANTHROPIC_REQ)
        ep.finish(reply.content[0].text)
    assert reply.content[0].text == "".join(TEXT_PIECES)
    assert len(prov.requests) == 1
    spans = chat_spans(cap)
    assert [s[sc.MODEL_CALL] for s in spans] == [1, 2, 3]
    assert [s.get(sc.HTTP_RESPONSE_STATUS_CODE) for s in spans] == [529, 529, 200]
    assert [s.get(sc.FAULT_TYPE) for s in spans] == ["overloaded", "overloaded", None]
    assert spans[2][sc.GEN_AI_USAGE_INPUT_TOKENS] == 25 and spans[2][sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 12


# -- streams cut at after_chunks ----------------------------------------------------------------------------


def test_openai_stream_cut_after_chunks_shows_the_partial_answer_then_the_error(provider: tuple[Provider, str]) -> None:
    openai = pytest.importorskip("openai")
    _, up = provider
    plan = {"faults": [{"type": "overloaded", "target": "model", "after_chunks": 3}]}
    seen: list[str] = []
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=2)
            with pytest.raises(openai.APIError) as caught:
                for chunk in client.chat.completions.create(**OPENAI_REQ, stream=True):
                    seen.append(chunk.choices[0].delta.content or "")
        ep.finish("cut")
    assert "".join(seen) == "".join(TEXT_PIECES[:2])  # the role chunk and two text chunks
    assert "overloaded" in str(caught.value)
    (span,) = chat_spans(cap)  # a stream that started is never retried by the SDK
    assert span[sc.FAULT_AFTER_CHUNKS] == 3 and span[sc.FAULT_INJECTED] is True
    assert span[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)


def test_anthropic_stream_cut_ends_with_the_providers_error_event(provider: tuple[Provider, str]) -> None:
    anthropic = pytest.importorskip("anthropic")
    _, up = provider
    plan = {"faults": [{"type": "overloaded", "target": "model", "after_chunks": 4}]}
    seen: list[str] = []
    with serve(plan, upstream=up) as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as caught:
            with client.messages.stream(**ANTHROPIC_REQ) as stream:
                for text in stream.text_stream:
                    seen.append(text)
    # message_start, ping, content_block_start, one text delta: then the error event
    assert seen == TEXT_PIECES[:1]
    assert "overloaded_error" in str(caught.value)


def test_a_timeout_after_chunks_stalls_then_cuts_the_connection(provider: tuple[Provider, str]) -> None:
    _, up = provider
    plan = {"faults": [{"type": "timeout", "target": "model", "after_chunks": 2, "after_s": 0.3}]}
    got = b""
    with serve(plan, upstream=up) as url:
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError):
            with httpx.stream("POST", url + "/v1/chat/completions", json={**OPENAI_REQ, "stream": True}) as resp:
                for chunk in resp.iter_raw():
                    got += chunk
        waited = time.monotonic() - started
    assert got == b"".join(openai_events("gpt-4o-mini", False, False)[:2])
    assert waited >= 0.3


def test_after_chunks_on_a_whole_answer_fails_the_call_before_it(provider: tuple[Provider, str]) -> None:
    prov, up = provider
    plan = {"faults": [{"type": "rate_limit", "target": "model", "after_chunks": 2, "retry_after": 1}]}
    with serve(plan, upstream=up) as url:
        resp = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10)
    assert resp.status_code == 429 and resp.headers["retry-after"] == "1" and not prov.requests


def test_after_chunks_is_refused_on_tool_faults_and_completion_faults() -> None:
    for fault in ({"type": "http", "tool": "search", "after_chunks": 2}, {"type": "truncated", "after_chunks": 2}):
        with pytest.raises(PlanError, match="after_chunks"):
            chaoskit.Plan.from_dict({"faults": [fault]})


# -- completion faults, whole and streamed --------------------------------------------------------------------


def test_openai_completion_faults_rewrite_the_answer_as_openai_sends_it(provider: tuple[Provider, str]) -> None:
    openai = pytest.importorskip("openai")
    _, up = provider
    plan = {
        "faults": [
            {"type": "empty_completion", "on_call": [1]},
            {"type": "truncated", "on_call": [2], "keep": 0.5},
            {"type": "malformed_tool_call", "on_call": [3]},
            {"type": "unknown_tool_call", "on_call": [4]},
            {"type": "refusal", "on_call": [5]},
        ]
    }
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
            empty = client.chat.completions.create(**OPENAI_REQ).choices[0]
            cut = client.chat.completions.create(**OPENAI_REQ).choices[0]
            broken = client.chat.completions.create(**OPENAI_REQ, tools=[WEATHER_TOOL]).choices[0]
            unknown = client.chat.completions.create(**OPENAI_REQ, tools=[WEATHER_TOOL]).choices[0]
            refused = client.chat.completions.create(**OPENAI_REQ).choices[0]
        ep.finish("done")
    assert empty.message.content == "" and empty.finish_reason == "stop" and not empty.message.tool_calls
    full = "".join(TEXT_PIECES)
    assert cut.finish_reason == "length" and cut.message.content == full[: len(full) // 2]
    (bad,) = broken.message.tool_calls or []
    assert bad.function.name == "get_weather" and broken.finish_reason == "tool_calls"
    with pytest.raises(ValueError):
        json.loads(bad.function.arguments)
    assert unknown.message.tool_calls and unknown.message.tool_calls[0].function.name == "lookup_internal_records"
    assert refused.message.refusal and refused.message.content is None
    spans = chat_spans(cap)
    assert [s[sc.FAULT_TYPE] for s in spans] == [
        "empty_completion",
        "truncated",
        "malformed_tool_call",
        "unknown_tool_call",
        "refusal",
    ]
    assert spans[1][sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("length",)


def test_streamed_completion_faults_come_as_a_fresh_stream_of_the_providers_events(
    provider: tuple[Provider, str],
) -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    _, up = provider
    plan = {"faults": [{"type": "malformed_tool_call", "model": "*"}]}
    with serve(plan, upstream=up) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        args = ""
        for chunk in oa.chat.completions.create(**OPENAI_REQ, tools=[WEATHER_TOOL], stream=True):
            for tc in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
                args += tc.function.arguments or "" if tc.function else ""
        an = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        with an.messages.stream(**ANTHROPIC_REQ, tools=[ANTHROPIC_TOOL]) as stream:
            partial = "".join(
                e.partial_json for e in stream if e.type == "input_json" or getattr(e, "partial_json", None)
            )
    for text in (args, partial):
        assert text and text.startswith('{"city"')
        with pytest.raises(ValueError):
            json.loads(text)


def test_a_truncated_stream_finishes_by_length_with_the_first_part_of_the_text(provider: tuple[Provider, str]) -> None:
    anthropic = pytest.importorskip("anthropic")
    _, up = provider
    plan = {"faults": [{"type": "truncated", "keep": 0.25}]}
    with serve(plan, upstream=up) as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        with client.messages.stream(**ANTHROPIC_REQ) as stream:
            final = stream.get_final_message()
    full = "".join(TEXT_PIECES)
    assert final.stop_reason == "max_tokens" and final.content[0].text == full[: int(len(full) * 0.25)]
    assert final.usage.output_tokens == 12 and final.id == "msg_01abc"


def test_a_malformed_tool_call_on_a_text_answer_is_skipped_with_a_warning(provider: tuple[Provider, str]) -> None:
    _, up = provider
    plan = {"faults": [{"type": "malformed_tool_call"}]}
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url, pytest.warns(chaoskit.ChaosWarning, match="calls no tool"):
            direct = httpx.post(up + "/v1/chat/completions", json=OPENAI_REQ, timeout=10).content
            proxied = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10).content
        ep.finish("done")
    assert proxied == direct
    (span,) = chat_spans(cap)
    assert span[sc.FAULT_SKIPPED] == "malformed_tool_call" and sc.FAULT_TYPE not in span


def test_a_route_the_plan_names_as_a_tool_stays_a_tool(provider: tuple[Provider, str]) -> None:
    _, up = provider
    plan = {"faults": [{"type": "http", "tool": "POST /v1/chat/completions", "status": 500}]}
    with telemetry.capture() as cap, serve(plan, upstream=up) as url:
        resp = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10)
    assert resp.status_code == 500
    assert [dict(s.attributes or {})[sc.GEN_AI_TOOL_NAME] for s in cap.attempt_spans()] == ["POST /v1/chat/completions"]


def test_a_compressed_stream_is_passed_whole_and_its_cut_skipped_with_a_warning(provider: tuple[Provider, str]) -> None:
    _, up = provider
    plan = {"faults": [{"type": "overloaded", "target": "model", "after_chunks": 2}]}
    with serve(plan, upstream=up) as url, pytest.warns(chaoskit.ChaosWarning, match="compressed"):
        with httpx.stream(
            "POST", url + "/v1/chat/completions", json={**OPENAI_REQ, "stream": True, "x_gzip": True}
        ) as r:
            got = b"".join(r.iter_bytes())
    assert got == b"".join(openai_events("gpt-4o-mini", False, False))


def test_a_model_request_past_the_read_limit_is_refused_as_the_provider_would(
    provider: tuple[Provider, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaoskit_http import _llmcall

    prov, up = provider
    monkeypatch.setattr(_llmcall, "MAX_REQUEST", 100 * 1024)
    big = {**ANTHROPIC_REQ, "messages": [{"role": "user", "content": "x" * 200 * 1024}]}
    with serve({"faults": []}, upstream=up) as url:
        resp = httpx.post(url + "/v1/messages", json=big, timeout=10)
    assert resp.status_code == 413 and resp.json()["error"]["type"] == "request_too_large"
    assert not prov.requests


def test_a_whole_anthropic_answer_keeps_its_json_tool_input_and_the_fault_is_skipped(
    provider: tuple[Provider, str],
) -> None:
    _, up = provider
    body = {**ANTHROPIC_REQ, "tools": [ANTHROPIC_TOOL]}
    plan = {"faults": [{"type": "malformed_tool_call"}]}
    direct = httpx.post(up + "/v1/messages", json=body, timeout=10).content
    with serve(plan, upstream=up) as url, pytest.warns(chaoskit.ChaosWarning, match="input_json_delta"):
        proxied = httpx.post(url + "/v1/messages", json=body, timeout=10).content
    assert proxied == direct


def test_timeout_holds_then_504_and_latency_delays_an_unchanged_answer(provider: tuple[Provider, str]) -> None:
    prov, up = provider
    plan = {
        "faults": [
            {"type": "timeout", "target": "model", "on_call": 1, "after_s": 0.3},
            {"type": "latency", "target": "model", "on_call": 2, "delay_s": 0.3},
        ]
    }
    direct = httpx.post(up + "/v1/chat/completions", json=OPENAI_REQ, timeout=10).content
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=up) as url:
            started = time.monotonic()
            timed_out = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10)
            held = time.monotonic() - started
            started = time.monotonic()
            late = httpx.post(url + "/v1/chat/completions", json=OPENAI_REQ, timeout=10)
            delayed = time.monotonic() - started
        ep.finish("done")
    assert timed_out.status_code == 504 and timed_out.json()["error"]["type"] == "server_error" and held >= 0.3
    assert late.status_code == 200 and late.content == direct and delayed >= 0.3
    assert len(prov.requests) == 2  # the direct call and the delayed one; the timed-out call never left
    first, second = chat_spans(cap)
    assert first[sc.FAULT_TYPE] == "timeout" and first[sc.ERROR_TYPE] == "ModelTimeout"
    assert second[sc.FAULT_TYPE] == "latency" and sc.ERROR_TYPE not in second


def test_a_dead_upstream_is_a_502_in_the_providers_format_and_a_completion_fault_is_skipped() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    plan = {"faults": [{"type": "truncated"}]}
    with telemetry.capture() as cap, chaoskit.episode("agent", plan=plan) as ep:
        with serve(plan, upstream=dead) as url, pytest.warns(chaoskit.ChaosWarning, match="could not be reached"):
            resp = httpx.post(url + "/v1/messages", json=ANTHROPIC_REQ, timeout=10)
        ep.finish("down")
    assert resp.status_code == 502 and resp.json()["error"]["type"] == "api_error"
    (span,) = chat_spans(cap)
    assert span[sc.FAULT_SKIPPED] == "truncated" and sc.FAULT_TYPE not in span
    assert span[sc.HTTP_RESPONSE_STATUS_CODE] == 502 and span[sc.ERROR_TYPE] == "ModelHTTPError"


def test_a_standalone_proxy_run_as_one_episode_records_its_model_calls_for_check(
    provider: tuple[Provider, str], tmp_path: Any
) -> None:
    """``chaoskit http-proxy --episode NAME``: an agent in any language, graded from the spans file alone."""
    openai = pytest.importorskip("openai")
    from chaoskit_http import ProxyServer

    _, up = provider
    traces = tmp_path / "spans.jsonl"
    plan = {"faults": [{"type": "rate_limit", "target": "model", "on_call": 1, "retry_after": 0.3}]}
    with ProxyServer(plan, upstream=up, traces=traces, episode="any-language-agent") as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=2)
        streamed = client.chat.completions.create(**OPENAI_REQ, stream=True, stream_options={"include_usage": True})
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "".join(TEXT_PIECES)
        client.chat.completions.create(**OPENAI_REQ)
    trace = Trace.load(traces)
    (ep,) = trace.episodes
    assert ep.name == "any-language-agent"
    calls = json.loads(ep.attributes["chaoskit.episode.model_calls"])
    assert [(c["call"], c["outcome"], c.get("fault"), c.get("output_tokens")) for c in calls] == [
        (1, "error", "rate_limit", None),
        (2, "ok", None, 9),  # the retried stream, its usage read along the way
        (3, "ok", None, 9),
    ]
    results = {r.name: r for r in run_checks(trace, ["honors_retry_after", "bounded_model_retries"])}
    assert results["honors_retry_after"].passed and results["bounded_model_retries"].passed


def test_without_an_episode_a_standalone_proxy_faults_model_calls_but_records_none(
    provider: tuple[Provider, str], tmp_path: Any
) -> None:
    from chaoskit_http import ProxyServer

    _, up = provider
    traces = tmp_path / "spans.jsonl"
    plan = {"faults": [{"type": "overloaded", "target": "model", "on_call": 1}]}
    with ProxyServer(plan, upstream=up, traces=traces) as url:
        assert httpx.post(url + "/v1/messages", json=ANTHROPIC_REQ, timeout=10).status_code == 529
        assert httpx.post(url + "/v1/messages", json=ANTHROPIC_REQ, timeout=10).status_code == 200
    assert not traces.exists() or "chat " not in traces.read_text()


def test_the_command_with_episode_writes_the_episode_on_sigterm(provider: tuple[Provider, str], tmp_path: Any) -> None:
    import signal
    import subprocess
    import sys

    _, up = provider
    plan, ready, traces = tmp_path / "plan.yaml", tmp_path / "url", tmp_path / "spans.jsonl"
    plan.write_text("faults:\n  - {type: overloaded, target: model, on_call: 1}\n")
    argv = [sys.executable, "-m", "chaoskit", "http-proxy", "--plan", str(plan), "--upstream", up, "--listen"]
    argv += ["127.0.0.1:0", "--ready-file", str(ready), "--traces", str(traces), "--episode", "cli-agent"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.05)
        url = ready.read_text().strip()
        codes = [httpx.post(url + "/v1/messages", json=ANTHROPIC_REQ, timeout=10).status_code for _ in range(2)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    assert codes == [529, 200] and proc.returncode == 0
    (ep,) = Trace.load(traces).episodes
    calls = json.loads(ep.attributes["chaoskit.episode.model_calls"])
    assert ep.name == "cli-agent" and [c.get("fault") for c in calls] == ["overloaded", None]
