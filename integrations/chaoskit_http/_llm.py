"""Model providers on the wire: OpenAI ``/chat/completions`` and Anthropic ``/v1/messages``, whole and streamed.

What the proxy needs of a provider's format, and nothing more: the error a provider answers with (status,
``Retry-After``, its JSON error body, or the error event of a stream), a completion read into chaoskit's plain
:class:`~chaoskit.engine.Completion` and written back (a JSON body, or a fresh stream of server-sent events
shaped as the provider sends them), the usage the provider reported, and the events of a stream split apart
byte for byte (so that a stream passed through or cut after ``N`` events is the upstream's own bytes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoskit import ModelHTTPError
from chaoskit.engine import Completion

__all__ = [
    "ANTHROPIC",
    "OPENAI",
    "EventSplitter",
    "StreamReader",
    "error_event",
    "error_response",
    "parse_event",
    "provider_of",
    "read_json",
    "usage_of",
    "write_json",
    "write_stream",
]

OPENAI = "openai"
ANTHROPIC = "anthropic"
_JSON = (b"content-type", b"application/json")

# a provider's error type by HTTP status (the body's error.type; OpenAI also sets error.code)
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
# chaoskit's finish reasons (fault_completion's) and Anthropic's stop reasons, both ways
_TO_ANTHROPIC = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "refusal": "refusal"}
_FROM_ANTHROPIC = {v: k for k, v in _TO_ANTHROPIC.items()}


def provider_of(method: str, path: str) -> str | None:
    """The provider whose model endpoint ``method path`` is (``POST .../chat/completions``, ``POST
    .../v1/messages``), None for any other request."""
    if method != "POST":
        return None
    if path.endswith("/chat/completions"):
        return OPENAI
    if path.endswith("/v1/messages"):
        return ANTHROPIC
    return None


def _error_body(provider: str, status: int, message: str) -> dict[str, Any]:
    if provider == ANTHROPIC:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _status_of(exc: BaseException) -> int:
    return exc.status if isinstance(exc, ModelHTTPError) else 504


def error_response(provider: str, exc: BaseException) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The HTTP answer a provider gives for chaoskit's model error ``exc`` (a :class:`ModelHTTPError` or
    :class:`ModelTimeout`): its status, ``Retry-After`` when it asks to wait, and the provider's JSON error body."""
    status = _status_of(exc)
    headers = [_JSON]
    retry_after = exc.retry_after if isinstance(exc, ModelHTTPError) else None
    if retry_after is not None:
        headers.append((b"retry-after", f"{retry_after:g}".encode()))
    message = exc.message if isinstance(exc, ModelHTTPError) else str(exc)
    return status, headers, json.dumps(_error_body(provider, status, message)).encode()


def error_event(provider: str, exc: BaseException) -> bytes:
    """The server-sent event a provider ends a stream with when it fails midway (Anthropic's ``event: error``,
    an OpenAI chunk holding ``error``): what the SDKs raise from while reading a stream."""
    message = exc.message if isinstance(exc, ModelHTTPError) else str(exc)
    body = _error_body(provider, _status_of(exc), message)
    data = json.dumps(body).encode()
    return b"event: error\ndata: " + data + b"\n\n" if provider == ANTHROPIC else b"data: " + data + b"\n\n"


def usage_of(provider: str, doc: Any) -> tuple[int | None, int | None]:
    """The (input, output) tokens a whole answer reports (None where it reports none)."""
    usage = doc.get("usage") if isinstance(doc, Mapping) else None
    if not isinstance(usage, Mapping):
        return None, None
    keys = ("input_tokens", "output_tokens") if provider == ANTHROPIC else ("prompt_tokens", "completion_tokens")
    return _count(usage.get(keys[0])), _count(usage.get(keys[1]))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _args(text: Any) -> Any:
    """Tool call arguments as sent (JSON text): parsed when they parse, else the text itself."""
    if not isinstance(text, str):
        return text if text is not None else {}
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)


# -- whole answers (JSON) ---------------------------------------------------------------------------------------


def read_json(provider: str, doc: Any) -> Completion | None:
    """A whole answer as a :class:`Completion` (None when it is not a completion chaoskit can read)."""
    if not isinstance(doc, Mapping):
        return None
    if provider == ANTHROPIC:
        blocks = doc.get("content")
        if not isinstance(blocks, list):
            return None
        text = "".join(str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text")
        calls = [
            {"name": b.get("name"), "args": b.get("input"), "id": b.get("id")}
            for b in blocks
            if isinstance(b, Mapping) and b.get("type") == "tool_use"
        ]
        finish = _FROM_ANTHROPIC.get(str(doc.get("stop_reason")), str(doc.get("stop_reason") or "stop"))
        return Completion(text, calls, [], finish)
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        return None
    calls = [
        {"name": c["function"].get("name"), "args": _args(c["function"].get("arguments")), "id": c.get("id")}
        for c in message.get("tool_calls") or ()
        if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)
    ]
    return Completion(str(message.get("content") or ""), calls, [], str(choices[0].get("finish_reason") or "stop"))


def write_json(provider: str, doc: dict[str, Any], out: Completion) -> dict[str, Any]:
    """``doc`` (a whole answer) with its completion replaced by ``out``, every other field as it came."""
    doc = dict(doc)
    if provider == ANTHROPIC:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": out.text}] if out.text else []
        blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in out.tool_calls]
        doc["content"] = blocks
        doc["stop_reason"] = _TO_ANTHROPIC.get(out.finish_reason, out.finish_reason)
        return doc
    choice = dict(doc["choices"][0])
    message = {k: v for k, v in choice["message"].items() if k not in ("tool_calls", "refusal")}
    message["content"] = out.text
    calls = _openai_calls(out)
    if calls:
        message["tool_calls"] = calls
    if out.finish_reason == "refusal":
        # OpenAI says a refusal in its own field, with no content, and finishes as "stop"
        message["content"], message["refusal"] = None, out.text
    choice["message"] = message
    choice["finish_reason"] = "stop" if out.finish_reason == "refusal" else out.finish_reason
    doc["choices"] = [choice, *doc["choices"][1:]]
    return doc


def _openai_calls(out: Completion) -> list[dict[str, Any]]:
    return [
        {"id": c.get("id"), "type": "function", "function": {"name": c["name"], "arguments": _args_text(c["args"])}}
        for c in [*out.tool_calls, *out.invalid_tool_calls]
    ]


# -- streams (server-sent events) -----------------------------------------------------------------------------


class EventSplitter:
    """Splits a stream of bytes into its server-sent events, each as the exact bytes it came as (the blank line
    that ends it included), however the bytes were chunked."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        """The events ``data`` completes."""
        buf = self._buf + data
        out: list[bytes] = []
        start = 0
        while True:
            ends = [(i, len(sep)) for sep in (b"\n\n", b"\r\n\r\n") if (i := buf.find(sep, start)) >= 0]
            if not ends:
                break
            i, n = min(ends)
            out.append(buf[start : i + n])
            start = i + n
        self._buf = buf[start:]
        return out

    @property
    def rest(self) -> bytes:
        """The bytes after the last complete event (a stream that ended without its blank line)."""
        return self._buf


def parse_event(raw: bytes) -> tuple[str | None, Any]:
    """An event's ``event:`` name and its ``data:`` parsed as JSON (the text where it is not JSON)."""
    name: str | None = None
    data: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    text = "\n".join(data)
    try:
        return name, json.loads(text)
    except ValueError:
        return name, text


@dataclass
class StreamReader:
    """What a provider's stream says, read event by event: the completion so far, usage, model and ids."""

    provider: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    head: dict[str, Any] = field(default_factory=dict)
    usage_chunk: bool = False
    events: int = 0

    def read(self, raw: bytes) -> None:
        """Take one event into account."""
        self.events += 1
        _, data = parse_event(raw)
        if not isinstance(data, Mapping):
            return
        if self.provider == ANTHROPIC:
            self._anthropic(data)
        else:
            self._openai(data)

    def _openai(self, data: Mapping[str, Any]) -> None:
        if not self.head:
            self.head = {k: data.get(k) for k in ("id", "model", "created", "system_fingerprint") if k in data}
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            self.usage_chunk = True
            self.input_tokens, self.output_tokens = usage_of(OPENAI, data)
        for choice in data.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            for tc in delta.get("tool_calls") or ():
                call = self.calls.setdefault(int(tc.get("index", 0)), {"name": "", "args": "", "id": None})
                call["id"] = tc.get("id") or call["id"]
                fn = tc.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["args"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])

    def _anthropic(self, data: Mapping[str, Any]) -> None:
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), Mapping):
            message = data["message"]
            self.head = {k: message.get(k) for k in ("id", "model")}
            self.input_tokens, self.output_tokens = usage_of(ANTHROPIC, message)
        elif kind == "content_block_start" and isinstance(data.get("content_block"), Mapping):
            block = data["content_block"]
            if block.get("type") == "tool_use":
                self.calls[int(data.get("index", 0))] = {"name": block.get("name"), "args": "", "id": block.get("id")}
            elif block.get("type") == "text" and block.get("text"):
                self.text.append(str(block["text"]))
        elif kind == "content_block_delta" and isinstance(data.get("delta"), Mapping):
            delta = data["delta"]
            if delta.get("type") == "text_delta":
                self.text.append(str(delta.get("text", "")))
            elif delta.get("type") == "input_json_delta" and int(data.get("index", 0)) in self.calls:
                self.calls[int(data.get("index", 0))]["args"] += str(delta.get("partial_json", ""))
        elif kind == "message_delta":
            stop = (data.get("delta") or {}).get("stop_reason")
            if stop:
                self.finish = _FROM_ANTHROPIC.get(str(stop), str(stop))
            out = _count((data.get("usage") or {}).get("output_tokens"))
            self.output_tokens = out if out is not None else self.output_tokens

    def completion(self) -> Completion:
        """The completion the stream carried."""
        calls = [{**c, "args": _args(c["args"])} for _, c in sorted(self.calls.items())]
        return Completion("".join(self.text), calls, [], self.finish or ("tool_calls" if calls else "stop"))


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def write_stream(reader: StreamReader, out: Completion) -> bytes:
    """A fresh stream carrying ``out``, in the provider's events, with the ids, model and usage of the stream
    ``reader`` read (what a provider would have streamed had it answered ``out``)."""
    if reader.provider == ANTHROPIC:
        return _anthropic_stream(reader, out)
    head = {**reader.head, "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    refusal = out.finish_reason == "refusal"
    parts = [chunk({"role": "assistant", "content": "" if not refusal else None})]
    if out.text:
        parts.append(chunk({"refusal": out.text} if refusal else {"content": out.text}))
    for i, c in enumerate(_openai_calls(out)):
        parts.append(chunk({"tool_calls": [{"index": i, **c}]}))
    parts.append(chunk({}, "stop" if refusal else out.finish_reason))
    if reader.usage_chunk:
        usage = {"prompt_tokens": reader.input_tokens, "completion_tokens": reader.output_tokens}
        usage["total_tokens"] = (reader.input_tokens or 0) + (reader.output_tokens or 0)
        parts.append(_sse({**head, "choices": [], "usage": usage}))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def _anthropic_stream(reader: StreamReader, out: Completion) -> bytes:
    message = {
        **reader.head,
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": reader.input_tokens or 0, "output_tokens": 1},
    }
    parts = [_sse({"type": "message_start", "message": message}, "message_start")]
    index = 0
    if out.text:
        parts.append(
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            )
        )
        delta = {"type": "text_delta", "text": out.text}
        parts.append(_sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"))
        parts.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    for i, c in enumerate([*out.tool_calls, *out.invalid_tool_calls], start=index):
        block = {"type": "tool_use", "id": c.get("id"), "name": c["name"], "input": {}}
        parts.append(_sse({"type": "content_block_start", "index": i, "content_block": block}, "content_block_start"))
        delta = {"type": "input_json_delta", "partial_json": _args_text(c["args"])}
        parts.append(_sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta"))
        parts.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    stop = {"stop_reason": _TO_ANTHROPIC.get(out.finish_reason, out.finish_reason), "stop_sequence": None}
    usage = {"output_tokens": reader.output_tokens or 0}
    parts.append(_sse({"type": "message_delta", "delta": stop, "usage": usage}, "message_delta"))
    parts.append(_sse({"type": "message_stop"}, "message_stop"))
    return b"".join(parts)
